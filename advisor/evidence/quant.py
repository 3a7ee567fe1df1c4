"""int8 quantisation re-done in numpy: what a layer's weights and activations lose under the build's
settings and under the alternatives, measured as SQNR and cosine.

This is the evidence behind the quantisation rules. Instead of "channel ranges differ, per-channel
is usually better", the advisor quantises the layer's own weights (from the ONNX model) and its own
golden input (from the dumps) the way the config says and the other ways, and reports what each
keeps: "per-channel would raise this layer's cosine from 0.93 to 0.999".

Conventions (those of the int8 toolchains the advisor knows: MagicMind, AMCT, TensorRT, ONNX Runtime,
PyTorch): signed 8-bit codes, clipped to -128..127; symmetric = zero point 0 and scale amax / 127;
asymmetric = scale (high - low) / 255 with a zero point, the range widened to include 0 (so 0 is
exact and the zero point fits in int8); per-channel = one scale per output channel; a calibration
range clips what lies outside it. Calibration and statistics look at finite values only.

The scenario generator (benchmarks/scenarios/faults.py) quantises with its own code on purpose: it
is the ground truth this simulation is measured against, so the two must not share an implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..tensors.metrics import cosine_similarity, relative_euclidean_distance

_TINY = 1e-30


@dataclass(frozen=True)
class Scheme:
    """One way of quantising a tensor to int8."""

    per_channel: bool = False
    symmetric: bool = True
    calibration: str = "minmax"         # minmax | percentile | range (a fixed calibrated range)
    percentile: float | None = None     # with calibration "percentile": the percentile of |x| kept
    low: float | None = None            # the calibrated range when calibration == "range"
    high: float | None = None

    def describe(self, lang: str = "en") -> str:
        """E.g. "per-tensor symmetric int8, range [0, 1]" (``lang`` en or zh)."""
        zh = lang == "zh"
        text = ("逐通道" if zh else "per-channel") if self.per_channel else ("逐张量" if zh else "per-tensor")
        text += ("对称 int8" if zh else " symmetric int8") if self.symmetric else ("非对称 int8" if zh else
                                                                                " asymmetric int8")
        if self.calibration == "percentile":
            text += f"，{self.percentile:g} 分位数校准" if zh else f", {self.percentile:g}th-percentile calibration"
        elif self.calibration == "range" and self.high is not None:
            low = self.low if self.low is not None else -self.high
            text += f"，范围 [{low:g}, {self.high:g}]" if zh else f", range [{low:g}, {self.high:g}]"
        else:
            text += "，最小/最大值校准" if zh else ", min/max calibration"
        return text


def fake_quantize(x: np.ndarray, scheme: Scheme, channel_axis: int | None = None) -> np.ndarray:
    """Quantise to int8 and back (float64), as the int8 kernel sees ``x``."""
    x = np.asarray(x, dtype=np.float64)
    if scheme.per_channel and channel_axis is not None and x.ndim > 1:
        moved = np.moveaxis(x, channel_axis, 0)
        flat = moved.reshape(moved.shape[0], -1)
        out = np.stack([_quantize_flat(row, scheme) for row in flat])
        return np.moveaxis(out.reshape(moved.shape), 0, channel_axis)
    return _quantize_flat(x.reshape(-1), scheme).reshape(x.shape)


def _quantize_flat(x: np.ndarray, scheme: Scheme) -> np.ndarray:
    low, high = calibrated_range(x, scheme)
    if scheme.symmetric:
        amax = max(abs(low), abs(high), _TINY)
        scale = amax / 127.0
        return np.clip(np.round(x / scale), -128, 127) * scale
    low, high = min(low, 0.0), max(high, 0.0)
    span = max(high - low, _TINY)
    scale = span / 255.0
    zero = np.round(-low / scale) - 128
    return (np.clip(np.round(x / scale) + zero, -128, 127) - zero) * scale


def calibrated_range(x: np.ndarray, scheme: Scheme) -> tuple[float, float]:
    """(low, high) the scheme's calibration chooses for ``x``."""
    if scheme.calibration == "range" and scheme.high is not None:
        high = float(scheme.high)
        low = float(scheme.low) if scheme.low is not None else -abs(high)
        return low, high
    x = x[np.isfinite(x)]
    if x.size == 0:
        return 0.0, 0.0
    if scheme.calibration == "percentile":
        if scheme.symmetric:
            amax = float(np.percentile(np.abs(x), scheme.percentile))
            return -amax, amax
        tail = 100.0 - scheme.percentile
        return float(np.percentile(x, tail)), float(np.percentile(x, scheme.percentile))
    return float(x.min()), float(x.max())


