"""``layer`` facts: one per quantised layer, with the evidence the quantisation rules judge.

For every layer the build quantises (the layers its config names, else every Conv/MatMul/Gemm of
an int8 build) a fact holds:

- what the comparison observed: the layer's output error and its *own* share of it (output error
  minus the error its inputs already carried: a layer is ranked by what it adds, not by what it
  inherits), and its rank among the quantised layers by that share;
- weight statistics from the ONNX model (``--graph``), or from the golden dump of its weight input:
  per-output-channel ranges and their spread, asymmetry, outliers;
- activation statistics from the golden dump of its input (``--dumps``): one-sided (after ReLU,
  Softmax...), offset, outliers, saturation of the calibrated range; without dumps, whether the
  producing op's type makes it one-sided;
- a simulation: the layer recomputed from its golden input with weights and input quantised the
  way the config says, and the alternative ways (per-channel weights, asymmetric activations,
  percentile calibration), each scored by cosine, relative distance and SQNR against the float
  result. With no golden input the weights alone are compared. ``sim_share`` is how much of the
  observed own error the configured quantisation reproduces: near 1, quantisation explains it
  (raise that layer's precision or change the setting); near 0, the target adds error the
  quantisation does not explain (a backend problem: the vendor's triage).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..facts.builder import clean_fact
from ..facts.catalogs import load_catalog, op_type_of_name
from ..facts.thresholds import Thresholds
from ..graph.model import Graph, Node
from ..graph.weights import channel_axes
from .quant import (
    DEFAULT_PERCENTILE,
    Scheme,
    activation_stats,
    calibrated_range,
    cosine,
    fake_quantize,
    relative_distance,
    scale_error,
    sqnr_db,
    weight_quant_stats,
)
from .quant_config import QuantSettings

#: op types (lower case, both the ONNX and the Ascend/Cambricon spelling) an int8 build quantises.
QUANTISABLE = frozenset({
    "conv", "conv2d", "conv3d", "convolution", "depthwiseconv2d", "depthwiseconv2dnative", "convtranspose",
    "conv2dtranspose", "deconvolution", "matmul", "matmulv2", "batchmatmul", "batchmatmulv2", "gemm",
    "fullyconnected", "innerproduct", "linear",
})
#: op types whose output is never negative: symmetric int8 wastes half its codes on it.
ONE_SIDED = frozenset({"relu", "relu6", "softmax", "softmaxv2", "sigmoid", "hardsigmoid", "abs", "exp",
                       "sqrt", "softplus", "reducemax"})
MAX_LAYERS = 32               # layer facts per run: the worst by own error, plus every entry point
VARIANTS = ("config", "per_channel", "asymmetric", "percentile", "minmax")
#: The fix offered for a layer: the first alternative in this order that brings it within its
#: thresholds (else the one with the smallest error) - the least disruptive change first: weights
#: only, then the zero point, then the calibration.
PREFERENCE = ("per_channel", "asymmetric", "minmax", "percentile")


@dataclass
class LayerInputs:
    """Where a layer's tensors come from."""

    graph: Graph | None = None
    model: Path | None = None                       # ONNX file the graph came from (weights)
    golden_input: Callable[[str, int], np.ndarray | None] | None = None   # (op, slot) -> golden tensor
    simulation: pd.DataFrame | None = None          # per-op facts of the framework's fake-quant simulation


def layer_facts(settings: QuantSettings, ops: pd.DataFrame, thresholds: Thresholds,
                sources: LayerInputs) -> list[dict[str, Any]]:
    """The ``layer`` facts of an int8 build (none for a float build: nothing is quantised)."""
    if not settings.quantized or ops.empty:
        return []
    chosen = _quantised_ops(settings, ops)
    if chosen.empty:
        return []
    own = (chosen["out_red"] - chosen["in_red"].fillna(0.0)).clip(lower=0.0)
    keep = own.fillna(-1.0).nlargest(MAX_LAYERS).index.union(chosen.index[chosen["error_enters"].astype(bool)])
    weights = _weights(chosen.loc[keep], sources)
    sensitive = load_catalog("int8_sensitive")
    facts = []
    for index in keep:
        row = chosen.loc[index]
        fact = _observed(int(index), row, float(own[index]) if pd.notna(own[index]) else None, len(chosen),
                         thresholds)
        fact.update(_config_fields(settings))
        fact.update(_sensitivity(row, sensitive))
        fact.update(_evidence(row, settings, sources, weights.get(int(index)), fact))
        fact.update(_fix(fact, weights.get(int(index)), settings))
        facts.append(fact)
    _rank(facts)
    return [clean_fact(fact) for fact in facts]


