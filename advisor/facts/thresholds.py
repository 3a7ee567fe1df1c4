"""Per-dtype thresholds from ``knowledge/thresholds.yaml``, with command-line overrides."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import KnowledgeError, UsageError
from ..resources import data_dir
from ..yamlfile import load_yaml

THRESHOLD_METRICS = ("cosine", "relative_euclidean_distance", "scale")


@dataclass(frozen=True)
class Thresholds:
    """dtype -> metric -> threshold; ``default`` applies to dtypes not listed."""

    table: dict[str, dict[str, float]]

    def for_dtype(self, dtype: str | None) -> dict[str, float]:
        return self.table.get(dtype or "default", self.table["default"])

    def per_row(self, dtypes: pd.Series, metric: str) -> np.ndarray:
        """The threshold of ``metric`` for every row, by the row's dtype (vectorised)."""
        mapping = {dtype: values[metric] for dtype, values in self.table.items()}
        mapped = dtypes.astype("object").map(mapping)
        return mapped.fillna(self.table["default"][metric]).to_numpy(dtype="float64")

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {dtype: dict(values) for dtype, values in self.table.items()}


def load_thresholds(overrides: Iterable[str] = ()) -> Thresholds:
    path = data_dir("knowledge") / "thresholds.yaml"
    raw = load_yaml(path, KnowledgeError)
    if not isinstance(raw, dict) or "default" not in raw:
        raise KnowledgeError("must map dtypes to thresholds and include 'default'", path=path)
    table: dict[str, dict[str, float]] = {}
    for dtype, values in raw.items():
        if not isinstance(values, dict) or set(values) != set(THRESHOLD_METRICS):
            raise KnowledgeError(f"needs exactly {', '.join(THRESHOLD_METRICS)}", path=path, field=str(dtype))
        table[str(dtype)] = {metric: float(values[metric]) for metric in THRESHOLD_METRICS}
    for text in overrides:
        _apply_override(table, text)
    return Thresholds(table)


def _apply_override(table: dict[str, dict[str, float]], text: str) -> None:
    """``cosine=0.995`` (every dtype) or ``float16.cosine=0.98`` (one dtype)."""
    key, sep, value = text.partition("=")
    if not sep:
        raise UsageError(f"--threshold '{text}': expected METRIC=VALUE or DTYPE.METRIC=VALUE")
    dtype, _, metric = key.strip().rpartition(".")
    if metric not in THRESHOLD_METRICS:
        raise UsageError(f"--threshold '{text}': unknown metric '{metric}' "
                         f"(known: {', '.join(THRESHOLD_METRICS)})")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"--threshold '{text}': '{value}' is not a number") from None
    if not np.isfinite(number):
        raise UsageError(f"--threshold '{text}': the value must be finite")
    if dtype:
        table.setdefault(dtype, dict(table["default"]))[metric] = number
    else:
        for values in table.values():
            values[metric] = number
