"""Evidence probes: does a simple preprocessing mistake turn the golden tensor into the target one?

Each probe tests one family of hypotheses on a target/golden pair and returns plain numbers with a
confidence in [0, 1]; rules decide what they mean. Pure numpy, vectorised, any op's input:

==============  ======================================================================================
channel order   a permutation of the channels (RGB <-> BGR): the per-channel correlation matrix, best
                assignment (every permutation up to 4 channels; identity, reversal or the row-wise
                best match beyond). Correlation ignores per-channel gain and offset, so a swap is
                found even when the normalisation differs too.
normalisation   a per-channel affine map ``target = a * golden + b`` (least squares, R^2). Read as:
                identity; a pure scale (0-255 vs 0-1); a normalisation ``(x - mean) / std`` that one
                side got once more than the other - *extra* when neither side looks raw (a second
                normalisation), *missing* when one side looks raw (never below zero) and the other
                normalised. The implied mean/std are reported and named when they are well known.
layout          the golden NCHW tensor's NHWC buffer read as NCHW (or the reverse), two dumps in
                different layouts, or a target dumped in the other layout's shape that holds the golden
                buffer untransposed (fed to a model that converts its input layout).
geometry        flipped, shifted, zoomed (another crop box), cropped or resized (:mod:`geometry`).
samples         per sample of a batch: are the samples transformed *differently* (one flipped, one
                shifted, one untouched)? Deterministic preprocessing bugs treat every sample alike;
                random augmentation left on does not.
==============  ======================================================================================

:func:`probe_pair` runs them in order: a layout reinterpretation is undone before the channel
probe, a channel permutation before the affine fit, so combined mistakes (BGR *and* 0-255) show
as both. Geometry and the per-sample survey run when those explain nothing.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tensors.metrics import cosine_similarity, relative_euclidean_distance
from .geometry import GeometryMatch, match_geometry, pearson

#: Well-known normalisation constants (mean, std per RGB channel), matched within 3 %.
KNOWN_NORMALIZATIONS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "ImageNet (0-255)": ((123.675, 116.28, 103.53), (58.395, 57.12, 57.375)),
    "ImageNet (0-1)": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "CLIP (0-1)": ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    "[-1, 1] from 0-255 (127.5/128)": ((127.5,), (128.0,)),
    "[-1, 1] from 0-255 (127.5/127.5)": ((127.5,), (127.5,)),
    "[-1, 1] from 0-1 (0.5/0.5)": ((0.5,), (0.5,)),
}
KNOWN_TOLERANCE = 0.03
MAX_SAMPLES = 16           # samples of a batch surveyed one by one
EXPLAINED_FIT = 0.995      # a hypothesis with this fit explains the tensor: later probes are skipped
SAMPLE_FIT = 0.98          # a sample counts as explained by an augmentation at this fit


def ramp(value: float, low: float, high: float) -> float:
    """0 below ``low``, 1 above ``high``, linear between (0 for NaN)."""
    if not np.isfinite(value):
        return 0.0
    return float(np.clip((value - low) / (high - low), 0.0, 1.0))


def channel_axis(shape: tuple[int, ...]) -> int | None:
    """The channel axis of an image-like tensor: 1 for NCHW, 3 for NHWC (when the last dim is small
    and dim 1 is not), 0/2 for CHW/HWC; None for tensors without channels (1-D, 2-D)."""
    if len(shape) == 4:
        return 3 if shape[3] <= 4 < shape[1] else 1
    if len(shape) == 3:
        return 2 if shape[2] <= 4 < shape[0] else 0
    return None


def _planes(x: np.ndarray, axis: int) -> np.ndarray:
    """(C, M): each channel's values as a row."""
    return np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)


# --- channel order ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChannelOrder:
    permutation: tuple[int, ...]    # target channel i holds golden channel permutation[i]
    fit: float                      # mean per-channel correlation under the permutation
    identity_fit: float
    cosine: float                   # plain cosine after reordering the target's channels
    identity_cosine: float
    confidence: float               # that a non-identity permutation explains the target

    @property
    def swapped(self) -> bool:
        return self.permutation != tuple(range(len(self.permutation)))

    @property
    def reversed(self) -> bool:
        return len(self.permutation) > 1 and self.permutation == tuple(reversed(range(len(self.permutation))))


def correlation_matrix(target: np.ndarray, golden: np.ndarray, axis: int) -> np.ndarray:
    """``R[i, j]``: correlation of target channel i with golden channel j (0 where undefined)."""
    def standardised(x: np.ndarray) -> np.ndarray:
        rows = _planes(x, axis).astype(np.float64)
        rows = rows - rows.mean(axis=1, keepdims=True)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)

    return standardised(target) @ standardised(golden).T