def _rank(facts: list[dict[str, Any]]) -> None:
    """``contribution``: the error the layer adds on its own. From the simulation when there is one
    (the layer recomputed from consistent, golden inputs), else from the comparison (output error
    minus input error). ``own_rank`` 1 is the largest."""
    for fact in facts:
        simulated = fact.get("sim_level") == "output"
        value = fact.get("sim_red_config") if simulated else fact.get("own_red")
        fact["contribution"] = value
        fact["contribution_source"] = "simulation" if simulated else "comparison"
    ordered = sorted(facts, key=lambda f: -(f["contribution"] if f["contribution"] is not None else -1.0))
    for rank, fact in enumerate(ordered, start=1):
        fact["own_rank"] = rank


def _config_fields(settings: QuantSettings) -> dict[str, Any]:
    """What the build says about every layer (``cfg_*``), next to what the evidence found."""
    return {"cfg_weight_granularity": settings.weight_granularity or "per_tensor",
            "cfg_weight_granularity_stated": settings.weight_granularity is not None,
            "cfg_activation_algo": "asymmetric" if settings.activation_symmetric is False else "symmetric",
            "cfg_calibration": settings.calibration or "minmax",
            "cfg_precision": settings.precision, "cfg_float_precision": settings.float_precision or "float32"}


def _sensitivity(row: pd.Series, catalog: dict[str, str]) -> dict[str, Any]:
    """Whether the op is of a type an int8 build should leave in float (knowledge/ops/int8_sensitive.yaml)."""
    types = [str(row["op_type"] or "")] + [op_type_of_name(n) for n in str(row["golden_ops"] or "").split(",") if n]
    for op_type in types:
        if op_type.lower() in catalog:
            return {"int8_sensitive": True, "sensitive_type": op_type, "sensitive_reason": catalog[op_type.lower()]}
    return {"int8_sensitive": False}


#: what to change in the build (the generic knobs of advisor.remedy) for each alternative
SETTING_OF = {"per_channel": "weight_quant_granularity=per_channel",
              "asymmetric": "activation_quant_algo=asymmetric",
              "percentile": "activation_calibration=percentile;activation_percentile={percentile:g}",
              "minmax": "activation_calibration=minmax"}


def _fix(fact: dict[str, Any], weight: _Weight | None, settings: QuantSettings) -> dict[str, Any]:
    """The remedy fields (advisor.remedy reads them from findings): the setting of the best
    alternative the simulation found, and the layer to keep in float if settings do not suffice."""
    golden = weight.golden if weight is not None and weight.node is not None else (
        str(fact["golden_ops"]).split(",")[0] if fact.get("golden_ops") else fact["op"])
    out = {"fix_keep": fact["op"], "fix_keep_golden": golden, "fix_keep_types": str(fact["op_type"] or ""),
           "fix_precision": settings.float_precision if settings.float_precision in ("float16", "float32")
           else "float32"}
    chosen = fact.get("fix_alternative")
    if chosen and fact.get("fix_gain", 0) > 1:
        out["fix_settings"] = SETTING_OF[chosen].format(percentile=DEFAULT_PERCENTILE)
    return out


def _quantised_ops(settings: QuantSettings, ops: pd.DataFrame) -> pd.DataFrame:
    names = ops["op"].astype(str)
    golden = ops["golden_ops"].fillna("").astype(str).str.split(",")
    if settings.layers:
        listed = set(settings.layers)
        chosen = names.isin(listed) | golden.map(lambda gs: bool(listed.intersection(gs)))
    else:
        chosen = ops["op_type"].fillna("").str.lower().isin(QUANTISABLE)
    if settings.float_layers:
        kept = set(settings.float_layers)
        chosen &= ~(names.isin(kept) | golden.map(lambda gs: bool(kept.intersection(gs))))
    return ops[chosen.to_numpy(dtype=bool) & ops["out_red"].notna().to_numpy()]