def sqnr_db(reference: np.ndarray, approx: np.ndarray) -> float:
    """Signal-to-quantisation-noise ratio in dB (inf when identical)."""
    reference = np.asarray(reference, dtype=np.float64)
    noise = float(np.sum((reference - np.asarray(approx, dtype=np.float64)) ** 2))
    signal = float(np.sum(reference ** 2))
    if noise == 0.0:
        return float("inf")
    return 10.0 * np.log10(max(signal, _TINY) / noise)


def cosine(reference: np.ndarray, approx: np.ndarray) -> float:
    """The msaccucmp cosine (advisor.tensors.metrics): two all-zero tensors 1.0, one NaN."""
    return cosine_similarity(approx, reference)


def relative_distance(reference: np.ndarray, approx: np.ndarray) -> float:
    """||approx - reference|| / ||reference||: msaccucmp's relative Euclidean distance
    (advisor.tensors.metrics): 0.0 when both are all zero, NaN when only the reference is."""
    return relative_euclidean_distance(approx, reference)


def scale_error(reference: np.ndarray, approx: np.ndarray) -> float:
    """| rms(approx) / rms(reference) - 1 |: the scale check of the thresholds (cosine is blind to it)."""
    rms_ref = float(np.sqrt(np.mean(np.asarray(reference, dtype=np.float64) ** 2)))
    rms = float(np.sqrt(np.mean(np.asarray(approx, dtype=np.float64) ** 2)))
    return abs(rms / rms_ref - 1.0) if rms_ref > _TINY else 0.0


def within_limits(cos: float, red: float, scale: float, limits: Mapping[str, float]) -> bool:
    """A result agrees with its reference as the comparison judges a tensor: its cosine, relative
    distance and scale error against a dtype's thresholds (``Thresholds.for_dtype``). NaN never agrees."""
    return bool(cos >= limits["cosine"] and red <= limits["relative_euclidean_distance"] and scale <= limits["scale"])


# --- statistics ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class WeightStats:
    channels: int
    channel_ratio: float        # largest / smallest per-channel max|w|
    channel_ratio_median: float  # largest / median per-channel max|w|
    asymmetry: float            # (max + min) / (max - min): 0 centred, +-1 one-sided
    outlier_ratio: float        # max|w| / a high percentile of |w| (knob quant.weight_outlier_percentile)


def weight_quant_stats(w: np.ndarray, channel_axis: int, outlier_percentile: float) -> WeightStats:
    """``outlier_percentile``: the percentile of |w| the largest weight is measured against."""
    w = np.nan_to_num(np.asarray(w, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    other = tuple(a for a in range(w.ndim) if a != channel_axis)
    ranges = np.abs(w).max(axis=other) if other else np.abs(w)
    positive = ranges[ranges > 0]
    smallest = float(positive.min()) if positive.size else _TINY
    largest = float(ranges.max()) if ranges.size else 0.0
    median = float(np.median(ranges)) if ranges.size else 0.0
    low, high = float(w.min()), float(w.max())
    p999 = float(np.percentile(np.abs(w), outlier_percentile))
    return WeightStats(channels=int(ranges.size), channel_ratio=largest / smallest,
                       channel_ratio_median=largest / max(median, _TINY),
                       asymmetry=(high + low) / max(high - low, _TINY),
                       outlier_ratio=float(np.abs(w).max()) / max(p999, _TINY))


@dataclass(frozen=True)
class ActivationStats:
    low: float
    high: float
    one_sided: bool             # never negative (after ReLU, Softmax, Sigmoid...)
    offset: float               # (high + low) / (high - low): the range's centre, in half-ranges
    outlier_ratio: float        # max|x| / a high percentile of |x| (knob quant.activation_outlier_percentile)
    saturation: float | None    # share of values outside the calibrated range (None: no range known)


def activation_stats(x: np.ndarray, outlier_percentile: float,
                     calibrated: tuple[float, float] | None = None) -> ActivationStats:
    """Statistics of the finite values of ``x`` (which must hold at least one); ``outlier_percentile``:
    the percentile of |x| the largest value is measured against."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    low, high = float(x.min()), float(x.max())
    p = float(np.percentile(np.abs(x), outlier_percentile))
    saturation = None
    if calibrated is not None:
        saturation = float(np.mean((x < calibrated[0]) | (x > calibrated[1])))
    return ActivationStats(low=low, high=high, one_sided=low >= 0.0,
                           offset=(high + low) / max(high - low, _TINY),
                           outlier_ratio=max(abs(low), abs(high)) / max(p, _TINY), saturation=saturation)
