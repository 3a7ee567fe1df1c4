"""Evidence probes: does a simple preprocessing mistake turn the golden tensor into the target one?

Each probe tests one family of hypotheses on a target/golden pair and returns measured numbers -
the fit under its best hypothesis, the fit of the tensors as they are, the margin between them -
and rules decide what they mean (rules/core/preprocessing/). Pure numpy, vectorised, any op's input:

==============  ======================================================================================
channel order   a permutation of the channels (RGB <-> BGR): the per-channel correlation matrix, best
                assignment (:mod:`channels`). Correlation ignores per-channel gain and offset, so a
                swap is found even when the normalisation differs too.
normalisation   a per-channel affine map ``target = a * golden + b`` (:mod:`normalisation`): identity,
                a pure scale, an extra or a missing ``(x - mean) / std``, with the implied constants.
layout          the golden NCHW tensor's NHWC buffer read as NCHW (or the reverse), two dumps in
                different layouts, or a target dumped in the other layout's shape that holds the golden
                buffer untransposed (fed to a model that converts its input layout) (:mod:`channels`).
geometry        flipped, shifted, zoomed (another crop box), cropped or resized (:mod:`geometry`).
samples         per sample of a batch: are the samples transformed *differently*? (:mod:`samples`)
==============  ======================================================================================

:func:`probe_pair` runs them in order: a layout reinterpretation is undone before the channel
probe, a channel permutation before the affine fit, so combined mistakes (BGR *and* 0-255) show
as both. Geometry and the per-sample survey run when those explain nothing. What steers that
order is measurement knobs (:class:`~advisor.evidence.probe_knobs.ProbeKnobs`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tensors.metrics import cosine_similarity, relative_euclidean_distance
from .channels import ChannelOrder, LayoutMatch, channel_axis, channel_order, image_stack, layout_reinterpretation
from .geometry import GeometryMatch, match_geometry
from .normalisation import AffineFit, affine_fit, exact_fit, normalization_fits
from .probe_knobs import ProbeKnobs
from .samples import SampleSurvey, survey_samples

__all__ = ["ProbeKnobs", "ProbeReport", "channel_axis", "exact_fit", "layout_reinterpretation",
           "normalization_fits", "probe_pair"]


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
            lm = self.layout
            out.update(layout_match=lm.hypothesis, layout_fit=lm.fit, layout_identity_fit=lm.identity_fit,
                       layout_margin=lm.margin, layout_cosine=lm.cosine)
        if self.channels is not None:
            c = self.channels
            out.update(channel_order=",".join(map(str, c.permutation)), channel_swapped=c.swapped,
                       channel_reversed=c.reversed, channel_fit=c.fit, channel_identity_fit=c.identity_fit,
                       channel_margin=c.margin, channel_cosine=c.cosine)
        if self.affine is not None:
            out.update(affine_fields(self.affine))
        if self.geometry is not None:
            g = self.geometry
            out.update(geometry=g.kind, geometry_label=g.label(), geometry_fit=g.fit,
                       geometry_identity_fit=g.identity_fit, geometry_margin=g.fit - g.identity_fit,
                       geometry_shift_y=g.shift[0], geometry_shift_x=g.shift[1], geometry_scale=g.scale)
        if self.samples is not None:
            s = self.samples
            out.update(samples=s.samples, samples_identical=s.identical, samples_explained=s.explained,
                       samples_explained_share=s.explained_share, sample_transforms=",".join(s.labels),
                       transforms_vary=s.varies)
        return out


def affine_fields(a: AffineFit) -> dict[str, Any]:
    out: dict[str, Any] = {"norm_relation": a.relation, "norm_fit": a.fit, "norm_cosine": a.cosine,
                           "norm_scale": float(a.scales.mean()), "norm_offset": float(a.offsets.mean()),
                           "norm_shared": a.shared, "norm_groups": a.groups}
    if a.relation == "scale":
        out["scale_factor"] = float(a.scales.mean())
        if a.scale_known:
            out["scale_known"] = a.scale_known
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


def probe_pair(target: np.ndarray, golden: np.ndarray, knobs: ProbeKnobs | None = None) -> ProbeReport:
    """Run every probe that applies to the pair (module docstring for the order). ``knobs``: the
    ``probes`` measurement knobs (knowledge/thresholds.yaml's when None)."""
    knobs = knobs if knobs is not None else ProbeKnobs.from_thresholds()
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
        report.geometry = _geometry(t, g, report.axis, knobs)
        return report
    report.axis = channel_axis(t.shape) if t.shape == g.shape or t.ndim == g.ndim else None
    aligned = g.reshape(t.shape) if t.shape != g.shape and t.ndim != g.ndim else g
    report.layout = layout_reinterpretation(t, g, min_fit=knobs.layout_min_fit, min_margin=knobs.layout_min_margin)
    if report.layout is not None and report.layout.golden_view is not None:
        aligned = report.layout.golden_view
    if aligned.shape != t.shape:
        return report
    explained = [report.layout.fit] if report.layout is not None and report.layout.hypothesis != "none" else []
    if report.axis is not None and t.shape[report.axis] > 1:
        report.channels = channel_order(t, aligned, report.axis)
        c = report.channels
        if c.swapped and c.fit >= knobs.apply_channel_fit and c.margin >= knobs.apply_channel_margin:
            aligned = np.take(aligned, list(c.permutation), axis=report.axis)
            explained.append(c.fit)
    report.affine = affine_fit(t, aligned, report.axis, knobs)
    if report.affine.relation not in ("identity", "none"):
        explained.append(report.affine.fit)
    if report.affine.relation != "identity" and max(explained, default=0.0) < knobs.explained_fit:
        report.geometry = _geometry(t, g, report.axis, knobs)
        report.samples = survey_samples(t, g, report.axis, knobs)
    return report


def _geometry(t: np.ndarray, g: np.ndarray, axis: int | None, knobs: ProbeKnobs) -> GeometryMatch | None:
    """Geometry of the first sample (the batch survey covers the others)."""
    t_planes, g_planes = image_stack(t, axis), image_stack(g, axis if t.shape == g.shape else channel_axis(g.shape))
    if t_planes is None or g_planes is None:
        return None
    return match_geometry(t_planes[0], g_planes[0], knobs.geometry_simpler_margin)


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
