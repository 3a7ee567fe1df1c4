"""Normalisation probe: a per-channel affine map ``target = a * golden + b`` (least squares, R^2),
read as identity, a pure scale (0-255 vs 0-1), or a normalisation ``(x - mean) / std`` one side got
once more than the other - *extra* when neither side looks raw (a second normalisation), *missing*
when one side looks raw (never below zero) and the other normalised. The implied mean/std are
reported and named when they are well known. Pure numpy.

The reading's tolerances are measurement knobs (``knobs: probes:`` in knowledge/thresholds.yaml);
how good a fit must be for a finding is a rule parameter (``min_fit`` of the preprocessing rules).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tensors.metrics import cosine_similarity
from .channels import channel_axis, planes
from .probe_knobs import ProbeKnobs

#: Well-known normalisation constants (mean, std per RGB channel), matched within the
#: ``known_tolerance`` knob.
KNOWN_NORMALIZATIONS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "ImageNet (0-255)": ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375)),
    "ImageNet (0-1)": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "CLIP (0-1)": ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    "[-1, 1] from 0-255 (127.5/128)": ((127.5,), (128.0,)),
    "[-1, 1] from 0-255 (127.5/127.5)": ((127.5,), (127.5,)),
    "[-1, 1] from 0-1 (0.5/0.5)": ((0.5,), (0.5,)),
}


# Absolute floors of relative comparisons, so a value of 0 can match (they are no tolerance of the reading:
# a mean of 0 compared relatively would need to be exactly 0).
ZERO_OFFSET = 1e-6          # an offset this small is 0 when telling one shared map from one per channel
ZERO_MEAN = 1e-3            # a mean this small is 0 when naming well-known constants (e.g. mean 0)

@dataclass(frozen=True)
class AffineFit:
    scales: np.ndarray              # a per channel
    offsets: np.ndarray             # b per channel
    fit: float                      # worst channel's R^2
    cosine: float                   # cosine(a * golden + b, target)
    relation: str                   # identity | scale | extra_normalization | missing_normalization | affine | none
    applied_to: str | None          # extra/missing: the side that got the additional (x - mean) / std
    mean: np.ndarray | None         # the implied (x - mean) / std, in the units of the other side
    std: np.ndarray | None
    known: str | None               # the name of well-known constants the implied ones match
    groups: str = "channel"         # channel (one map per channel, or one for all) | sample (one per sample)
    shared: bool = False            # one scale and offset for every channel (within knob shared_tolerance)
    scale_known: str | None = None  # a "scale" map's factor by name (255, 1/32768...: scale_name)


def affine_fit(target: np.ndarray, golden: np.ndarray, axis: int | None, knobs: ProbeKnobs) -> AffineFit:
    """The affine map per channel (one map for the whole tensor without channels) or, when that
    leaves at least ``1 / group_residual_ratio`` times the unexplained variance, per sample (axis 0):
    a normalisation by each sample's own statistics - each audio frame or utterance, each image of a
    batch, standardised on one side only."""
    t = planes(target, axis) if axis is not None else target.reshape(1, -1)
    g = planes(golden, axis) if axis is not None else golden.reshape(1, -1)
    t, g, groups = t.astype(np.float64), g.astype(np.float64), "channel"
    scales, offsets, fit = _group_fits(t, g)
    if target.ndim >= 2 and target.shape[0] >= 2 and axis != 0 and np.isfinite(fit):
        ts, gs = target.reshape(target.shape[0], -1).astype(np.float64), golden.reshape(target.shape[0], -1)
        per_sample = _group_fits(ts, gs.astype(np.float64))
        if per_sample[2] >= knobs.relation_min_fit and 1 - per_sample[2] < knobs.group_residual_ratio * (1 - fit):
            (scales, offsets, fit), t, g, groups = per_sample, ts, gs.astype(np.float64), "sample"
    fitted = scales[:, None] * g + offsets[:, None]
    relation, applied_to, mean, std = _read_affine(scales, offsets, Moments.of(g), Moments.of(t), fit, knobs, groups)
    known = known_constants(mean, std, knobs.known_tolerance) if mean is not None else None
    tolerance = knobs.shared_tolerance
    shared = bool(np.allclose(scales, scales.mean(), rtol=tolerance)
                  and np.allclose(offsets, offsets.mean(), rtol=tolerance, atol=ZERO_OFFSET))
    return AffineFit(scales, offsets, fit, cosine_similarity(fitted, t), relation, applied_to, mean, std, known,
                     groups, shared, scale_name(float(scales.mean()), knobs.scale_name_tolerance))


def _group_fits(t: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Least-squares ``t = a * g + b`` per row: (a, b, the worst row's R^2)."""
    g_mean, t_mean = g.mean(axis=1), t.mean(axis=1)
    gc, tc = g - g_mean[:, None], t - t_mean[:, None]
    var_g, var_t = (gc ** 2).sum(axis=1), (tc ** 2).sum(axis=1)
    cov = (gc * tc).sum(axis=1)
    live = var_g > 0
    scales = np.where(live, cov / np.where(live, var_g, 1.0), 0.0)
    offsets = t_mean - scales * g_mean
    r2 = np.where(live & (var_t > 0), cov ** 2 / np.where(live, var_g, 1.0) / np.where(var_t > 0, var_t, 1.0),
                  np.where(var_t == 0, 1.0, 0.0))
    return scales, offsets, float(r2.min()) if r2.size else float("nan")


