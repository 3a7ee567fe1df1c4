"""Metrics that follow exactly from others: relative differences of per-tensor statistics (max, min,
mean, L2 norm), |npu - golden| / |golden| as a fraction, the metrics a statistics-only comparison can
honestly give; and the relative Euclidean distance from the absolute one."""

from __future__ import annotations

import numpy as np

# canonical difference column -> (target statistic, golden statistic)
STAT_PAIRS: dict[str, tuple[str, str]] = {
    "max_rel_diff": ("npu_max", "golden_max"),
    "min_rel_diff": ("npu_min", "golden_min"),
    "mean_rel_diff": ("npu_mean", "golden_mean"),
    "norm_rel_diff": ("npu_norm", "golden_norm"),
}


def relative_differences(npu: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """|npu - golden| / |golden|; 0 where both are 0, NaN where only golden is 0 or either is NaN."""
    npu = np.asarray(npu, dtype=np.float64)
    golden = np.asarray(golden, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(npu - golden)
        return np.where(golden != 0, diff / np.abs(golden), np.where(diff == 0, 0.0, np.nan))


def derive_metrics(columns: dict[str, object], present: set[str]) -> set[str]:
    """Fill, in ``columns``, what follows exactly from the metric / statistic columns in ``present``
    (and add it there): the relative Euclidean distance from the absolute one and the golden L2 norm,
    and each statistic difference the source did not give. Returns the names filled."""
    derived: set[str] = set()
    if "relative_euclidean_distance" not in present and {"euclidean_distance", "golden_norm"} <= present:
        distance = np.asarray(columns["euclidean_distance"], dtype=np.float64)
        norm = np.asarray(columns["golden_norm"], dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            columns["relative_euclidean_distance"] = np.where(norm > 0, distance / norm, np.nan)
        derived.add("relative_euclidean_distance")
    for diff, (npu_stat, golden_stat) in STAT_PAIRS.items():
        if diff not in present and {npu_stat, golden_stat} <= present:
            columns[diff] = relative_differences(columns[npu_stat], columns[golden_stat])
            derived.add(diff)
    present |= derived
    return derived
