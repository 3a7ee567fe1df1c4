"""The ten msaccucmp tensor-comparison metrics: the one implementation every caller uses.

Definitions follow msaccucmp 26 (docs/formats.md, msaccucmp, and the vendor's ``algorithm_manager/builtin_algorithm``),
with ``x`` the target (NPU) tensor and ``y`` the golden one, both flattened:

=============================  =====================================================================
CosineSimilarity               ``sum(x*y) / (|x| |y|)``, clipped to <= 1.0. A single element -> 1.0;
                               both norms <= eps64 (float64 epsilon, as msaccucmp) -> 1.0; else one
                               norm <= eps64**2 -> NaN ("all ... data is zero").
MaxAbsoluteError               ``max |x - y|``
AccumulatedRelativeError       ``sum |x - y| / |y|`` over the elements with ``|y| > eps`` (0.0 if none)
RelativeEuclideanDistance      ``sqrt(sum (x - y)^2 / sum y^2)``; 0.0 when both sides are all-zero,
                               NaN when only the golden side is (msaccucmp prints 0.0 there: a
                               target that is all wrong would read as a perfect match).
KullbackLeiblerDivergence      each side min-max normalised into [0, 1] (a constant side is kept as
                               it is) and raised to at least KL_FLOOR (the float32 epsilon), then
                               divided by its sum; ``sum p log(p / q)``, ``p`` from the target;
                               |KL| < eps64 prints 0. Finite for any finite input, as msaccucmp 26.
StandardDeviation              ``(mean;std),(mean;std)`` (population std), target side first
MeanAbsoluteError              ``mean |x - y|``
RootMeanSquareError            ``sqrt(mean (x - y)^2)``
MaxRelativeError               ``max |x - y| / |y|`` over the elements with ``|y| > eps`` (NaN if none)
MeanRelativeError              ``mean |x - y| / |y|`` over the elements with ``|y| > eps`` (NaN if none)
=============================  =====================================================================

``eps`` is RELATIVE_EPS, the float32 epsilon (msaccucmp uses the float64 one and averages the
excluded elements in as zeros: on a golden tensor with zeros, e.g. after a ReLU, its mean relative
error is diluted by them; ours is the mean over the elements it is defined for).

Edge cases, for every metric: an empty tensor gives NaN everywhere (msaccucmp warns "data size is 0");
tensors of different sizes are not compared (all NaN, with the reason). Non-finite inputs never raise
or warn: the error metrics follow IEEE arithmetic (an ``inf`` in the target gives
``MaxAbsoluteError = inf``), while cosine, relative Euclidean distance and KL are NaN when either
side holds a NaN or an infinity, with a reason (msaccucmp's arithmetic gives NaN there too).

Every value comes from the running sums of :mod:`advisor.tensors.running` (chunked, float64 sums,
float32 KL; its docstring says where each precision is kept and why), so a memory-mapped tensor of
any size is compared in bounded memory. :func:`compare_tensors` computes all metrics of one pair;
the single-metric functions are the same computation, for probes and tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .running import CHUNK, KL_FLOOR, RELATIVE_EPS, PairSums, flat, pair_sums

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

#: msaccucmp's ``FLOAT_EPSILON`` (numpy's float64 epsilon): its zero-norm and zero-KL tests.
EPS64: float = float(np.finfo(np.float64).eps)

_NAN = float("nan")

__all__ = ["CHUNK", "EPS64", "KL_FLOOR", "METRIC_NAMES", "RELATIVE_EPS", "TensorComparison", "compare_tensors",
           "comparison_of", "cosine_similarity", "format_number", "format_standard_deviation", "kl_divergence",
           "size_mismatch", "values_of"]


def values_of(sums: PairSums) -> dict[str, float]:
    """Every metric value (StandardDeviation aside) from the running sums of one pair."""
    n = sums.n
    if n == 0:
        return {name: _NAN for name in METRIC_NAMES if name != "StandardDeviation"}
    return {
        "CosineSimilarity": _cosine(sums),
        "MaxAbsoluteError": sums.abs_max,
        "AccumulatedRelativeError": sums.rel_sum,
        "RelativeEuclideanDistance": _red(sums),
        "KullbackLeiblerDivergence": _kl(sums),
        "MeanAbsoluteError": sums.abs_sum / n,
        "RootMeanSquareError": math.sqrt(sums.dd / n),
        "MaxRelativeError": sums.rel_max if sums.rel_count else _NAN,
        "MeanRelativeError": sums.rel_sum / sums.rel_count if sums.rel_count else _NAN,
    }


def _zero_side(sums: PairSums) -> str | None:
    """Which side cosine calls all zero ("NPU", "golden"), by msaccucmp's tests on the norms."""
    x_norm, y_norm = math.sqrt(sums.xx), math.sqrt(sums.yy)
    if x_norm <= EPS64 and y_norm <= EPS64:
        return None
    if x_norm <= EPS64 ** 2:
        return "NPU"
    if y_norm <= EPS64 ** 2:
        return "golden"
    return None


def _cosine(sums: PairSums) -> float:
    if sums.n == 1:
        return 1.0
    if not sums.finite:
        return _NAN
    x_norm, y_norm = math.sqrt(sums.xx), math.sqrt(sums.yy)
    if x_norm <= EPS64 and y_norm <= EPS64:
        return 1.0
    if _zero_side(sums) is not None:
        return _NAN
    # sqrt(xx * yy) rounds once where sqrt(xx) * sqrt(yy) rounds three times: two identical tensors
    # (xy == xx == yy) then give exactly 1.0, not 0.9999999999999998. The product of the norms is
    # the fallback when xx * yy leaves float64's range.
    product = sums.xx * sums.yy
    denominator = math.sqrt(product) if 0.0 < product < math.inf else x_norm * y_norm
    return float(min(sums.xy / denominator, 1.0))


