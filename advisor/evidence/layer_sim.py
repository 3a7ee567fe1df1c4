"""A quantised layer recomputed in numpy: from its golden input, with its weight and input
quantised the way the build says and each alternative way (:mod:`advisor.evidence.quant`), scored
against the float result.

Which alternatives apply is a computation (an alternative changes one setting the build does not
already have); the order in which a fix is offered is knowledge (knowledge/quant_alternatives.yaml);
whether a fix is worth a finding is the rules' ``min_gain``. The knobs of the recomputation itself
(how many samples, which percentile) are ``knobs: quant:`` in knowledge/thresholds.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from ..catalogs import load_catalog
from ..errors import KnowledgeError
from ..facts.thresholds import Thresholds
from ..graph.model import Node
from ..resources import data_dir
from ..yamlfile import load_yaml
from .quant import Scheme, cosine, fake_quantize, relative_distance, scale_error, sqnr_db, within_limits
from .quant_config import QuantSettings

#: the alternatives the simulation knows how to apply (each changes one setting of the build)
ALTERNATIVES = ("per_channel", "asymmetric", "percentile", "minmax")


@dataclass(frozen=True)
class QuantKnobs:
    """``knobs: quant:`` of knowledge/thresholds.yaml (``--threshold quant.NAME=VALUE``)."""

    max_layers: int             # layer facts per run: the worst by own error, plus every entry point
    max_sim_samples: int        # a batched golden input is recomputed on its first samples only
    percentile: float           # the percentile the "percentile" calibration alternative keeps (and the one
                                # assumed when a build asks for percentile calibration without a value)
    weight_outlier_percentile: float       # w_outlier_ratio: max|w| over this percentile of |w|
    activation_outlier_percentile: float   # a_outlier_ratio: max|x| over this percentile of |x|
    share_cap: float            # sim_share / fw_sim_share are capped here
    range_search_max: float     # the widest activation range searched, x the input's own (reproducing_range)
    range_search_steps: int     # bisection steps of that search

    @classmethod
    def from_thresholds(cls, thresholds: Thresholds) -> QuantKnobs:
        return cls(**{f.name: thresholds.knob("quant", f.name) for f in fields(cls)})


@dataclass
class LayerWeight:
    name: str
    golden: str                   # the golden node holding it
    array: np.ndarray
    axis: int                     # output-channel axis (non-negative)
    node: Node | None             # the ONNX node (attributes); None for a dumped tensor
    activation: bool = False      # a dumped second input of a MatMul: an activation, not a weight


@cache
def fix_order() -> dict[str, str]:
    """knowledge/quant_alternatives.yaml: alternative -> its remedy setting, in the order a fix is offered."""
    path = data_dir("knowledge") / "quant_alternatives.yaml"
    raw = load_yaml(path, KnowledgeError)
    entries = raw.get("alternatives") if isinstance(raw, dict) else None
    if not isinstance(entries, dict) or set(entries) != set(ALTERNATIVES):
        raise KnowledgeError(f"'alternatives' must map exactly {', '.join(ALTERNATIVES)} to "
                             "{setting, what}, in the order a fix is offered", path=path, field="alternatives")
    order: dict[str, str] = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("setting"), str):
            raise KnowledgeError("needs a 'setting' (knob=value;...)", path=path, field=f"alternatives.{name}")
        order[str(name)] = entry["setting"]
    return order


Simulated = dict[str, tuple[np.ndarray, np.ndarray, str]]


def simulate(row: pd.Series, settings: QuantSettings, weight: LayerWeight | None, x: np.ndarray | None,
             act_scheme: Scheme | None, knobs: QuantKnobs, second: Scheme | None = None
             ) -> tuple[Simulated, str | None]:
    """(variant -> (float reference, quantised result, what was compared: output or weights), why the
    layer was not recomputed from its golden input, if it was not). ``second``: how the build
    quantises a MatMul's second input when that is an activation (a dumped tensor, not a weight)."""
    w_cfg = settings.weight_scheme()
    is_weight = weight is not None and not weight.activation
    schemes: dict[str, tuple[Scheme | None, Scheme | None]] = {"config": (w_cfg, act_scheme)}
    # Each alternative changes one setting and keeps the others as configured.
    if not w_cfg.per_channel and is_weight:
        schemes["per_channel"] = (Scheme(per_channel=True, symmetric=w_cfg.symmetric), act_scheme)
    if act_scheme is not None and act_scheme.symmetric:
        schemes["asymmetric"] = (w_cfg, replace(act_scheme, symmetric=False))
    if act_scheme is not None and act_scheme.calibration != "percentile":
        schemes["percentile"] = (w_cfg, Scheme(symmetric=act_scheme.symmetric, calibration="percentile",
                                               percentile=knobs.percentile))
    if act_scheme is not None and act_scheme.calibration != "minmax":
        schemes["minmax"] = (w_cfg, Scheme(symmetric=act_scheme.symmetric))
    compute = layer_function(row, weight)
    note = None
    if x is not None and compute is not None:
        x = _samples(x, knobs)
        w = weight.array if weight is not None else None
        try:
            reference = compute(x, w)
            return {name: (reference, compute(fake_quantize(x, xs) if xs is not None else x,
                                              _quantised_weight(weight, ws, second)), "output")
                    for name, (ws, xs) in schemes.items()}, None
        except ValueError as exc:    # the golden input does not fit the weight (layout, flattening)
            note = (f"golden input {tuple(x.shape)} does not fit "
                    f"{'weight ' + str(tuple(w.shape)) if w is not None else 'the op'} ({exc}): weights compared alone")
    elif x is not None and act_scheme is not None:
        note = f"no numpy recomputation of {row['op_type']}{'' if is_weight else ' without its weight'}"
    results = {}
    if is_weight:   # no usable golden input: what quantisation does to the weights themselves
        for name, (ws, _) in schemes.items():
            if name in ("config", "per_channel") and ws is not None:
                results[name] = (weight.array, fake_quantize(weight.array, ws, weight.axis), "weights")
    return results, note


