"""The report's exhibit of an ``advisor post`` run: one image (the measurement's focus image), its
boxes from both runs and the golden ones sent through the best mapping, and the tables behind them."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..detections import Detections
from .exhibit import Box, PostExhibit
from .geometry import HYPOTHESES, Letterbox, predict

MAX_BOXES = 30          # the highest-scoring boxes of each run drawn; more make the plot unreadable


def _boxes(frame: Any, rows: np.ndarray) -> tuple[Box, ...]:
    part = frame.iloc[rows]
    return tuple(Box(float(r.x1), float(r.y1), float(r.x2), float(r.y2), int(r.category), float(r.score))
                 for r in part.itertuples(index=False))


def _top(frame: Any, rows: np.ndarray) -> np.ndarray:
    scores = frame["score"].to_numpy(float)[rows]
    return rows[np.argsort(-scores, kind="stable")[:MAX_BOXES]]


def exhibit_for(image: str | None, golden: Detections, target: Detections, mg: np.ndarray, mt: np.ndarray,
                sizes: dict[str, tuple[float, float]], letterboxes: dict[str, Letterbox | None], best: str,
                fits: dict[str, float], box_map: dict[str, Any], class_pairs: Counter,
                ap_rows: list[tuple[int, float, float]], categories: dict[int, str]) -> PostExhibit | None:
    g, t = golden.frame, target.frame
    if not len(g) and not len(t):
        return None
    if image is None:           # no image with two pairs: the one with the most detections
        counts = g["image"].value_counts() if len(g) else t["image"].value_counts()
        image = str(counts.index[0])
    g_rows = _top(g, np.flatnonzero((g["image"] == image).to_numpy()))
    t_rows = _top(t, np.flatnonzero((t["image"] == image).to_numpy()))
    g_pos = {int(r): k for k, r in enumerate(g_rows)}
    t_pos = {int(r): k for k, r in enumerate(t_rows)}
    pairs = tuple((g_pos[int(a)], t_pos[int(b)]) for a, b in zip(mg, mt, strict=True)
                  if int(a) in g_pos and int(b) in t_pos)
    letterbox = letterboxes.get(image)
    mapping = best if not HYPOTHESES[best] or letterbox is not None else "identity"
    gb = g[["x1", "y1", "x2", "y2"]].to_numpy(float)[g_rows]
    mapped_boxes = predict(mapping, gb, letterbox) if len(gb) else np.zeros((0, 4))
    mapped = tuple(Box(*map(float, b), c.category, c.score) for b, c in zip(mapped_boxes, _boxes(g, g_rows),
                                                                             strict=True))
    golden_boxes, target_boxes = _boxes(g, g_rows), _boxes(t, t_rows)
    size = sizes.get(image)
    if size is None:
        everything = [b for b in (*golden_boxes, *target_boxes, *mapped)]
        size = (max([b.x2 for b in everything] + [1.0]), max([b.y2 for b in everything] + [1.0]))
    affine = None
    if "ax" in box_map and box_map.get("affine_image") == image:
        affine = (box_map["ax"], box_map["bx"], box_map["ay"], box_map["by"])
    return PostExhibit(
        image=image, width=float(size[0]), height=float(size[1]), size_known=image in sizes,
        golden=golden_boxes, target=target_boxes, pairs=pairs, mapping=mapping, mapped=mapped,
        fits=tuple(sorted(fits.items(), key=lambda kv: -kv[1])), affine=affine,
        affine_fit=box_map.get("affine_fit") if affine else None,
        class_pairs=tuple((a, b, n) for (a, b), n in class_pairs.most_common(12)),
        class_ap=tuple(ap_rows), categories=dict(categories))
