"""``layer`` facts: one per quantised layer, with the evidence the quantisation rules judge.

For every layer the build quantises (the layers its config names, else every op of a type in
knowledge/ops/int8_quantisable.yaml) a fact holds:

- what the comparison observed: the layer's output error and its *own* share of it (output error
  minus the error its inputs already carried: a layer is ranked by what it adds, not by what it
  inherits), and its rank among the quantised layers by that share;
- weight statistics from the ONNX model (``--graph``), or from the golden dump of its weight input:
  per-output-channel ranges and their spread, asymmetry, outliers;
- activation statistics from the golden dump of its input (``--dumps``): one-sided (after ReLU,
  Softmax...), offset, outliers, saturation of the calibrated range; without dumps, whether the
  producing op's type makes it one-sided (knowledge/ops/one_sided.yaml);
- a simulation (:mod:`advisor.evidence.layer_sim`): the layer recomputed from its golden input with
  weights and input quantised the way the config says, and the alternative ways (per-channel
  weights, asymmetric activations, percentile calibration), each scored by cosine, relative
  distance and SQNR against the float result. With no golden input the weights alone are compared.
  ``sim_share`` is how much of the observed own error the configured quantisation reproduces: the
  rules read it (near 1, quantisation explains it; near 0, the target adds error the quantisation
  does not explain: a backend problem) with their own ``min_share`` / ``max_share``.

How many layers and samples are recomputed are the ``quant`` knobs of knowledge/thresholds.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..catalogs import load_catalog, op_type_of_name
from ..facts.builder import clean_fact
from ..facts.thresholds import Thresholds
from ..graph.model import Graph, Node
from ..graph.weights import channel_axes
from ..ingest.table import lower_isin
from .layer_sim import LayerWeight, QuantKnobs, fix_order, reproducing_range, scores, simulate
from .quant import Scheme, activation_stats, calibrated_range, weight_quant_stats
from .quant_config import QuantSettings


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
    knobs = QuantKnobs.from_thresholds(thresholds)
    own = (chosen["out_red"] - chosen["in_red"].fillna(0.0)).clip(lower=0.0)
    keep = own.fillna(-1.0).nlargest(int(knobs.max_layers)).index.union(
        chosen.index[chosen["error_enters"].astype(bool)])
    weights = _weights(chosen.loc[keep], sources)
    sensitive = load_catalog("int8_sensitive")
    facts = []
    for index in keep:
        row = chosen.loc[index]
        fact = _observed(int(index), row, float(own[index]) if pd.notna(own[index]) else None, len(chosen),
                         thresholds)
        fact.update(_config_fields(settings))
        fact.update(_sensitivity(row, sensitive))
        fact.update(_evidence(row, settings, sources, weights.get(int(index)), fact, knobs))
        fact.update(_fix(fact, weights.get(int(index)), settings, knobs))
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
    types = [_text(row["op_type"])] + [op_type_of_name(n) for n in _text(row["golden_ops"]).split(",") if n]
    for op_type in types:
        if op_type.lower() in catalog:
            return {"int8_sensitive": True, "sensitive_type": op_type, "sensitive_reason": catalog[op_type.lower()]}
    return {"int8_sensitive": False}


def _fix(fact: dict[str, Any], weight: LayerWeight | None, settings: QuantSettings, knobs: QuantKnobs
         ) -> dict[str, Any]:
    """The remedy fields (advisor.remedy reads them from findings): the setting of the alternative
    offered (knowledge/quant_alternatives.yaml), and the layer to keep in float if settings do not suffice."""
    golden = weight.golden if weight is not None and weight.node is not None else (
        str(fact["golden_ops"]).split(",")[0] if fact.get("golden_ops") else fact["op"])
    out = {"fix_keep": fact["op"], "fix_keep_golden": golden, "fix_keep_types": str(fact["op_type"] or ""),
           "fix_precision": settings.float_precision if settings.float_precision in ("float16", "float32")
           else "float32"}
    chosen = fact.get("fix_alternative")
    if chosen and fact.get("fix_gain", 0) > 1:
        out["fix_settings"] = fix_order()[chosen].format(percentile=knobs.percentile)
    return out


def _quantised_ops(settings: QuantSettings, ops: pd.DataFrame) -> pd.DataFrame:
    names = ops["op"].astype(str)
    golden = ops["golden_ops"].astype("string").fillna("").str.split(",")
    if settings.layers:
        listed = set(settings.layers)
        chosen = names.isin(listed) | golden.map(lambda gs: bool(listed.intersection(gs)))
    else:
        chosen = lower_isin(ops["op_type"], set(load_catalog("int8_quantisable")))
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

def _names(row: pd.Series) -> list[str]:
    """The op's golden names, then its own."""
    return [n for n in _text(row["golden_ops"]).split(",") if n] + [str(row["op"])]


