"""How the target's boxes relate to the golden ones: named mappings and a free affine fit.

Each named hypothesis predicts the target box from the golden box (both in original image pixels)
for one classic post-processing mistake; its *fit* is the median IoU of the prediction with the
target box it is paired with. The letterbox family needs each image's size and the network input
size; the others need nothing. Which fit is good enough, and by what margin over the identity, is
for the rules to judge (rules/post/geometry/).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .matching import pairwise_iou

# name -> needs the image and input sizes
HYPOTHESES: dict[str, bool] = {
    "identity": False,
    "letterbox_as_resize": True,     # letterboxed input, boxes scaled back as for a plain resize
    "resize_as_letterbox": True,     # plain-resized input, boxes un-letterboxed
    "letterbox_unmapped": True,      # boxes left in the letterboxed network input's pixels
    "resize_unmapped": True,         # boxes left in the resized network input's pixels
    "padding_not_removed": True,     # letterbox scale undone, its padding not subtracted
    "xy_swapped": False,             # x and y exchanged
    "xyxy_as_xywh": False,           # corners written where [x, y, width, height] is read
    "xywh_as_xyxy": False,           # [x, y, width, height] written where corners are read
    "cxcywh_as_xywh": False,         # the centre written where the top-left corner is read
}
LETTERBOX_FAMILY = tuple(name for name, sized in HYPOTHESES.items() if sized)


@dataclass(frozen=True)
class Letterbox:
    """An image of ``size`` (w, h) fitted into ``input_size`` (w, h) keeping its aspect: scale and padding."""

    scale: float
    pad_x: float
    pad_y: float
    stretch_x: float         # a plain resize's scale per axis
    stretch_y: float

    @classmethod
    def of(cls, size: tuple[float, float], input_size: tuple[float, float]) -> Letterbox:
        (w, h), (iw, ih) = size, input_size
        scale = min(iw / w, ih / h)
        return cls(scale, (iw - scale * w) / 2, (ih - scale * h) / 2, iw / w, ih / h)


def _affine(boxes: np.ndarray, ax: float, bx: float, ay: float, by: float) -> np.ndarray:
    return boxes * np.array([ax, ay, ax, ay]) + np.array([bx, by, bx, by])


def _mappers(lb: Letterbox | None) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    maps: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "identity": lambda g: g,
        "xy_swapped": lambda g: g[:, [1, 0, 3, 2]],
        "xyxy_as_xywh": lambda g: np.stack([g[:, 0], g[:, 1], g[:, 0] + g[:, 2], g[:, 1] + g[:, 3]], axis=1),
        "xywh_as_xyxy": lambda g: np.stack([g[:, 0], g[:, 1], g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]], axis=1),
        "cxcywh_as_xywh": lambda g: g + np.stack([(g[:, 2] - g[:, 0]) / 2, (g[:, 3] - g[:, 1]) / 2] * 2, axis=1),
    }
    if lb is not None:
        s, px, py, sx, sy = lb.scale, lb.pad_x, lb.pad_y, lb.stretch_x, lb.stretch_y
        maps.update({
            # net = s * g + pad; scaled back with 1/stretch
            "letterbox_as_resize": lambda g: _affine(g, s / sx, px / sx, s / sy, py / sy),
            # net = stretch * g; un-letterboxed with (net - pad) / s
            "resize_as_letterbox": lambda g: _affine(g, sx / s, -px / s, sy / s, -py / s),
            "letterbox_unmapped": lambda g: _affine(g, s, px, s, py),
            "resize_unmapped": lambda g: _affine(g, sx, 0.0, sy, 0.0),
            "padding_not_removed": lambda g: _affine(g, 1.0, px / s, 1.0, py / s),
        })
    return maps


def hypothesis_ious(golden: np.ndarray, target: np.ndarray, letterbox: Letterbox | None) -> dict[str, np.ndarray]:
    """Per hypothesis, the IoU of each predicted box with its paired target box (``golden[i]`` with ``target[i]``)."""
    return {name: pairwise_iou(mapper(golden), target) for name, mapper in _mappers(letterbox).items()}


def predict(name: str, golden: np.ndarray, letterbox: Letterbox | None) -> np.ndarray:
    """The target boxes hypothesis ``name`` predicts from ``golden``."""
    return _mappers(letterbox)[name](np.asarray(golden, dtype=float).reshape(-1, 4))


@dataclass(frozen=True)
class AffineFit:
    """target = a * golden + b per axis, fitted on paired corners by least squares."""

    ax: float
    bx: float
    ay: float
    by: float
    fit: float               # median IoU of the fitted prediction with the target boxes

    def apply(self, boxes: np.ndarray) -> np.ndarray:
        return _affine(np.asarray(boxes, dtype=float).reshape(-1, 4), self.ax, self.bx, self.ay, self.by)


def affine_fit(golden: np.ndarray, target: np.ndarray) -> AffineFit | None:
    """The per-axis affine map of paired boxes (None with fewer than 2 pairs or no spread)."""
    if len(golden) < 2:
        return None
    params = []
    for cols in ((0, 2), (1, 3)):
        g = golden[:, cols].ravel()
        t = target[:, cols].ravel()
        if np.ptp(g) <= 0:
            return None
        a, b = np.polyfit(g, t, 1)
        params += [float(a), float(b)]
    fit = AffineFit(params[0], params[1], params[2], params[3], 0.0)
    ious = pairwise_iou(fit.apply(golden), target)
    return AffineFit(fit.ax, fit.bx, fit.ay, fit.by, float(np.median(ious)))