def _observed(index: int, row: pd.Series, own: float | None, layers: int, thresholds: Thresholds
              ) -> dict[str, Any]:
    limits = thresholds.for_dtype(row["dtype"] if isinstance(row["dtype"], str) else None)
    return {"id": f"layer:{index}", "fact": "layer", "op": str(row["op"]), "index": index,
            "op_type": row["op_type"], "golden_ops": row["golden_ops"], "dtype": row["dtype"],
            "out_cosine": row["out_cosine"], "in_cosine": row["in_cosine"], "out_red": row["out_red"],
            "in_red": row["in_red"], "out_deviates": bool(row["out_deviates"]),
            "inputs_agree": bool(row["inputs_agree"]), "error_enters": bool(row["error_enters"]),
            "own_red": own, "quantised_layers": layers,
            "red_threshold": limits["relative_euclidean_distance"], "cosine_threshold": limits["cosine"],
            "scale_threshold": limits["scale"]}


# --- weights -----------------------------------------------------------------------------------

@dataclass
class _Weight:
    name: str
    golden: str                   # the golden node holding it
    array: np.ndarray
    axis: int                     # output-channel axis (non-negative)
    node: Node | None             # the ONNX node (attributes); None for a dumped tensor
    activation: bool = False      # a dumped second input of a MatMul: an activation, not a weight


MATMUL_TYPES = frozenset({"matmul", "matmulv2", "batchmatmul", "batchmatmulv2", "fullyconnected", "linear",
                          "innerproduct"})


def _names(row: pd.Series) -> list[str]:
    """The op's golden names, then its own."""
    return [n for n in str(row["golden_ops"] or "").split(",") if n] + [str(row["op"])]


def _weights(chosen: pd.DataFrame, sources: LayerInputs) -> dict[int, _Weight]:
    """Each chosen layer's weight: a float ONNX initializer (``--graph model.onnx``), else the golden
    dump of its second input (an activation for a MatMul; a weight, compared alone, for others)."""
    graph = sources.graph
    found: dict[int, tuple[Node, str]] = {}
    if graph is not None and graph.format == "onnx":
        for index, row in chosen.iterrows():
            node = _golden_node(graph, row)
            if node is not None and len(node.inputs) > 1 and node.inputs[1].tensor in graph.initializers:
                found[int(index)] = (node, node.inputs[1].tensor)
    arrays: dict[str, np.ndarray] = {}
    if found and sources.model is not None:
        from ..graph.onnx_file import read_onnx_weights
        arrays = read_onnx_weights(sources.model, {name for _, name in found.values()})
    axes = channel_axes(node for node, _ in found.values())
    weights = {}
    for index, (node, name) in found.items():
        array = arrays.get(name)
        if _usable(array):
            weights[index] = _Weight(name, node.name, array, axes.get(name, 0) % array.ndim, node)
    if sources.golden_input is not None:
        for index, row in chosen.iterrows():
            if int(index) in weights:
                continue
            array = sources.golden_input(str(row["op"]), 1)
            if _usable(array):
                matmul = str(row["op_type"]).lower() in MATMUL_TYPES
                weights[int(index)] = _Weight(f"{row['op']}:input:1", str(row["op"]), array,
                                              array.ndim - 1 if matmul else 0, None, activation=matmul)
    return weights


def _usable(array: np.ndarray | None) -> bool:
    """A float tensor of at least two dimensions, not empty and finite (an int8 initializer is
    already quantised: there is nothing to re-quantise)."""
    return (array is not None and array.dtype.kind == "f" and array.ndim >= 2 and array.size > 0
            and bool(np.isfinite(array).all()))


def _golden_node(graph: Graph, row: pd.Series) -> Node | None:
    for name in _names(row):
        if name in graph and graph.node(name).op_type.lower() in QUANTISABLE:
            return graph.node(name)
    return None


# --- evidence ----------------------------------------------------------------------------------

#: golden inputs larger than this many samples are simulated on their first samples (a conv
#: recomputed six times over a large batch would cost seconds and gigabytes per layer)
MAX_SIM_SAMPLES = 2