def channel_order(target: np.ndarray, golden: np.ndarray, axis: int) -> ChannelOrder:
    matrix = correlation_matrix(target, golden, axis)
    channels = matrix.shape[0]
    identity = tuple(range(channels))
    if channels <= 4:
        candidates = list(itertools.permutations(identity))
    else:
        candidates = [identity, tuple(reversed(identity))]
        rowwise = tuple(int(j) for j in np.argmax(matrix, axis=1))
        if sorted(rowwise) == list(identity):
            candidates.append(rowwise)
    rows = np.arange(channels)
    scores = [float(matrix[rows, list(p)].mean()) for p in candidates]
    best = candidates[int(np.argmax(scores))]
    fit, identity_fit = max(scores), scores[0]
    reordered = np.take(golden, list(best), axis=axis)
    confidence = ramp(fit, 0.98, 0.998) * ramp(fit - identity_fit, 0.002, 0.02) if best != identity else 0.0
    return ChannelOrder(best, fit, identity_fit, cosine_similarity(target, reordered),
                        cosine_similarity(target, golden), round(confidence, 3))


# --- normalisation (affine fit) -----------------------------------------------------------------

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
    confidence: float

    @property
    def shared(self) -> bool:
        """One scale and offset for every channel (within 1 %)."""
        return bool(np.allclose(self.scales, self.scales.mean(), rtol=0.01)
                    and np.allclose(self.offsets, self.offsets.mean(), rtol=0.01, atol=1e-6))


def affine_fit(target: np.ndarray, golden: np.ndarray, axis: int | None) -> AffineFit:
    t = _planes(target, axis) if axis is not None else target.reshape(1, -1)
    g = _planes(golden, axis) if axis is not None else golden.reshape(1, -1)
    t, g = t.astype(np.float64), g.astype(np.float64)
    g_mean, t_mean = g.mean(axis=1), t.mean(axis=1)
    gc, tc = g - g_mean[:, None], t - t_mean[:, None]
    var_g, var_t = (gc ** 2).sum(axis=1), (tc ** 2).sum(axis=1)
    cov = (gc * tc).sum(axis=1)
    live = var_g > 0
    scales = np.where(live, cov / np.where(live, var_g, 1.0), 0.0)
    offsets = t_mean - scales * g_mean
    r2 = np.where(live & (var_t > 0), cov ** 2 / np.where(live, var_g, 1.0) / np.where(var_t > 0, var_t, 1.0),
                  np.where(var_t == 0, 1.0, 0.0))
    fit = float(r2.min()) if r2.size else float("nan")
    fitted = scales[:, None] * g + offsets[:, None]
    relation, applied_to, mean, std = _read_affine(scales, offsets, g, t, fit)
    known = _known_constants(mean, std) if mean is not None else None
    weight = {"identity": 0.0, "none": 0.0, "affine": 0.5}.get(relation, 1.0)
    confidence = weight * ramp(fit, 0.98, 0.9995)
    return AffineFit(scales, offsets, fit, cosine_similarity(fitted, t), relation, applied_to, mean, std, known,
                     round(confidence, 3))


def _read_affine(scales: np.ndarray, offsets: np.ndarray, g: np.ndarray, t: np.ndarray, fit: float
                 ) -> tuple[str, str | None, np.ndarray | None, np.ndarray | None]:
    """What an affine map between the sides means (the module docstring's normalisation row)."""
    rms = np.sqrt((g ** 2).mean(axis=1))
    if np.allclose(scales, 1.0, atol=0.01) and np.all(np.abs(offsets) <= 0.01 * np.maximum(rms, 1e-12)):
        return "identity", None, None, None
    if not np.isfinite(fit) or fit < 0.9 or np.any(scales == 0):
        return "none", None, None, None
    # A normalisation on the target side: target = (golden - m) / s, so s = 1 / a, m = -b / a.
    on_target = (-offsets / scales, 1.0 / scales)
    on_golden = (offsets, scales)                       # golden = (target - m) / s: s = a, m = b
    if np.all(np.abs(offsets) <= 0.02 * np.abs(scales) * np.maximum(rms, 1e-12)):
        return "scale", None, None, None
    target_raw, golden_raw = bool(t.min() >= 0), bool(g.min() >= 0)
    if target_raw != golden_raw:
        side = "golden" if target_raw else "target"
        return ("missing_normalization", side, *(on_golden if side == "golden" else on_target))
    if target_raw:                                      # both raw: a brightness/contrast change
        return "affine", None, None, None
    # Both normalised: the side whose spread is further from unit variance got the extra step.
    spread_t, spread_g = abs(np.log(max(t.std(), 1e-12))), abs(np.log(max(g.std(), 1e-12)))
    side = "target" if spread_t >= spread_g else "golden"
    return ("extra_normalization", side, *(on_target if side == "target" else on_golden))