def _text(value: Any) -> str:
    """A text cell as ``str``; "" for NA (None, NaN or pd.NA: a coded column's missing value is NaN)."""
    return "" if value is None or pd.isna(value) else str(value)


def _weights(chosen: pd.DataFrame, sources: LayerInputs) -> dict[int, LayerWeight]:
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
            weights[index] = LayerWeight(name, node.name, array, axes.get(name, 0) % array.ndim, node)
    if sources.golden_input is not None:
        matmul_like = load_catalog("matmul_like")
        for index, row in chosen.iterrows():
            if int(index) in weights:
                continue
            array = sources.golden_input(str(row["op"]), 1)
            if _usable(array):
                matmul = str(row["op_type"]).lower() in matmul_like
                weights[int(index)] = LayerWeight(f"{row['op']}:input:1", str(row["op"]), array,
                                                  array.ndim - 1 if matmul else 0, None, activation=matmul)
    return weights


def _usable(array: np.ndarray | None) -> bool:
    """A float tensor of at least two dimensions, not empty and finite (an int8 initializer is
    already quantised: there is nothing to re-quantise)."""
    return (array is not None and array.dtype.kind == "f" and array.ndim >= 2 and array.size > 0
            and bool(np.isfinite(array).all()))


def _golden_node(graph: Graph, row: pd.Series) -> Node | None:
    quantisable = load_catalog("int8_quantisable")
    for name in _names(row):
        if name in graph and graph.node(name).op_type.lower() in quantisable:
            return graph.node(name)
    return None


# --- evidence ----------------------------------------------------------------------------------

def _evidence(row: pd.Series, settings: QuantSettings, sources: LayerInputs, weight: LayerWeight | None,
              observed: dict[str, Any], knobs: QuantKnobs) -> dict[str, Any]:
    op = str(row["op"])
    out: dict[str, Any] = {"has_weights": weight is not None}
    x = sources.golden_input(op, 0) if sources.golden_input is not None else None
    if x is not None and (x.dtype.kind != "f" or x.size == 0):
        x = None
    out["has_activation"] = x is not None
    out["weight_only"] = settings.weight_only
    node = _layer_node(sources.graph, weight, row)
    producer = _producer_type(sources.graph, node)
    if producer:
        out["producer_type"] = producer
        out["one_sided_by_type"] = producer.lower() in load_catalog("one_sided")
    if weight is not None:
        stats = weight_quant_stats(weight.array, weight.axis, knobs.weight_outlier_percentile)
        out.update(weight=weight.name, w_channels=stats.channels, w_channel_ratio=stats.channel_ratio,
                   w_channel_ratio_median=stats.channel_ratio_median, w_asymmetry=stats.asymmetry,
                   w_outlier_ratio=stats.outlier_ratio)
    names = _input_names(sources.graph, node, row, 0)
    act_scheme = settings.activation_scheme(names, knobs.percentile) if not settings.weight_only else None
    second = settings.activation_scheme(_input_names(sources.graph, node, row, 1), knobs.percentile)
    if act_scheme is not None:
        key = settings.range_key(names)
        out["a_range_stated"] = key is not None
        if key is not None:
            out["a_range_tensor"] = key
    if x is not None:
        x = _activation(x, act_scheme, out, knobs.activation_outlier_percentile)
    sims, note = simulate(row, settings, weight, x, act_scheme, knobs, second)
    if note:
        out["sim_note"] = note
    if sims:
        out.update(scores(sims, observed, knobs))
        own = observed.get("own_red")
        # the range is the build's unknown: which range would explain what the target adds?
        if (x is not None and act_scheme is not None and not out["a_range_stated"] and own
                and out.get("sim_level") == "output" and out["sim_red_config"] < own):
            out.update(reproducing_range(row, settings, weight, x, act_scheme, own, knobs, second))
    if sources.simulation is not None:
        out.update(_framework_simulation(row, sources.simulation, observed, knobs))
    return out


