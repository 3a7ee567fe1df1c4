"""Per-class average precision of each run against the annotations (when they are given), and
where the target's collapses: the class-id faults show as every class after some id scoring
nothing while the ones before it hold."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .matching import iou_matrix

RECALL_POINTS = np.linspace(0.0, 1.0, 101)      # COCO's 101-point interpolation


def average_precision(detections: pd.DataFrame, truth: pd.DataFrame, category: int, min_iou: float) -> float | None:
    """AP at ``min_iou`` of one class (None when the annotations hold no box of it): detections taken by
    falling score, each matched to the unmatched annotation it overlaps most in its image."""
    gt = truth[(truth["category"] == category) & ~truth["crowd"]]
    if gt.empty:
        return None
    dets = detections[detections["category"] == category].sort_values("score", ascending=False, kind="stable")
    if dets.empty:
        return 0.0
    gt_boxes = gt[["x1", "y1", "x2", "y2"]].to_numpy(float)
    gt_by_image = {image: gt_boxes[rows] for image, rows in gt.groupby("image").indices.items()}
    used = {image: np.zeros(len(boxes), dtype=bool) for image, boxes in gt_by_image.items()}
    hits = np.zeros(len(dets), dtype=bool)
    for k, (image, box) in enumerate(zip(dets["image"].tolist(), dets[["x1", "y1", "x2", "y2"]].to_numpy(float),
                                         strict=True)):
        boxes = gt_by_image.get(image)
        if boxes is None:
            continue
        ious = iou_matrix(box[None, :], boxes)[0]
        ious[used[image]] = -1.0
        best = int(np.argmax(ious))
        if ious[best] >= min_iou:
            used[image][best] = True
            hits[k] = True
    tp = np.cumsum(hits)
    recall = tp / len(gt)
    precision = tp / np.arange(1, len(dets) + 1)
    precision = np.maximum.accumulate(precision[::-1])[::-1]       # the precision envelope
    at = np.searchsorted(recall, RECALL_POINTS, side="left")
    sampled = np.where(at < len(precision), precision[np.minimum(at, len(precision) - 1)], 0.0)
    return float(sampled.mean())


def ap_facts(golden: pd.DataFrame, target: pd.DataFrame, truth: pd.DataFrame, min_iou: float,
             hold_ratio: float) -> tuple[dict[str, Any], list[tuple[int, float, float]]]:
    """The AP measurements and (class, golden AP, target AP) per annotated class, in id order.

    ``collapse_from`` is the smallest class id from which on every class the golden run detects
    (golden AP > 0) keeps less than ``hold_ratio`` of its golden AP on the target; the classes
    before it that hold are counted apart (the rules judge what makes a collapse)."""
    rows = []
    for category in sorted(set(truth["category"].tolist())):
        g = average_precision(golden, truth, category, min_iou)
        t = average_precision(target, truth, category, min_iou)
        if g is not None and t is not None:
            rows.append((int(category), g, t))
    out: dict[str, Any] = {"classes": len(rows), "min_iou": min_iou}
    if not rows:
        return out, rows
    out["golden_map"] = float(np.mean([g for _, g, _ in rows]))
    out["target_map"] = float(np.mean([t for _, _, t in rows]))
    detected = [(c, g, t) for c, g, t in rows if g > 0]
    held = [t >= hold_ratio * g for _, g, t in detected]
    start = len(held)
    while start > 0 and not held[start - 1]:
        start -= 1
    out["collapsed_classes"] = len(held) - start
    out["held_before"] = int(sum(held[:start]))
    out["classes_before"] = start
    if start < len(held):
        out["collapse_from"] = detected[start][0]
        out["collapse_golden_ap"] = float(np.mean([g for _, g, _ in detected[start:]]))
        out["collapse_target_ap"] = float(np.mean([t for _, _, t in detected[start:]]))
    return out, rows
