"""``advisor tensor``: statistics, FP16 range usage and a histogram of one tensor; text export."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..dtypes import FP16_MAX
from .common import jsonable

FP16_MIN_NORMAL = 6.103515625e-05       # 2**-14: below it FP16 loses precision (subnormal)
FP16_MIN_SUBNORMAL = 5.960464477539063e-08   # 2**-24: below half of it FP16 flushes to zero


@dataclass
class Histogram:
    edges: list[float]          # bins + 1 edges over the finite values
    counts: list[int]


@dataclass
class TensorSummary:
    shape: list[int]
    dtype: str
    size: int
    min: float = float("nan")
    max: float = float("nan")
    mean: float = float("nan")
    std: float = float("nan")
    abs_max: float = float("nan")
    zeros: int = 0
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    fp16: dict[str, Any] = field(default_factory=dict)
    histogram: Histogram | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return jsonable(asdict(self))


def summarise_tensor(array: np.ndarray, *, bins: int = 20, source: str | None = None) -> TensorSummary:
    """Everything ``advisor tensor`` prints about ``array`` (statistics over the finite values)."""
    array = np.asarray(array)
    values = array.astype(np.float64, copy=False).reshape(-1)
    finite = values[np.isfinite(values)]
    summary = TensorSummary(shape=list(array.shape), dtype=array.dtype.name, size=int(array.size),
                            nan=int(np.isnan(values).sum()), posinf=int(np.isposinf(values).sum()),
                            neginf=int(np.isneginf(values).sum()), zeros=int((values == 0).sum()), source=source)
    if finite.size:
        summary.min, summary.max = float(finite.min()), float(finite.max())
        summary.mean, summary.std = float(finite.mean()), float(finite.std())
        summary.abs_max = float(np.abs(finite).max())
        counts, edges = np.histogram(finite, bins=max(bins, 1))
        summary.histogram = Histogram(edges=edges.tolist(), counts=counts.astype(int).tolist())
    summary.fp16 = fp16_usage(finite, summary.size)
    return summary


def fp16_usage(finite: np.ndarray, size: int) -> dict[str, Any]:
    """How the values sit in FP16's range: the share of FP16's largest value the tensor reaches, and
    how many values would overflow (> 65504), become subnormal (< 2**-14) or flush to zero."""
    magnitude = np.abs(finite)
    nonzero = magnitude[magnitude > 0]
    over = int((magnitude > FP16_MAX).sum())
    subnormal = int(((nonzero < FP16_MIN_NORMAL) & (nonzero >= FP16_MIN_SUBNORMAL / 2)).sum())
    flushed = int((nonzero < FP16_MIN_SUBNORMAL / 2).sum())
    total = max(size, 1)
    return {"range_used": float(magnitude.max() / FP16_MAX) if magnitude.size else 0.0,
            "overflow": over, "overflow_share": over / total,
            "subnormal": subnormal, "subnormal_share": subnormal / total,
            "underflow_to_zero": flushed, "underflow_share": flushed / total,
            "fits": over == 0}


def histogram_lines(histogram: Histogram | None, width: int = 40) -> list[str]:
    """``[lo, hi)  count  ████`` lines for a terminal."""
    if histogram is None:
        return ["(no finite values)"]
    top = max(histogram.counts) or 1
    lines = []
    for i, count in enumerate(histogram.counts):
        lo, hi = histogram.edges[i], histogram.edges[i + 1]
        bar = "█" * int(round(width * count / top)) if count else ""
        if count and not bar:
            bar = "▏"
        lines.append(f"{lo:>12.5g} .. {hi:<12.5g} {count:>10d}  {bar}")
    return lines