def _known_constants(mean: np.ndarray, std: np.ndarray) -> str | None:
    for name, (known_mean, known_std) in KNOWN_NORMALIZATIONS.items():
        for order in (1, -1):                          # RGB constants applied to BGR data too
            m = np.resize(np.asarray(known_mean[::order]), mean.shape)
            s = np.resize(np.asarray(known_std[::order]), std.shape)
            if np.allclose(mean, m, rtol=KNOWN_TOLERANCE, atol=1e-3) and np.allclose(std, s, rtol=KNOWN_TOLERANCE):
                return name
    return None


def scale_name(factor: float) -> str | None:
    """``255`` / ``1/255`` (or 256) when ``factor`` is the 0-255 vs 0-1 scale, within 2 %."""
    for name, value in (("255", 255.0), ("1/255", 1 / 255.0), ("256", 256.0), ("1/256", 1 / 256.0)):
        if abs(factor / value - 1) < 0.02:
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
    axis = channel_axis(t.shape)
    if mean.size == 1 and std.size == 1:
        shape: tuple[int, ...] = ()
    elif axis is not None and t.shape[axis] == max(mean.size, std.size):
        shape = tuple(-1 if i == axis else 1 for i in range(t.ndim))
    else:
        return None
    size = max(mean.size, std.size)
    m, s = np.resize(mean, size).reshape(shape), np.resize(std, size).reshape(shape)
    return exact_fit(t, (g - m) / s), exact_fit(g, (t - m) / s)


# --- layout -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LayoutMatch:
    hypothesis: str                 # nhwc_buffer_as_nchw | nchw_buffer_as_nhwc | layouts_differ |
                                    # buffer_not_transposed | none
    fit: float
    identity_fit: float
    cosine: float
    confidence: float
    golden_view: np.ndarray | None = field(default=None, repr=False)   # golden reinterpreted, target's shape


def layout_reinterpretation(target: np.ndarray, golden: np.ndarray) -> LayoutMatch | None:
    """The golden tensor's buffer read in the other layout (4-D or 3-D image-like, equal sizes), or
    None. Works for NCHW and NHWC goldens alike (the channel axis says which one it is)."""
    axis = channel_axis(golden.shape)
    if target.size != golden.size or golden.ndim not in (3, 4) or axis is None:
        return None
    g = golden if golden.ndim == 4 else golden[None]
    axis += 4 - golden.ndim
    nchw = axis == 1
    flat_t = target.reshape(-1).astype(np.float64)
    identity_fit = pearson(flat_t, g.reshape(-1).astype(np.float64))
    # "Other" buffer read as this layout; this buffer read as the other layout, then converted.
    other_order = (0, 2, 3, 1) if nchw else (0, 3, 1, 2)
    other_shape = tuple(g.shape[i] for i in other_order)
    back = (0, 3, 1, 2) if nchw else (0, 2, 3, 1)
    candidates = {
        "nhwc_buffer_as_nchw" if nchw else "nchw_buffer_as_nhwc": g.transpose(other_order).reshape(-1),
        "nchw_buffer_as_nhwc" if nchw else "nhwc_buffer_as_nchw": g.reshape(other_shape).transpose(back).reshape(-1),
    }
    fits = {name: pearson(flat_t, view.astype(np.float64)) for name, view in candidates.items()}
    if target.shape == other_shape[4 - golden.ndim:] and target.shape != golden.shape:
        # The target's shape is the golden one in the other layout, yet its buffer is the golden
        # buffer unchanged: data in one layout declared (and read) as the other.
        confidence = ramp(identity_fit, 0.98, 0.998) * ramp(identity_fit - max(fits.values()), 0.01, 0.1)
        if confidence > 0:
            return LayoutMatch("buffer_not_transposed", identity_fit, identity_fit, cosine_similarity(target, golden),
                               round(confidence, 3), golden.reshape(target.shape))
    name = max(fits, key=lambda k: fits[k] if np.isfinite(fits[k]) else -2.0)
    fit = fits[name]
    view_name = name
    first = next(iter(candidates))
    if name == first and target.shape != golden.shape and sorted(target.shape) == sorted(golden.shape):
        name = "layouts_differ"        # the same data, dumped NHWC on one side and NCHW on the other
    confidence = ramp(fit, 0.98, 0.998) * ramp(fit - identity_fit, 0.01, 0.1)
    if confidence == 0:
        return LayoutMatch("none", fit, identity_fit, cosine_similarity(target, golden), 0.0)
    view = candidates[view_name].reshape(target.shape)
    return LayoutMatch(name, fit, identity_fit, cosine_similarity(target, view), round(confidence, 3), view)


