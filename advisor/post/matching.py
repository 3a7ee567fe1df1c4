"""Which golden detection is which target detection: by identical scores, or by overlap.

Two runs whose raw head outputs agree give their detections the same scores, whatever the
post-processing did to the boxes and class ids afterwards, so pairing equal scores finds the
correspondence without assuming anything about the geometry. When the scores differ (the networks
themselves drift), boxes are paired by overlap once the geometry has been accounted for.
"""

from __future__ import annotations

import numpy as np


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n, m) intersection over union of corner boxes ``a`` (n, 4) and ``b`` (m, 4); 0 for empty boxes."""
    a = np.asarray(a, dtype=float).reshape(-1, 4)
    b = np.asarray(b, dtype=float).reshape(-1, 4)
    width = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    height = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(width, 0, None) * np.clip(height, 0, None)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / union, 0.0)
    return out


def pairwise_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of ``a[i]`` with ``b[i]`` (same length)."""
    a = np.asarray(a, dtype=float).reshape(-1, 4)
    b = np.asarray(b, dtype=float).reshape(-1, 4)
    width = np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0])
    height = np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1])
    inter = np.clip(width, 0, None) * np.clip(height, 0, None)
    area_a = np.clip(a[:, 2] - a[:, 0], 0, None) * np.clip(a[:, 3] - a[:, 1], 0, None)
    area_b = np.clip(b[:, 2] - b[:, 0], 0, None) * np.clip(b[:, 3] - b[:, 1], 0, None)
    union = area_a + area_b - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def pair_by_score(golden: np.ndarray, target: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (golden, target) of equal scores (``|a - b| <= tolerance * max(1, |a|)``), each
    detection used once, walking both lists from the highest score down."""
    g_order = np.argsort(-np.asarray(golden, dtype=float), kind="stable")
    t_order = np.argsort(-np.asarray(target, dtype=float), kind="stable")
    gs, ts = np.asarray(golden, dtype=float)[g_order], np.asarray(target, dtype=float)[t_order]
    i = j = 0
    pairs_g: list[int] = []
    pairs_t: list[int] = []
    while i < len(gs) and j < len(ts):
        if abs(gs[i] - ts[j]) <= tolerance * max(1.0, abs(gs[i])):
            pairs_g.append(int(g_order[i]))
            pairs_t.append(int(t_order[j]))
            i += 1
            j += 1
        elif gs[i] > ts[j]:
            i += 1
        else:
            j += 1
    return np.array(pairs_g, dtype=np.int64), np.array(pairs_t, dtype=np.int64)


def greedy_match(iou: np.ndarray, min_iou: float) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs taking the largest overlap first, each box used once, overlaps below ``min_iou`` left."""
    if iou.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    rows, cols = np.nonzero(iou >= min_iou)
    order = np.argsort(-iou[rows, cols], kind="stable")
    used_r: set[int] = set()
    used_c: set[int] = set()
    out_r: list[int] = []
    out_c: list[int] = []
    for k in order:
        r, c = int(rows[k]), int(cols[k])
        if r in used_r or c in used_c:
            continue
        used_r.add(r)
        used_c.add(c)
        out_r.append(r)
        out_c.append(c)
    return np.array(out_r, dtype=np.int64), np.array(out_c, dtype=np.int64)