@dataclass(frozen=True)
class Moments:
    """What reading an affine map needs of one side, per group (channel or sample): its mean, std,
    smallest and largest value, and whether every value is a whole number (None: not known)."""

    mean: np.ndarray
    std: np.ndarray
    low: np.ndarray
    high: np.ndarray
    integral: bool | None

    @classmethod
    def of(cls, rows: np.ndarray) -> Moments:
        return cls(rows.mean(axis=1), rows.std(axis=1), rows.min(axis=1), rows.max(axis=1),
                   bool(np.all(rows == np.round(rows))))

    @property
    def rms(self) -> np.ndarray:
        return np.sqrt(self.mean ** 2 + self.std ** 2)

    @property
    def spread(self) -> float:
        """The standard deviation over every group together (equal sizes)."""
        return float(np.sqrt(np.mean(self.std ** 2) + np.var(self.mean)))

    def standardised(self, knobs: ProbeKnobs) -> bool:
        """Every group has zero mean and unit variance within ``standardised_tolerance``."""
        return bool(np.all(np.abs(self.mean) <= knobs.standardised_tolerance)
                    and np.all(np.abs(self.std - 1.0) <= knobs.standardised_tolerance))

    def looks_raw(self) -> bool:
        """Values as a sensor or a decoder writes them: integers (pixels, 16-bit PCM), never negative,
        or float audio within [-1, 1]."""
        return bool(self.integral or self.low.min() >= 0 or (self.low.min() >= -1.0 and self.high.max() <= 1.0))