def _samples(x: np.ndarray, knobs: QuantKnobs) -> np.ndarray:
    """A batched golden input cut to its first ``max_sim_samples`` samples."""
    samples = int(knobs.max_sim_samples)
    return x[:samples] if x.ndim >= 3 and x.shape[0] > samples else x


def _quantised_weight(weight: LayerWeight | None, scheme: Scheme | None, second: Scheme | None
                      ) -> np.ndarray | None:
    """The layer's weight as the int8 kernel sees it under ``scheme`` (unchanged without one)."""
    if weight is None or scheme is None:
        return weight.array if weight is not None else None
    if weight.activation:   # a dumped second input of a MatMul, quantised like an activation
        return fake_quantize(weight.array, second if second is not None else Scheme())
    return fake_quantize(weight.array, scheme, weight.axis)


def reproducing_range(row: pd.Series, settings: QuantSettings, weight: LayerWeight | None, x: np.ndarray,
                      act_scheme: Scheme, observed_red: float, knobs: QuantKnobs, second: Scheme | None = None
                      ) -> dict[str, Any]:
    """How wide a calibrated activation range must be for the layer, re-quantised with the build's
    symmetry and weights, to add the error the comparison observed (``observed_red``, its own
    relative distance): the range as a multiple of the golden input's own [min, max] (0 included),
    found by bisection in log scale up to ``knobs.range_search_max`` times it. A build whose range
    is not in its config was calibrated on other data; this says which range would explain the
    target, and the rules judge whether such a range is plausible. {} when the layer cannot be
    recomputed or even the widest range searched adds less error."""
    compute = layer_function(row, weight)
    finite = x[np.isfinite(x)]
    if compute is None or finite.size == 0 or not observed_red > 0:
        return {}
    x = _samples(x, knobs)
    low, high = min(float(finite.min()), 0.0), max(float(finite.max()), 0.0)
    try:
        reference = compute(x, weight.array if weight is not None else None)
        wq = _quantised_weight(weight, settings.weight_scheme(), second)
    except ValueError:
        return {}

    def error(ratio: float) -> float:
        scheme = Scheme(symmetric=act_scheme.symmetric, calibration="range", low=ratio * low, high=ratio * high)
        return relative_distance(reference, compute(fake_quantize(x, scheme), wq))

    lo, hi = 0.0, float(np.log(knobs.range_search_max))
    if not error(float(np.exp(hi))) >= observed_red:
        return {}
    for _ in range(int(knobs.range_search_steps)):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if error(float(np.exp(mid))) >= observed_red else (mid, hi)
    ratio = float(np.exp(hi))
    return {"a_reproducing_range_ratio": ratio, "a_reproducing_range_low": ratio * low,
            "a_reproducing_range_high": ratio * high}


