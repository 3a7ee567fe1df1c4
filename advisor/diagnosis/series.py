"""The series the report plots (advisor/report/plot.py): every op's output cosine and error in
execution order, at most MAX_PLOT_POINTS of them (the worst op of each bucket on a large network).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..facts.builder import FactSet
from ..facts.thresholds import Thresholds
from . import OpPoint, Series

MAX_PLOT_POINTS = 2000


def op_series(facts: FactSet, thresholds: Thresholds) -> Series | None:
    """The per-op output cosine and error in execution order, with the thresholds of the network's dtype."""
    ops = facts.ops
    if not len(ops):
        return None
    error_column = "out_red" if facts.error_metric == "relative_euclidean_distance" else "out_max_abs_error"
    chosen = ops
    if len(ops) > MAX_PLOT_POINTS:
        # Keep the worst op of each bucket so a narrow dip never disappears from the plot.
        bucket = ops["position"] * MAX_PLOT_POINTS // len(ops)
        worst = ops["out_cosine"].fillna(2.0).groupby(bucket).idxmin()
        chosen = ops.loc[worst.to_numpy()]
    dtype = facts.network.get("compute_dtype")
    limits = thresholds.for_dtype(dtype if dtype != "unknown" else None)
    points = [OpPoint(index=int(i), op=str(op), cosine=_finite(c), error=_finite(e))
              for i, op, c, e in zip(chosen.index, chosen["op"], chosen["out_cosine"],
                                     chosen[error_column] if facts.error_metric else [np.nan] * len(chosen),
                                     strict=True)]
    return Series(points=points, error_metric=facts.error_metric or "max_abs_error",
                  cosine_threshold=limits["cosine"],
                  error_threshold=limits["relative_euclidean_distance"]
                  if facts.error_metric == "relative_euclidean_distance" else None,
                  total_ops=len(ops))


def _finite(value: object) -> float | None:
    if value is None or pd.isna(value):
        return None
    number = float(value)
    return number if np.isfinite(number) else None