# --- geometry and the samples of a batch --------------------------------------------------------

def image_stack(x: np.ndarray, axis: int | None) -> np.ndarray | None:
    """(N, H, W) grey planes of an image-like tensor (channels averaged), or None."""
    if axis is None or x.ndim not in (3, 4):
        return None
    moved = np.moveaxis(x, axis, 0 if x.ndim == 3 else 1).astype(np.float64)
    planes = moved.mean(axis=0 if x.ndim == 3 else 1)
    return planes[None] if x.ndim == 3 else planes


@dataclass(frozen=True)
class SampleSurvey:
    samples: int
    identical: int                  # samples equal to their golden sample
    explained: int                  # samples another single augmentation explains
    labels: tuple[str, ...]         # per sample: identity, hflip, shift(1,-2), affine, unexplained...
    varies: bool                    # the samples were not all treated alike
    confidence: float               # that random augmentation (per-sample transforms) explains the batch


def survey_samples(target: np.ndarray, golden: np.ndarray, axis: int | None) -> SampleSurvey | None:
    """Per-sample explanation of a batch (N >= 2 image-like samples of equal shapes), or None."""
    t_planes, g_planes = image_stack(target, axis), image_stack(golden, axis)
    if t_planes is None or g_planes is None or t_planes.shape != g_planes.shape or len(t_planes) < 2:
        return None
    labels = []
    for t, g in zip(t_planes[:MAX_SAMPLES], g_planes[:MAX_SAMPLES], strict=True):
        labels.append(_sample_label(t, g))
    identical = labels.count("identity")
    explained = sum(label not in ("identity", "unexplained") for label in labels)
    varies = len(set(labels)) > 1 and explained > 0
    confidence = ramp((identical + explained) / len(labels), 0.6, 1.0) * (1.0 if varies else 0.0)
    return SampleSurvey(len(labels), identical, explained, tuple(labels), varies, round(confidence, 3))


def _sample_label(t: np.ndarray, g: np.ndarray) -> str:
    if cosine_similarity(t, g) >= 0.99999:
        return "identity"
    match = match_geometry(t, g)
    if match is not None and match.kind != "identity" and match.fit >= SAMPLE_FIT:
        return match.label()
    if pearson(t, g) >= EXPLAINED_FIT:
        return "affine"                      # brightness / contrast jitter
    return "unexplained"


# --- all probes on one pair ---------------------------------------------------------------------

@dataclass
class ProbeReport:
    """Every probe's result for one target/golden pair; :meth:`fields` flattens it for a fact."""

    shape: tuple[int, ...]
    golden_shape: tuple[int, ...]
    cosine: float
    red: float
    axis: int | None = None
    layout: LayoutMatch | None = None
    channels: ChannelOrder | None = None
    affine: AffineFit | None = None
    geometry: GeometryMatch | None = None
    samples: SampleSurvey | None = None
    stats: dict[str, float] = field(default_factory=dict)
    skipped: str | None = None       # why nothing was probed

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": _shape_text(self.shape), "cosine": self.cosine, "red": self.red,
                               "probed": self.skipped is None, **self.stats}
        if self.skipped:
            out["skipped"] = self.skipped
        if self.golden_shape != self.shape:
            out["golden_shape"] = _shape_text(self.golden_shape)
        if self.axis is not None:
            out["channel_axis"] = self.axis
            out["channels"] = self.shape[self.axis]
        if self.layout is not None:
            out.update(layout_match=self.layout.hypothesis, layout_fit=self.layout.fit,
                       layout_cosine=self.layout.cosine, layout_confidence=self.layout.confidence)
        if self.channels is not None:
            c = self.channels
            out.update(channel_order=",".join(map(str, c.permutation)), channel_swapped=c.swapped,
                       channel_reversed=c.reversed, channel_fit=c.fit, channel_identity_fit=c.identity_fit,
                       channel_cosine=c.cosine, channel_confidence=c.confidence)
        if self.affine is not None:
            out.update(_affine_fields(self.affine))
        if self.geometry is not None:
            g = self.geometry
            out.update(geometry=g.kind, geometry_label=g.label(), geometry_fit=g.fit,
                       geometry_identity_fit=g.identity_fit, geometry_shift_y=g.shift[0],
                       geometry_shift_x=g.shift[1], geometry_scale=g.scale,
                       geometry_confidence=round(ramp(g.fit, 0.95, 0.995), 3) if g.kind != "identity" else 0.0)
        if self.samples is not None:
            s = self.samples
            out.update(samples=s.samples, samples_identical=s.identical, samples_explained=s.explained,
                       sample_transforms=",".join(s.labels), transforms_vary=s.varies,
                       random_confidence=s.confidence)
        return out