def _activation(x: np.ndarray, scheme: Scheme | None, out: dict[str, Any], outlier_percentile: float
                ) -> np.ndarray | None:
    """The ``a_*`` statistics of the golden input into ``out``; the input itself, or None when it
    holds non-finite values (the layer is then not recomputed)."""
    finite = np.isfinite(x)
    if not finite.all():
        out["a_nonfinite"] = int(x.size - finite.sum())
    if scheme is not None and out.get("a_nonfinite", 0) < x.size:
        calibrated = calibrated_range(x, scheme)
        stats = activation_stats(x, outlier_percentile, calibrated)
        widest = max(abs(stats.low), abs(stats.high))
        out.update(a_min=stats.low, a_max=stats.high, a_one_sided=stats.one_sided, a_offset=stats.offset,
                   a_outlier_ratio=stats.outlier_ratio, a_calibration=scheme.describe(),
                   a_calibration_zh=scheme.describe("zh"), a_range_low=calibrated[0],
                   a_range_high=calibrated[1], a_saturation=stats.saturation,
                   a_range_ratio=max(abs(calibrated[0]), abs(calibrated[1])) / widest if widest else 1.0)
    if out.get("a_nonfinite"):
        out["sim_note"] = f"the golden input holds {out['a_nonfinite']} non-finite values: not recomputed"
        return None
    return x


def _input_names(graph: Graph | None, node: Node | None, row: pd.Series, slot: int) -> list[str]:
    """Every name the layer's input ``slot`` may go by among a build config's calibrated ranges
    (QuantSettings.range_key): ``<op>:input:<slot>`` of the target op and of each golden op, and
    from the graph the tensor's own name and its producer's ``<op>:output:<n>``."""
    names = [f"{name}:input:{slot}" for name in reversed(_names(row))]
    if graph is not None and node is not None and len(node.inputs) > slot:
        edge = node.inputs[slot]
        names += [edge.tensor, f"{edge.source}:output:{edge.index}"]
    return names


def _framework_simulation(row: pd.Series, simulated: pd.DataFrame, observed: dict[str, Any], knobs: QuantKnobs
                          ) -> dict[str, Any]:
    """The same layer in the framework's fake-quant simulation (``--simulation``): found by the target
    op's name, else by a golden name, among the simulation comparison's ops."""
    names = _names(row)
    match = simulated[simulated["op"].isin(names)]
    if match.empty:
        golden = simulated["golden_ops"].astype("string").fillna("").str.split(",")
        match = simulated[golden.map(lambda gs: bool(set(gs) & set(names))).to_numpy(dtype=bool)]
    if match.empty or pd.isna(match.iloc[0]["out_red"]):
        return {"fw_sim_known": False}
    sim = match.iloc[0]
    own = max(float(sim["out_red"]) - (float(sim["in_red"]) if pd.notna(sim["in_red"]) else 0.0), 0.0)
    out = {"fw_sim_known": True, "fw_sim_cosine": sim["out_cosine"], "fw_sim_red": sim["out_red"],
           "fw_sim_deviates": bool(sim["out_deviates"])}
    if observed.get("own_red"):
        out["fw_sim_share"] = min(own / observed["own_red"], knobs.share_cap)
    return out


def _layer_node(graph: Graph | None, weight: LayerWeight | None, row: pd.Series) -> Node | None:
    """The layer's node in the graph: the one holding its weight, else the first of its names found."""
    if weight is not None and weight.node is not None:
        return weight.node
    if graph is None:
        return None
    return next((graph.node(n) for n in _names(row) if n in graph), None)


def _producer_type(graph: Graph | None, node: Node | None) -> str | None:
    if graph is None or node is None or not node.inputs or node.inputs[0].source not in graph:
        return None
    return graph.node(node.inputs[0].source).op_type
