"""What the target's decode, score threshold and NMS kept against the golden run's, measured on the
detections each run kept and the pairs between them. Which gap names a threshold or NMS difference
is the rules' call (rules/post/selection/)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .matching import iou_matrix, pairwise_iou


def groups(frame: pd.DataFrame, same_class: bool = True) -> list[np.ndarray]:
    """Row positions of each image's (and class's) detections: one grouping, numpy from there on."""
    keys = ["image", "category"] if same_class else ["image"]
    return [np.asarray(rows) for rows in frame.groupby(keys, sort=False).indices.values()]


def max_overlap(frame: pd.DataFrame, same_class: bool = True) -> float:
    """The largest IoU between two detections of one image (of one class when ``same_class``): what a
    run's NMS let through, so its IoU threshold is above it."""
    boxes = frame[["x1", "y1", "x2", "y2"]].to_numpy(float)
    best = 0.0
    for rows in groups(frame, same_class):
        if len(rows) < 2:
            continue
        iou = iou_matrix(boxes[rows], boxes[rows])
        np.fill_diagonal(iou, 0.0)
        best = max(best, float(iou.max()))
    return best


def overlapping_unmatched(frame: pd.DataFrame, unmatched: np.ndarray, matched: np.ndarray, limit: float,
                          min_score: float, same_class: bool = True) -> int:
    """How many unmatched detections scoring at least ``min_score`` (the other run's lowest kept score:
    its threshold did not drop them) overlap a matched one of their image (and class) by more than
    ``limit`` (the other run's largest kept overlap): boxes one NMS removed and the other kept."""
    if not len(unmatched) or not len(matched):
        return 0
    boxes = frame[["x1", "y1", "x2", "y2"]].to_numpy(float)
    is_matched = np.zeros(len(frame), dtype=bool)
    is_matched[matched] = True
    candidate = np.zeros(len(frame), dtype=bool)
    candidate[unmatched] = True
    candidate &= frame["score"].to_numpy(float) >= min_score
    count = 0
    for rows in groups(frame, same_class):
        left, kept = rows[candidate[rows]], rows[is_matched[rows]]
        if len(left) and len(kept):
            count += int((iou_matrix(boxes[left], boxes[kept]).max(axis=1) > limit).sum())
    return count


def selection_facts(golden: pd.DataFrame, target: pd.DataFrame, g_idx: np.ndarray, t_idx: np.ndarray) -> dict[str, Any]:
    """Counts, scores and overlaps of what each run kept; ``g_idx[i]`` is paired with ``t_idx[i]``."""
    g_only = np.setdiff1d(np.arange(len(golden)), g_idx)
    t_only = np.setdiff1d(np.arange(len(target)), t_idx)
    out: dict[str, Any] = {
        "golden_count": len(golden), "target_count": len(target), "matched": len(g_idx),
        "golden_only": len(g_only), "target_only": len(t_only),
        "matched_share_golden": len(g_idx) / len(golden) if len(golden) else 1.0,
        "matched_share_target": len(t_idx) / len(target) if len(target) else 1.0,
    }
    g_scores, t_scores = golden["score"].to_numpy(float), target["score"].to_numpy(float)
    if len(golden):
        out["golden_min_score"] = float(g_scores.min())
    if len(target):
        out["target_min_score"] = float(t_scores.min())
    if len(g_only) and len(target):
        out["golden_only_max_score"] = float(g_scores[g_only].max())
        out["golden_only_below_target_min"] = float(np.mean(g_scores[g_only] < t_scores.min()))
    if len(t_only) and len(golden):
        out["target_only_max_score"] = float(t_scores[t_only].max())
        out["target_only_below_golden_min"] = float(np.mean(t_scores[t_only] < g_scores.min()))
    for side in ("golden", "target"):
        frame = golden if side == "golden" else target
        out[f"{side}_max_overlap"] = max_overlap(frame)
        out[f"{side}_max_overlap_any_class"] = max_overlap(frame, same_class=False)
    # Each gap is given from both sides (rules compare with positive limits): what one run lets through
    # beyond the other.
    for side, other in (("golden", "target"), ("target", "golden")):
        out[f"{side}_overlap_gap"] = out[f"{side}_max_overlap"] - out[f"{other}_max_overlap"]
        out[f"{side}_overlap_gap_any_class"] = (out[f"{side}_max_overlap_any_class"]
                                                - out[f"{other}_max_overlap_any_class"])
    t_min = float(t_scores.min()) if len(target) else 0.0
    g_min = float(g_scores.min()) if len(golden) else 0.0
    if len(golden) and len(target):
        out["target_score_floor_gap"] = t_min - g_min
        out["golden_score_floor_gap"] = g_min - t_min
    for same, suffix in ((True, ""), (False, "_any_class")):
        out[f"golden_only_overlapping{suffix}"] = overlapping_unmatched(
            golden, g_only, g_idx, out[f"target_max_overlap{suffix}"], t_min, same_class=same)
        out[f"target_only_overlapping{suffix}"] = overlapping_unmatched(
            target, t_only, t_idx, out[f"golden_max_overlap{suffix}"], g_min, same_class=same)
    return out


def decode_facts(predicted: np.ndarray, target: np.ndarray) -> dict[str, Any]:
    """How far the paired target boxes sit from where the best mapping puts the golden ones: IoU,
    size ratio (sqrt of the area ratio) and centre shift (in golden box diagonals), medians."""
    if not len(predicted):
        return {}
    iou = pairwise_iou(predicted, target)
    area = lambda b: np.clip(b[:, 2] - b[:, 0], 1e-9, None) * np.clip(b[:, 3] - b[:, 1], 1e-9, None)  # noqa: E731
    ratio = np.sqrt(area(target) / area(predicted))
    centre = lambda b: np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2], axis=1)  # noqa: E731
    diagonal = np.hypot(predicted[:, 2] - predicted[:, 0], predicted[:, 3] - predicted[:, 1])
    shift = np.linalg.norm(centre(target) - centre(predicted), axis=1) / np.clip(diagonal, 1e-9, None)
    return {"paired_iou": float(np.median(iou)), "paired_iou_low": float(np.percentile(iou, 10)),
            "size_ratio": float(np.median(ratio)), "centre_shift": float(np.median(shift))}