def scores(sims: Simulated, observed: dict[str, Any], knobs: QuantKnobs) -> dict[str, Any]:
    """Per variant: cosine, relative distance, SQNR; per alternative: its gain (simulated error as
    configured / with it) and whether it brings the layer within the op's dtype thresholds; the
    best alternative (smallest error) and the fix offered (knowledge/quant_alternatives.yaml)."""
    out: dict[str, Any] = {}
    within: dict[str, bool] = {}
    limits = {"cosine": observed["cosine_threshold"], "relative_euclidean_distance": observed["red_threshold"],
              "scale": observed["scale_threshold"]}
    for name, (reference, approx, level) in sims.items():
        out["sim_level"] = level
        out[f"sim_cos_{name}"] = cosine(reference, approx)
        out[f"sim_red_{name}"] = relative_distance(reference, approx)
        out[f"sim_sqnr_{name}"] = min(sqnr_db(reference, approx), 300.0)
        scale = scale_error(reference, approx)
        # judged like the comparison judges the op: cosine, distance and scale against its dtype's limits
        within[name] = within_limits(out[f"sim_cos_{name}"], out[f"sim_red_{name}"], scale, limits)
        out[f"sim_scale_{name}"] = scale
    base = out["sim_red_config"]
    out["sim_config_deviates"] = not within["config"]
    alternatives = [n for n in ALTERNATIVES if f"sim_red_{n}" in out]
    for name in alternatives:
        out[f"{name}_gain"] = base / max(out[f"sim_red_{name}"], 1e-12)
        out[f"{name}_passes"] = within[name]
    out["any_alternative_passes"] = any(out[f"{name}_passes"] for name in alternatives)
    if alternatives:
        best = min(alternatives, key=lambda n: out[f"sim_red_{n}"])
        out.update(best_alternative=best, best_alternative_cos=out[f"sim_cos_{best}"], best_gain=out[f"{best}_gain"])
        chosen = next((n for n in fix_order() if n in alternatives and out[f"{n}_passes"]), best)
        out.update(fix_alternative=chosen, fix_cos=out[f"sim_cos_{chosen}"], fix_gain=out[f"{chosen}_gain"])
    own = observed.get("own_red")
    if out["sim_level"] == "output" and own:
        out["sim_share"] = min(base / own, knobs.share_cap)
    return out


# --- the layer's own computation ---------------------------------------------------------------

def layer_function(row: pd.Series, weight: LayerWeight | None) -> Callable[[np.ndarray, np.ndarray | None],
                                                                           np.ndarray] | None:
    """The float computation of the layer from its input 0 and weight (bias left out: it adds the
    same to both results and no quantisation error); None when it cannot be recomputed."""
    op_type = (weight.node.op_type if weight is not None and weight.node is not None else str(row["op_type"])).lower()
    attrs = dict(weight.node.attributes) if weight is not None and weight.node is not None else {}
    unary = UNARY.get(op_type)
    if unary is not None:
        return lambda x, _: unary(x.astype(np.float64))
    if weight is None or (weight.node is None and not weight.activation):
        return None   # a weighted layer without its weight, or a dumped weight without its attributes
    if op_type in load_catalog("matmul_like"):
        return lambda x, w: np.matmul(x.astype(np.float64), w.astype(np.float64))
    if op_type == "gemm":
        def gemm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
            if x.ndim != 2:
                raise ValueError(f"Gemm needs a 2-D input, not {x.ndim}-D")
            a = x.astype(np.float64).T if attrs.get("transA") else x.astype(np.float64)
            b = w.astype(np.float64).T if attrs.get("transB") else w.astype(np.float64)
            return float(attrs.get("alpha", 1.0)) * (a @ b)
        return gemm
    if op_type in ("conv", "conv2d", "convolution") and weight.array.ndim == 4:   # what conv2d() computes
        return lambda x, w: conv2d(x, w, attrs)
    return None


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


#: int8-sensitive ops of one input the simulation can recompute (over the last axis for Softmax,
#: the axis every exporter of attention uses)
UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "softmax": _softmax, "softmaxv2": _softmax, "exp": np.exp, "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
}


def conv2d(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """ONNX Conv (NCHW, 2-D, groups, strides, pads, dilations) in numpy."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    if x.ndim == 3:
        x = x[None]
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", b"NOTSET"):
        raise ValueError(f"auto_pad {attrs['auto_pad']} is not recomputed")
    if x.ndim != 4 or x.shape[1] != w.shape[1] * int(attrs.get("group", 1)):
        raise ValueError(f"a Conv of weight {tuple(w.shape)} and group {attrs.get('group', 1)} needs NCHW input "
                         f"with {w.shape[1] * int(attrs.get('group', 1))} channels")
    strides = tuple(attrs.get("strides", (1, 1)))
    dilations = tuple(attrs.get("dilations", (1, 1)))
    pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
    group = int(attrs.get("group", 1))
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    out_c, in_per_group, kh, kw = w.shape
    span_h, span_w = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    windows = np.lib.stride_tricks.sliding_window_view(x, (span_h, span_w), axis=(2, 3))
    windows = windows[:, :, ::strides[0], ::strides[1], ::dilations[0], ::dilations[1]]
    outs = []
    per_group_out = out_c // group
    for g in range(group):
        xs = windows[:, g * in_per_group:(g + 1) * in_per_group]
        ws = w[g * per_group_out:(g + 1) * per_group_out]
        outs.append(np.einsum("nchwij,ocij->nohw", xs, ws, optimize=True))
    return np.concatenate(outs, axis=1)