def _affine_fields(a: AffineFit) -> dict[str, Any]:
    out: dict[str, Any] = {"norm_relation": a.relation, "norm_fit": a.fit, "norm_cosine": a.cosine,
                           "norm_scale": float(a.scales.mean()), "norm_offset": float(a.offsets.mean()),
                           "norm_shared": a.shared, "norm_confidence": a.confidence}
    if a.relation == "scale":
        out["scale_factor"] = float(a.scales.mean())
        name = scale_name(float(a.scales.mean()))
        if name:
            out["scale_known"] = name
    if a.applied_to:
        out["norm_applied_to"] = a.applied_to
    if a.mean is not None and a.std is not None:
        out["norm_mean"] = _numbers_text(a.mean)
        out["norm_std"] = _numbers_text(a.std)
        out["norm_mean_value"] = float(np.mean(a.mean))
        out["norm_std_value"] = float(np.mean(a.std))
    if a.known:
        out["norm_known"] = a.known
    return out


def _numbers_text(values: np.ndarray) -> str:
    """``127.5,127.5,127.5`` (4 significant digits; one number when all agree)."""
    texts = [f"{v:.4g}" for v in np.asarray(values, dtype=np.float64)]
    return texts[0] if len(set(texts)) == 1 else ",".join(texts)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def probe_pair(target: np.ndarray, golden: np.ndarray) -> ProbeReport:
    """Run every probe that applies to the pair (module docstring for the order)."""
    t = np.asarray(target).astype(np.float64)
    g = np.asarray(golden).astype(np.float64)
    same_size = t.size == g.size
    report = ProbeReport(
        shape=tuple(t.shape), golden_shape=tuple(g.shape),
        cosine=cosine_similarity(t, g) if same_size else float("nan"),
        red=relative_euclidean_distance(t, g) if same_size else float("nan"),
        stats=_stats(t, g))
    if not (np.isfinite(t).all() and np.isfinite(g).all()):
        report.skipped = "a side holds NaN or inf"
        return report
    if not same_size:
        report.axis = channel_axis(t.shape)
        report.geometry = _geometry(t, g, report.axis)
        return report
    report.axis = channel_axis(t.shape) if t.shape == g.shape or t.ndim == g.ndim else None
    aligned = g.reshape(t.shape) if t.shape != g.shape and t.ndim != g.ndim else g
    report.layout = layout_reinterpretation(t, g)
    if report.layout is not None and report.layout.golden_view is not None:
        aligned = report.layout.golden_view
    if aligned.shape != t.shape:
        return report
    if report.axis is not None and t.shape[report.axis] > 1:
        report.channels = channel_order(t, aligned, report.axis)
        if report.channels.confidence >= 0.5:
            aligned = np.take(aligned, list(report.channels.permutation), axis=report.axis)
    report.affine = affine_fit(t, aligned, report.axis)
    explained = max((p.fit for p in (report.layout, report.channels, report.affine)
                     if p is not None and p.confidence > 0), default=0.0)
    if report.affine.relation != "identity" and explained < EXPLAINED_FIT:
        report.geometry = _geometry(t, g, report.axis)
        report.samples = survey_samples(t, g, report.axis)
    return report


def _geometry(t: np.ndarray, g: np.ndarray, axis: int | None) -> GeometryMatch | None:
    """Geometry of the first sample (the batch survey covers the others)."""
    t_planes, g_planes = image_stack(t, axis), image_stack(g, axis if t.shape == g.shape else channel_axis(g.shape))
    if t_planes is None or g_planes is None:
        return None
    return match_geometry(t_planes[0], g_planes[0])


def _stats(t: np.ndarray, g: np.ndarray) -> dict[str, float]:
    if not t.size or not g.size:
        return {}
    # Infinities make the spread NaN and an all-NaN side warns: facts leave NaN fields out anyway.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {"target_min": float(np.nanmin(t)), "target_max": float(np.nanmax(t)),
                "target_std": float(np.nanstd(t)),
                "golden_min": float(np.nanmin(g)), "golden_max": float(np.nanmax(g)),
                "golden_std": float(np.nanstd(g))}
