"""The ten msaccucmp tensor-comparison metrics, in pure numpy.

Definitions follow FORMATS.md §1, with ``x`` the target (NPU) tensor and ``y`` the golden one:

=============================  =====================================================================
CosineSimilarity               ``sum(x*y) / (|x| |y|)``, clipped to <= 1.0. Both sides all-zero -> 1.0;
                               one side all-zero -> NaN; a scalar (one element) -> 1.0.
MaxAbsoluteError               ``max |x - y|``
AccumulatedRelativeError       ``sum |x / y - 1|`` over the elements with ``|y| > eps``
RelativeEuclideanDistance      ``sqrt(sum (x - y)^2 / sum y^2)``; 0.0 when both sides are all-zero,
                               NaN when only the golden side is.
KullbackLeiblerDivergence      each side min-max normalised into [0, 1] (a constant side is kept as
                               it is), then divided by its sum; ``sum p log(p / q)`` with ``p`` from
                               the target. Terms with ``p == 0`` add nothing; ``q == 0`` where
                               ``p > 0`` gives ``inf``. An all-zero side gives NaN.
StandardDeviation              the string ``(mean;std),(mean;std)``, target side first
MeanAbsoluteError              ``mean |x - y|``
RootMeanSquareError            ``sqrt(mean (x - y)^2)``
MaxRelativeError               ``max |x - y| / |y|`` over the elements with ``|y| > eps``
MeanRelativeError              ``mean |x - y| / |y|`` over the elements with ``|y| > eps``
=============================  =====================================================================

Everything is computed in float64 whatever the input dtype (float16, bfloat16 stored as float32,
integers...). Non-finite inputs never raise or warn: the error metrics follow IEEE arithmetic (an
``inf`` in the target gives ``MaxAbsoluteError = inf``), while the similarity metrics (cosine,
relative Euclidean distance, KL) are NaN when either side holds a NaN or an infinity, with a reason.

:func:`compare_tensors` computes all of them for one pair and is what ``advisor compare`` and the
scenario generator use; the single-metric functions are public for probes and tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: msaccucmp metric column names, in the order the tool writes them.
METRIC_NAMES: tuple[str, ...] = (
    "CosineSimilarity",
    "MaxAbsoluteError",
    "AccumulatedRelativeError",
    "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence",
    "StandardDeviation",
    "MeanAbsoluteError",
    "RootMeanSquareError",
    "MaxRelativeError",
    "MeanRelativeError",
)

#: Golden values at or below this magnitude are left out of the relative errors: dividing by them
#: measures float32 noise, not disagreement. (msaccucmp uses a float epsilon the same way.)
RELATIVE_EPS: float = float(np.finfo(np.float32).eps)

_NAN = float("nan")


def as_float64(values: np.ndarray) -> np.ndarray:
    """Flatten any numeric array (or array-like) into a contiguous float64 vector."""
    return np.asarray(values).astype(np.float64, copy=False).reshape(-1)


def _pair(npu: np.ndarray, golden: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = as_float64(npu), as_float64(golden)
    if x.size != y.size:
        raise ValueError(f"cannot compare tensors of {x.size} and {y.size} elements")
    return x, y


def _all_finite(*vectors: np.ndarray) -> bool:
    return all(bool(np.isfinite(v).all()) for v in vectors)


def cosine_similarity(npu: np.ndarray, golden: np.ndarray) -> float:
    """Cosine of the angle between the flattened tensors (see the module table for edge cases)."""
    x, y = _pair(npu, golden)
    if x.size == 1:
        return 1.0
    if x.size == 0 or not _all_finite(x, y):
        return _NAN
    x_norm, y_norm = np.linalg.norm(x), np.linalg.norm(y)
    if x_norm == 0.0 and y_norm == 0.0:
        return 1.0
    if x_norm == 0.0 or y_norm == 0.0:
        return _NAN
    # Normalise before the dot product so that large float16-range values cannot overflow.
    return float(min(np.dot(x / x_norm, y / y_norm), 1.0))


def max_absolute_error(npu: np.ndarray, golden: np.ndarray) -> float:
    """``max |x - y|`` (NaN for empty tensors)."""
    x, y = _pair(npu, golden)
    if x.size == 0:
        return _NAN
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.max(np.abs(x - y)))


def _relative_errors(x: np.ndarray, y: np.ndarray, eps: float) -> np.ndarray:
    """``|x - y| / |y|`` for the elements whose golden magnitude exceeds ``eps``."""
    keep = np.abs(y) > eps
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return np.abs(x[keep] - y[keep]) / np.abs(y[keep])


# The three relative metrics reduce the same element errors; compare_tensors computes them once.
def _accumulated(errors: np.ndarray) -> float:
    return float(np.sum(errors))


def _max(errors: np.ndarray) -> float:
    return float(np.max(errors)) if errors.size else _NAN


def _mean(errors: np.ndarray) -> float:
    return float(np.mean(errors)) if errors.size else _NAN


def accumulated_relative_error(npu: np.ndarray, golden: np.ndarray, eps: float = RELATIVE_EPS) -> float:
    """``sum |x / y - 1|`` over ``|y| > eps`` (0.0 when no element qualifies)."""
    return _accumulated(_relative_errors(*_pair(npu, golden), eps))


def max_relative_error(npu: np.ndarray, golden: np.ndarray, eps: float = RELATIVE_EPS) -> float:
    """``max |x - y| / |y|`` over ``|y| > eps`` (NaN when no element qualifies)."""
    return _max(_relative_errors(*_pair(npu, golden), eps))


def mean_relative_error(npu: np.ndarray, golden: np.ndarray, eps: float = RELATIVE_EPS) -> float:
    """``mean |x - y| / |y|`` over ``|y| > eps`` (NaN when no element qualifies)."""
    return _mean(_relative_errors(*_pair(npu, golden), eps))


def relative_euclidean_distance(npu: np.ndarray, golden: np.ndarray) -> float:
    """``sqrt(sum (x - y)^2 / sum y^2)``; 0.0 for two all-zero tensors, NaN for an all-zero golden."""
    x, y = _pair(npu, golden)
    if x.size == 0 or not _all_finite(x, y):
        return _NAN
    scale = float(np.max(np.abs(np.concatenate([x, y])))) or 1.0  # avoid overflow of the squares
    diff = np.sum(((x - y) / scale) ** 2)
    ref = np.sum((y / scale) ** 2)
    if ref == 0.0:
        return 0.0 if diff == 0.0 else _NAN
    return float(np.sqrt(diff / ref))


def _min_max_distribution(v: np.ndarray) -> np.ndarray | None:
    """Min-max normalise into [0, 1] and divide by the sum; None when the result is all zero."""
    low, high = float(np.min(v)), float(np.max(v))
    scaled = (v - low) / (high - low) if high != low else v
    total = float(np.sum(scaled))
    if total == 0.0:
        return None
    return scaled / total


def kl_divergence(npu: np.ndarray, golden: np.ndarray, floor: float | None = None) -> float:
    """KL divergence of the min-max-normalised target distribution from the golden one.

    ``floor``: when given, the normalised values are first raised to at least ``floor`` (newer
    msaccucmp releases do this with the float32 epsilon, which removes the ``inf``); the default
    keeps the classic definition, where a golden zero facing a non-zero target gives ``inf``.
    """
    x, y = _pair(npu, golden)
    if x.size == 0 or not _all_finite(x, y):
        return _NAN
    if floor is not None:
        p_raw = _floored(x, floor)
        q_raw = _floored(y, floor)
        p, q = p_raw / p_raw.sum(), q_raw / q_raw.sum()
    else:
        p, q = _min_max_distribution(x), _min_max_distribution(y)
        if p is None or q is None:
            return _NAN
    support = p > 0
    if np.any(q[support] == 0):
        return float("inf")
    value = float(np.sum(p[support] * np.log(p[support] / q[support])))
    return 0.0 if abs(value) < RELATIVE_EPS else value


def _floored(v: np.ndarray, floor: float) -> np.ndarray:
    low, high = float(np.min(v)), float(np.max(v))
    scaled = (v - low) / (high - low) if high != low else v
    return np.maximum(scaled, floor)


def mean_and_std(values: np.ndarray) -> tuple[float, float]:
    """Mean and (population) standard deviation in float64; NaN for an empty tensor."""
    v = as_float64(values)
    if v.size == 0:
        return _NAN, _NAN
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.mean(v)), float(np.std(v))


def mean_absolute_error(npu: np.ndarray, golden: np.ndarray) -> float:
    """``mean |x - y|``."""
    x, y = _pair(npu, golden)
    if x.size == 0:
        return _NAN
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.mean(np.abs(x - y)))


def root_mean_square_error(npu: np.ndarray, golden: np.ndarray) -> float:
    """``sqrt(mean (x - y)^2)``."""
    x, y = _pair(npu, golden)
    if x.size == 0:
        return _NAN
    with np.errstate(invalid="ignore", over="ignore"):
        return float(np.sqrt(np.mean((x - y) ** 2)))


def format_standard_deviation(npu_stats: tuple[float, float], golden_stats: tuple[float, float],
                              decimals: int = 6) -> str:
    """``(mean;std),(mean;std)`` with the target side first, as msaccucmp prints it."""
    def text(value: float) -> str:
        return format_number(value, decimals)

    return (f"({text(npu_stats[0])};{text(npu_stats[1])}),"
            f"({text(golden_stats[0])};{text(golden_stats[1])})")


def format_number(value: float, decimals: int = 6) -> str:
    """A metric value as msaccucmp writes it: fixed decimals, ``NaN``, ``inf`` or ``-inf``."""
    if value is None or np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{decimals}f}"


@dataclass
class TensorComparison:
    """All metrics for one pair of tensors, plus why any of them could not be computed."""

    values: dict[str, float] = field(default_factory=dict)   # metric name -> value (float64)
    npu_stats: tuple[float, float] = (_NAN, _NAN)
    golden_stats: tuple[float, float] = (_NAN, _NAN)
    fail_reasons: list[str] = field(default_factory=list)

    @property
    def standard_deviation(self) -> str:
        return format_standard_deviation(self.npu_stats, self.golden_stats)

    def as_dict(self) -> dict[str, float | str]:
        """Metric name -> value, with ``StandardDeviation`` as its string, in msaccucmp order."""
        out: dict[str, float | str] = {}
        for name in METRIC_NAMES:
            out[name] = self.standard_deviation if name == "StandardDeviation" else self.values[name]
        return out


def compare_tensors(npu: np.ndarray, golden: np.ndarray, *, eps: float = RELATIVE_EPS,
                    kl_floor: float | None = None) -> TensorComparison:
    """Every msaccucmp metric for one target/golden pair.

    Tensors whose element counts differ are not compared: every metric is NaN and the reason says
    so (msaccucmp reports the same as a failed row).
    """
    x, y = as_float64(npu), as_float64(golden)
    result = TensorComparison()
    if x.size != y.size:
        result.values = {name: _NAN for name in METRIC_NAMES if name != "StandardDeviation"}
        result.fail_reasons.append(f"shape mismatch: {x.size} vs {y.size} elements")
        return result
    relative = _relative_errors(x, y, eps)
    result.values = {
        "CosineSimilarity": cosine_similarity(x, y),
        "MaxAbsoluteError": max_absolute_error(x, y),
        "AccumulatedRelativeError": _accumulated(relative),
        "RelativeEuclideanDistance": relative_euclidean_distance(x, y),
        "KullbackLeiblerDivergence": kl_divergence(x, y, kl_floor),
        "MeanAbsoluteError": mean_absolute_error(x, y),
        "RootMeanSquareError": root_mean_square_error(x, y),
        "MaxRelativeError": _max(relative),
        "MeanRelativeError": _mean(relative),
    }
    result.npu_stats, result.golden_stats = mean_and_std(x), mean_and_std(y)
    result.fail_reasons.extend(_fail_reasons(x, y, result.values))
    return result


def _fail_reasons(x: np.ndarray, y: np.ndarray, values: dict[str, float]) -> list[str]:
    reasons = []
    if not np.isfinite(x).all():
        reasons.append("NPU data contains NaN or inf")
    if not np.isfinite(y).all():
        reasons.append("golden data contains NaN or inf")
    if x.size > 1 and np.isnan(values["CosineSimilarity"]) and not reasons:
        side = "NPU" if not np.any(x) else "golden"
        reasons.append(f"cannot compare by cosine similarity: all {side} data is zero")
    if values["KullbackLeiblerDivergence"] == float("inf"):
        reasons.append("cannot compare by KL divergence: golden distribution has zeros")
    return reasons