def _read_affine(scales: np.ndarray, offsets: np.ndarray, g: Moments, t: Moments, fit: float,
                 knobs: ProbeKnobs, groups: str = "channel"
                 ) -> tuple[str, str | None, np.ndarray | None, np.ndarray | None]:
    """What an affine map between the sides means (the module docstring)."""
    rms = g.rms
    identity_tol = knobs.identity_scale_tolerance
    if (np.allclose(scales, 1.0, atol=identity_tol)
            and np.all(np.abs(offsets) <= identity_tol * np.maximum(rms, 1e-12))):
        return "identity", None, None, None
    if not np.isfinite(fit) or fit < knobs.relation_min_fit or np.any(scales == 0):
        return "none", None, None, None
    # A normalisation on the target side: target = (golden - m) / s, so s = 1 / a, m = -b / a.
    on_target = (-offsets / scales, 1.0 / scales)
    on_golden = (offsets, scales)                       # golden = (target - m) / s: s = a, m = b
    standard_t, standard_g = t.standardised(knobs), g.standardised(knobs)
    if standard_t != standard_g and scale_name(float(scales.mean()), knobs.scale_name_tolerance) is None:
        # One side is standardised (zero mean, unit variance per group) and the other is not: the
        # other side lacks that normalisation if it looks raw (or if the maps differ per sample: a
        # per-sample standardisation cannot be applied twice), else it got one more on top of it.
        other = g if standard_t else t
        if groups == "sample" or other.looks_raw():
            side = "target" if standard_t else "golden"
            return ("missing_normalization", side, *(on_target if side == "target" else on_golden))
        side = "golden" if standard_t else "target"
        return ("extra_normalization", side, *(on_target if side == "target" else on_golden))
    if np.all(np.abs(offsets) <= knobs.scale_offset_tolerance * np.abs(scales) * np.maximum(rms, 1e-12)):
        return "scale", None, None, None
    named = scale_name(float(scales.mean()), knobs.scale_name_tolerance)
    if named is not None and (t.low.min() < 0) == (g.low.min() < 0):
        # 255 (or 1/255, 32768) with an offset: the same normalisation applied to 0-255 values on one
        # side and to 0-1 values on the other ((255x - m) / s against (x - m) / s): the scale is the fault.
        return "scale", None, None, None
    target_raw, golden_raw = bool(t.low.min() >= 0), bool(g.low.min() >= 0)
    if target_raw != golden_raw:
        side = "golden" if target_raw else "target"
        return ("missing_normalization", side, *(on_golden if side == "golden" else on_target))
    if target_raw:                                      # both raw: a brightness/contrast change
        return "affine", None, None, None
    # Both normalised: the side whose implied constants are well known got the extra step (the
    # other side's would be the inverse map); failing that, the side whose spread is further from
    # unit variance.
    known = [known_constants(*on_target, knobs.known_tolerance) is not None,
             known_constants(*on_golden, knobs.known_tolerance) is not None]
    spread_t, spread_g = abs(np.log(max(t.spread, 1e-12))), abs(np.log(max(g.spread, 1e-12)))
    side = ("target" if known[0] else "golden") if known[0] != known[1] else (
        "target" if spread_t >= spread_g else "golden")
    return ("extra_normalization", side, *(on_target if side == "target" else on_golden))


def affine_from_statistics(target: Moments, golden: Moments, knobs: ProbeKnobs) -> AffineFit | None:
    """The affine map ``target = a * golden + b`` the two sides' whole-tensor statistics imply, when
    no dumps are given (an msprobe statistics comparison prints max, min, mean and norm): ``a`` and
    ``b`` from the extrema, checked on the mean and the std, which they must predict. ``fit`` is 1 minus
    the larger of those two discrepancies over the target's std (1: exact); the reading is that of the
    dumps' probe (:func:`affine_fit`). None when the golden side is constant or a statistic is missing."""
    values = np.array([target.mean, target.std, target.low, target.high,
                       golden.mean, golden.std, golden.low, golden.high], dtype=np.float64)
    span = float(golden.high[0] - golden.low[0])
    if values.shape[1] != 1 or not np.isfinite(values).all() or span <= 0 or target.std[0] <= 0:
        return None
    scale = (target.high - target.low) / span
    offset = target.low - scale * golden.low
    miss = max(abs(float(target.mean[0] - (scale[0] * golden.mean[0] + offset[0]))),
               abs(float(target.std[0] - scale[0] * golden.std[0])))
    fit = 1.0 - miss / float(target.std[0])
    relation, applied_to, mean, std = _read_affine(scale, offset, golden, target, fit, knobs)
    known = known_constants(mean, std, knobs.known_tolerance) if mean is not None else None
    return AffineFit(scale, offset, fit, float("nan"), relation, applied_to, mean, std, known, shared=True,
                     scale_known=scale_name(float(scale[0]), knobs.scale_name_tolerance))


def known_constants(mean: np.ndarray, std: np.ndarray, tolerance: float) -> str | None:
    """The name of the well-known constants ``mean``/``std`` match (RGB or BGR order), or None."""
    for name, (known_mean, known_std) in KNOWN_NORMALIZATIONS.items():
        for order in (1, -1):                          # RGB constants applied to BGR data too
            m = np.resize(np.asarray(known_mean[::order]), mean.shape)
            s = np.resize(np.asarray(known_std[::order]), std.shape)
            if np.allclose(mean, m, rtol=tolerance, atol=ZERO_MEAN) and np.allclose(std, s, rtol=tolerance):
                return name
    return None