def _evidence(row: pd.Series, settings: QuantSettings, sources: LayerInputs, weight: _Weight | None,
              observed: dict[str, Any]) -> dict[str, Any]:
    op = str(row["op"])
    out: dict[str, Any] = {"has_weights": weight is not None}
    x = sources.golden_input(op, 0) if sources.golden_input is not None else None
    if x is not None and (x.dtype.kind != "f" or x.size == 0):
        x = None
    out["has_activation"] = x is not None
    out["weight_only"] = settings.weight_only
    producer = _producer_type(sources.graph, weight.node if weight else None, row)
    if producer:
        out["producer_type"] = producer
        out["one_sided_by_type"] = producer.lower() in ONE_SIDED
    if weight is not None:
        stats = weight_quant_stats(weight.array, weight.axis)
        out.update(weight=weight.name, w_channels=stats.channels, w_channel_ratio=stats.channel_ratio,
                   w_channel_ratio_median=stats.channel_ratio_median, w_asymmetry=stats.asymmetry,
                   w_outlier_ratio=stats.outlier_ratio)
    act_scheme = settings.activation_scheme(f"{op}:input:0") if not settings.weight_only else None
    if x is not None:
        finite = np.isfinite(x)
        if not finite.all():
            out["a_nonfinite"] = int(x.size - finite.sum())
    if x is not None and act_scheme is not None and out.get("a_nonfinite", 0) < x.size:
        calibrated = calibrated_range(x, act_scheme)
        stats = activation_stats(x, calibrated)
        widest = max(abs(stats.low), abs(stats.high))
        out.update(a_min=stats.low, a_max=stats.high, a_one_sided=stats.one_sided, a_offset=stats.offset,
                   a_outlier_ratio=stats.outlier_ratio, a_calibration=act_scheme.describe(),
                   a_calibration_zh=act_scheme.describe("zh"), a_range_low=calibrated[0],
                   a_range_high=calibrated[1], a_saturation=stats.saturation,
                   a_range_ratio=max(abs(calibrated[0]), abs(calibrated[1])) / widest if widest else 1.0)
    if out.get("a_nonfinite"):
        out["sim_note"] = f"the golden input holds {out['a_nonfinite']} non-finite values: not recomputed"
        x = None
    sims, note = _simulate(row, settings, weight, x, act_scheme)
    if note:
        out["sim_note"] = note
    if sims:
        out.update(_scores(sims, observed))
    if sources.simulation is not None:
        out.update(_framework_simulation(row, sources.simulation, observed))
    return out


def _framework_simulation(row: pd.Series, simulated: pd.DataFrame, observed: dict[str, Any]) -> dict[str, Any]:
    """The same layer in the framework's fake-quant simulation (``--simulation``): found by the target
    op's name, else by a golden name, among the simulation comparison's ops."""
    names = _names(row)
    match = simulated[simulated["op"].isin(names)]
    if match.empty:
        golden = simulated["golden_ops"].fillna("").astype(str).str.split(",")
        match = simulated[golden.map(lambda gs: bool(set(gs) & set(names))).to_numpy(dtype=bool)]
    if match.empty or pd.isna(match.iloc[0]["out_red"]):
        return {"fw_sim_known": False}
    sim = match.iloc[0]
    own = max(float(sim["out_red"]) - (float(sim["in_red"]) if pd.notna(sim["in_red"]) else 0.0), 0.0)
    out = {"fw_sim_known": True, "fw_sim_cosine": sim["out_cosine"], "fw_sim_red": sim["out_red"],
           "fw_sim_deviates": bool(sim["out_deviates"])}
    if observed.get("own_red"):
        out["fw_sim_share"] = min(own / observed["own_red"], 10.0)
    return out


def _producer_type(graph: Graph | None, node: Node | None, row: pd.Series) -> str | None:
    if graph is None:
        return None
    if node is None:
        node = next((graph.node(n) for n in _names(row) if n in graph), None)
    if node is None or not node.inputs or node.inputs[0].source not in graph:
        return None
    return graph.node(node.inputs[0].source).op_type


Simulated = dict[str, tuple[np.ndarray, np.ndarray, str]]