def _red(sums: PairSums) -> float:
    if not sums.finite:
        return _NAN
    if sums.yy == 0.0:
        return 0.0 if sums.dd == 0.0 else _NAN
    return math.sqrt(sums.dd / sums.yy)


def _kl(sums: PairSums) -> float:
    """``sum p log(p/q)`` with ``p = a/A``, ``q = b/B``: ``S/A + log(B/A)``, ``S = sum a log(a/b)``."""
    if not sums.finite:
        return _NAN
    value = sums.kl_s / sums.kl_a + float(np.log(sums.kl_b / sums.kl_a))
    return 0.0 if abs(value) < EPS64 else value


def _stats(total: float, squares: float, n: int) -> tuple[float, float]:
    """Mean and population std from the float64 sum and sum of squares (NaN when empty)."""
    if n == 0:
        return _NAN, _NAN
    mean = total / n                        # Python floats: an overflow is inf, never a warning
    return mean, math.sqrt(max(squares / n - mean * mean, 0.0)) if math.isfinite(mean) else _NAN


def _measure(npu: np.ndarray, golden: np.ndarray) -> PairSums:
    return pair_sums(npu, golden)


def cosine_similarity(npu: np.ndarray, golden: np.ndarray) -> float:
    """Cosine of the angle between the flattened tensors (see the module table for edge cases)."""
    return values_of(_measure(npu, golden))["CosineSimilarity"]


def relative_euclidean_distance(npu: np.ndarray, golden: np.ndarray) -> float:
    """``sqrt(sum (x - y)^2 / sum y^2)``; 0.0 for two all-zero tensors, NaN for an all-zero golden."""
    return values_of(_measure(npu, golden))["RelativeEuclideanDistance"]


def kl_divergence(npu: np.ndarray, golden: np.ndarray) -> float:
    """KL divergence of the floored min-max-normalised target distribution from the golden one."""
    return values_of(_measure(npu, golden))["KullbackLeiblerDivergence"]


def max_absolute_error(npu: np.ndarray, golden: np.ndarray) -> float:
    return values_of(_measure(npu, golden))["MaxAbsoluteError"]


def accumulated_relative_error(npu: np.ndarray, golden: np.ndarray) -> float:
    return values_of(_measure(npu, golden))["AccumulatedRelativeError"]


def max_relative_error(npu: np.ndarray, golden: np.ndarray) -> float:
    return values_of(_measure(npu, golden))["MaxRelativeError"]


def mean_relative_error(npu: np.ndarray, golden: np.ndarray) -> float:
    return values_of(_measure(npu, golden))["MeanRelativeError"]


def mean_absolute_error(npu: np.ndarray, golden: np.ndarray) -> float:
    return values_of(_measure(npu, golden))["MeanAbsoluteError"]


def root_mean_square_error(npu: np.ndarray, golden: np.ndarray) -> float:
    return values_of(_measure(npu, golden))["RootMeanSquareError"]


def format_standard_deviation(npu_stats: tuple[float, float], golden_stats: tuple[float, float],
                              decimals: int = 6) -> str:
    """``(mean;std),(mean;std)`` with the target side first, as msaccucmp prints it."""
    def text(value: float) -> str:
        return format_number(value, decimals)

    return (f"({text(npu_stats[0])};{text(npu_stats[1])}),"
            f"({text(golden_stats[0])};{text(golden_stats[1])})")


def format_number(value: float, decimals: int = 6) -> str:
    """A metric value as msaccucmp writes it: fixed decimals, ``NaN``, ``inf`` or ``-inf``."""
    if value is None or math.isnan(value):
        return "NaN"
    if math.isinf(value):
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


def compare_tensors(npu: np.ndarray, golden: np.ndarray, *, chunk: int = CHUNK,
                    compiled: bool | None = None) -> TensorComparison:
    """Every msaccucmp metric for one target/golden pair (``chunk`` elements at a time).

    Tensors whose element counts differ are not compared: every metric is NaN and the reason says
    so (msaccucmp reports the same as a failed row).
    """
    x, y = flat(npu), flat(golden)
    if x.size != y.size:
        return size_mismatch(x.size, y.size)
    return comparison_of(pair_sums(x, y, chunk, compiled))


def size_mismatch(npu_size: int, golden_size: int) -> TensorComparison:
    """The comparison of tensors whose element counts differ: every metric NaN, and why."""
    result = TensorComparison({name: _NAN for name in METRIC_NAMES if name != "StandardDeviation"})
    result.fail_reasons.append(f"shape mismatch: {npu_size} vs {golden_size} elements")
    return result


def comparison_of(sums: PairSums) -> TensorComparison:
    """The :class:`TensorComparison` of one pair's running sums."""
    result = TensorComparison(values_of(sums))
    result.npu_stats = _stats(sums.sum_x, sums.xx, sums.n)
    result.golden_stats = _stats(sums.sum_y, sums.yy, sums.n)
    result.fail_reasons.extend(_fail_reasons(sums, result.values))
    return result


def _fail_reasons(sums: PairSums, values: dict[str, float]) -> list[str]:
    reasons = []
    for side, span in (("NPU", sums.x_range), ("golden", sums.y_range)):
        if span is not None and not all(math.isfinite(v) for v in span):
            reasons.append(f"{side} data contains NaN or inf")
    side = _zero_side(sums) if sums.n > 1 and not reasons else None
    if side is not None:
        reasons.append(f"cannot compare by cosine similarity: all {side} data is zero")
    return reasons