def scale_name(factor: float, tolerance: float) -> str | None:
    """``255`` / ``1/255`` (or 256) when ``factor`` is the 0-255 vs 0-1 scale, ``32768`` / ``1/32768``
    when it is 16-bit PCM against float audio, within ``tolerance`` (relative; knob scale_name_tolerance)."""
    for name, value in (("255", 255.0), ("1/255", 1 / 255.0), ("256", 256.0), ("1/256", 1 / 256.0),
                        ("32768", 32768.0), ("1/32768", 1 / 32768.0)):
        if abs(factor / value - 1) < tolerance:
            return name
    return None


def exact_fit(observed: np.ndarray, predicted: np.ndarray) -> float:
    """R² of ``predicted`` as a prediction of ``observed`` with nothing fitted: 1 - SSE / SST
    (1 exact, 0 no better than the mean, negative worse; NaN for a constant ``observed``)."""
    o, f = observed.astype(np.float64).reshape(-1), predicted.astype(np.float64).reshape(-1)
    total = float(((o - o.mean()) ** 2).sum())
    if o.size != f.size or total <= 0:
        return float("nan")
    return 1.0 - float(((o - f) ** 2).sum()) / total


def normalization_fits(target: np.ndarray, golden: np.ndarray, mean: np.ndarray, std: np.ndarray
                       ) -> tuple[float, float] | None:
    """How well a *known* normalisation ``(x - mean) / std`` (per channel, e.g. the one a build folds
    into the model) relates the two inputs, with nothing fitted:

    - again: the target is the golden input normalised once more, ``t = (g - mean) / std``;
    - expected: the target is the raw input the normalising model expects, ``g = (t - mean) / std``.

    None when the constants do not fit the tensors (another channel count, other sizes)."""
    if target.size != golden.size or target.ndim not in (1, 2, 3, 4):
        return None
    t = target.astype(np.float64)
    g = golden.astype(np.float64).reshape(t.shape)
    mean, std = np.asarray(mean, dtype=np.float64).reshape(-1), np.asarray(std, dtype=np.float64).reshape(-1)
    size = max(mean.size, std.size)
    axis = _constants_axis(t.shape, size)
    if mean.size == 1 and std.size == 1:
        shape: tuple[int, ...] = ()
    elif axis is not None:
        shape = tuple(-1 if i == axis else 1 for i in range(t.ndim))
    else:
        return None
    m, s = np.resize(mean, size).reshape(shape), np.resize(std, size).reshape(shape)
    return exact_fit(t, (g - m) / s), exact_fit(g, (t - m) / s)


def _constants_axis(shape: tuple[int, ...], size: int) -> int | None:
    """The axis per-channel constants of ``size`` values apply along: the image channel axis when it has
    that size, else dimension 1 (NCHW's C, the feature axis of [N, F, T] speech features), else the
    last (the features of [N, T, F]); None when no axis has that size."""
    for axis in (channel_axis(shape), 1 if len(shape) > 1 else None, len(shape) - 1):
        if axis is not None and shape[axis] == size:
            return axis
    return None


def normalization_stats_errors(target: tuple[float, float], golden: tuple[float, float], mean: float, std: float,
                               abs_tolerance: float, rel_tolerance: float) -> dict[str, float]:
    """How well the whole-tensor (mean, std) of the two inputs - all a comparison table keeps of them
    (msaccucmp's StandardDeviation cell) - fit a *known* normalisation ``(x - mean) / std``, with
    nothing fitted. Each value is the larger of the mean's and the std's discrepancy between the
    statistics predicted from one side and the other side's own, in units of their rounding
    (``abs_tolerance + rel_tolerance * |value|`` per printed number, carried through the map):
    <= 1 is consistent within it.

    - ``again``: the target is the golden input normalised once more, ``t = (g - mean) / std``;
    - ``expected``: the target is the raw input a normalising model expects, ``g = (t - mean) / std``;
    - ``identity``: the statistics as they are (large: the normalisation is told apart from no change).
    """
    def tolerance(value: float) -> float:
        return abs_tolerance + rel_tolerance * abs(value)

    def error(source: tuple[float, float], result: tuple[float, float], m: float, s: float) -> float:
        predicted = ((source[0] - m) / s, source[1] / abs(s))
        return max(abs(p - r) / (tolerance(v) / abs(s) + tolerance(r))
                   for p, r, v in zip(predicted, result, source, strict=True))

    return {"again": error(golden, target, mean, std), "expected": error(target, golden, mean, std),
            "identity": error(golden, target, 0.0, 1.0)}