def _simulate(row: pd.Series, settings: QuantSettings, weight: _Weight | None, x: np.ndarray | None,
              act_scheme: Scheme | None) -> tuple[Simulated, str | None]:
    """(variant -> (float reference, quantised result, what was compared: output or weights), why the
    layer was not recomputed from its golden input, if it was not)."""
    w_cfg = settings.weight_scheme()
    is_weight = weight is not None and not weight.activation
    schemes: dict[str, tuple[Scheme | None, Scheme | None]] = {"config": (w_cfg, act_scheme)}
    # Each alternative changes one setting and keeps the others as configured.
    if not w_cfg.per_channel and is_weight:
        schemes["per_channel"] = (Scheme(per_channel=True, symmetric=w_cfg.symmetric), act_scheme)
    if act_scheme is not None and act_scheme.symmetric:
        schemes["asymmetric"] = (w_cfg, replace(act_scheme, symmetric=False))
    if act_scheme is not None and act_scheme.calibration != "percentile":
        schemes["percentile"] = (w_cfg, Scheme(symmetric=act_scheme.symmetric, calibration="percentile"))
    if act_scheme is not None and act_scheme.calibration != "minmax":
        schemes["minmax"] = (w_cfg, Scheme(symmetric=act_scheme.symmetric))
    compute = _layer_function(row, weight)
    note = None
    if x is not None and compute is not None:
        x = x[:MAX_SIM_SAMPLES] if x.ndim >= 3 and x.shape[0] > MAX_SIM_SAMPLES else x
        w = weight.array if weight is not None else None
        try:
            reference = compute(x, w)
            results = {}
            for name, (ws, xs) in schemes.items():
                xq = fake_quantize(x, xs) if xs is not None else x
                if w is None or ws is None:
                    wq = w
                elif weight.activation:   # a dumped second input of a MatMul, quantised like an activation
                    wq = fake_quantize(w, settings.activation_scheme(f"{row['op']}:input:1"))
                else:
                    wq = fake_quantize(w, ws, weight.axis)
                results[name] = (reference, compute(xq, wq), "output")
            return results, None
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


def _scores(sims: Simulated, observed: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    within: dict[str, bool] = {}
    for name, (reference, approx, level) in sims.items():
        out["sim_level"] = level
        out[f"sim_cos_{name}"] = cosine(reference, approx)
        out[f"sim_red_{name}"] = relative_distance(reference, approx)
        out[f"sim_sqnr_{name}"] = min(sqnr_db(reference, approx), 300.0)
        scale = scale_error(reference, approx)
        # judged like the comparison judges the op: cosine, distance and scale against its dtype's limits
        within[name] = bool(out[f"sim_cos_{name}"] >= observed["cosine_threshold"]
                            and out[f"sim_red_{name}"] <= observed["red_threshold"]
                            and scale <= observed["scale_threshold"])
    base = out["sim_red_config"]
    out["sim_config_deviates"] = not within["config"]
    alternatives = [n for n in VARIANTS[1:] if f"sim_red_{n}" in out]
    for name in alternatives:
        out[f"{name}_gain"] = base / max(out[f"sim_red_{name}"], 1e-12)
        out[f"{name}_passes"] = within[name]
    out["any_alternative_passes"] = any(out[f"{name}_passes"] for name in alternatives)
    if alternatives:
        best = min(alternatives, key=lambda n: out[f"sim_red_{n}"])
        out.update(best_alternative=best, best_alternative_cos=out[f"sim_cos_{best}"], best_gain=out[f"{best}_gain"])
        chosen = next((n for n in PREFERENCE if n in alternatives and out[f"{n}_passes"]), best)
        out.update(fix_alternative=chosen, fix_cos=out[f"sim_cos_{chosen}"], fix_gain=out[f"{chosen}_gain"])
    own = observed.get("own_red")
    if out["sim_level"] == "output" and own:
        out["sim_share"] = min(base / own, 10.0)
    return out


# --- the layer's own computation ---------------------------------------------------------------

def _layer_function(row: pd.Series, weight: _Weight | None) -> Callable[[np.ndarray, np.ndarray | None],
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
    if op_type in MATMUL_TYPES:
        return lambda x, w: np.matmul(x.astype(np.float64), w.astype(np.float64))
    if op_type == "gemm":
        def gemm(x: np.ndarray, w: np.ndarray) -> np.ndarray:
            if x.ndim != 2:
                raise ValueError(f"Gemm needs a 2-D input, not {x.ndim}-D")
            a = x.astype(np.float64).T if attrs.get("transA") else x.astype(np.float64)
            b = w.astype(np.float64).T if attrs.get("transB") else w.astype(np.float64)
            return float(attrs.get("alpha", 1.0)) * (a @ b)
        return gemm
    if op_type in ("conv", "conv2d", "convolution") and weight.array.ndim == 4:
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
