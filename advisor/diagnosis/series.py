"""The series the report plots (advisor/report/plot.py): every op's output cosine and error in
execution order, or, for a layout without cosine (advisor/diagnosis/layout.py), the relative error of
each statistic (msprobe summary mode) or the differing checksums (MD5 mode) per call; at most
MAX_PLOT_POINTS of them (the worst op of each bucket on a large network).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..facts.builder import FactSet
from ..facts.thresholds import Thresholds
from . import OpPoint, Series
from .layout import CHECKSUM, TENSOR, OpMetrics

MAX_PLOT_POINTS = 2000


def op_series(facts: FactSet, thresholds: Thresholds, metrics: OpMetrics | None = None) -> Series | None:
    """The per-op series in execution order, with the thresholds of the network's dtype."""
    ops = facts.ops
    if not len(ops):
        return None
    dtype = facts.network.get("compute_dtype")
    limits = thresholds.for_dtype(dtype if dtype != "unknown" else None)
    if metrics is not None and metrics.layout != TENSOR:
        return _layout_series(ops, metrics, limits)
    error_column = "out_red" if facts.error_metric == "relative_euclidean_distance" else "out_max_abs_error"
    chosen = _thinned(ops, ops["out_cosine"].fillna(2.0))
    points = [OpPoint(index=int(i), op=str(op), cosine=_finite(c), error=_finite(e))
              for i, op, c, e in zip(chosen.index, chosen["op"], chosen["out_cosine"],
                                     chosen[error_column] if facts.error_metric else [np.nan] * len(chosen),
                                     strict=True)]
    return Series(points=points, error_metric=facts.error_metric or "max_abs_error",
                  cosine_threshold=limits["cosine"],
                  error_threshold=limits["relative_euclidean_distance"]
                  if facts.error_metric == "relative_euclidean_distance" else None,
                  total_ops=len(ops))


def _thinned(ops: pd.DataFrame, badness: pd.Series) -> pd.DataFrame:
    """``ops``, or on a large network the worst op (lowest ``badness``) of each bucket, so a narrow dip
    never disappears from the plot."""
    if len(ops) <= MAX_PLOT_POINTS:
        return ops
    bucket = ops["position"] * MAX_PLOT_POINTS // len(ops)
    return ops.loc[badness.groupby(bucket).idxmin().to_numpy()]


def _layout_series(ops: pd.DataFrame, metrics: OpMetrics, limits: dict[str, float]) -> Series:
    """Statistics or checksum mode: each call's own metrics, forward and backward calls marked."""
    per_op = metrics.frame.reindex(ops.index) if metrics.frame is not None else pd.DataFrame(index=ops.index)
    worst = per_op[list(metrics.columns)].max(axis=1, skipna=True).fillna(-np.inf)
    chosen = _thinned(ops, -worst)
    directions = chosen["direction"].astype("string") if "direction" in chosen else pd.Series(pd.NA, chosen.index)
    picked = per_op.loc[chosen.index]   # each metric's values as a list: one lookup per column, not per point
    values = [dict(zip(metrics.columns, row, strict=True))
              for row in zip(*(map(_number, picked[c].tolist()) for c in metrics.columns), strict=True)] \
        if metrics.columns else [{} for _ in range(len(chosen))]
    points = [OpPoint(index=int(i), op=str(op), cosine=None, error=None, values=v,
                      direction=None if pd.isna(d) else str(d))
              for i, op, d, v in zip(chosen.index, chosen["op"], directions, values, strict=True)]
    checksums = None
    if metrics.layout == CHECKSUM:
        totals = per_op.sum()
        checksums = (int(totals.get("checksums_compared", 0)), int(totals.get("checksums_differ", 0)))
    return Series(points=points, error_metric="", cosine_threshold=limits["cosine"], error_threshold=None,
                  total_ops=len(ops), layout=metrics.layout, metrics=metrics.columns,
                  metric_threshold=limits.get("scale") if metrics.layout != CHECKSUM else None,
                  checksums=checksums)


def _number(value: object) -> float | None:
    """The value, None when missing (NaN); inf is kept: an infinite relative error is drawn, not a gap."""
    return None if value is None or pd.isna(value) else float(value)


def _finite(value: object) -> float | None:
    if value is None or pd.isna(value):
        return None
    number = float(value)
    return number if np.isfinite(number) else None
