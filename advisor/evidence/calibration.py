"""Calibration provenance: the build's calibrated activation ranges against the golden activations on
real inputs (the golden dump folder), tensor by tensor, summarised in one ``calibration`` fact.

A calibration set prepared otherwise than the inference data leaves its mark on every range: data
not normalised like the inference data make the input's range (and most ranges after it) wider or
narrower by the normalisation's factor; a set too small or unrepresentative gives ranges narrower
than what real inputs reach, which clip. The input's range is read as an affine map of the golden
input's (calibrated = scale * golden + offset): the scale and offset are the normalisation the
calibration data missed. Which ratio or share names a fault is the rules' call
(rules/core/quantization/calibration-*.yaml).

Range keys are resolved to golden dumps as the config names them: ``OP:output:N`` and ``OP:input:N``
(through the graph to the producing op's output), or an ONNX value name (through the graph to the
node that produces it; a graph input to the dump of the input op of that name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..facts.thresholds import Thresholds
from ..graph.model import Graph
from ..tensors.dump_names import safe_name
from ..tensors.inventory import DumpFile, scan_folder
from ..tensors.lineage import load_dump

Key = tuple[str, str, str]            # (op as in dump names, io, slot)


def _producers(graph: Graph | None) -> dict[str, tuple[str, int]]:
    """ONNX value name -> (producing node, output slot)."""
    if graph is None:
        return {}
    return {value: (node.name, k) for node in graph for k, value in enumerate(node.outputs)}


def _golden_key(tensor: str, graph: Graph | None, producers: dict[str, tuple[str, int]]) -> Key | None:
    op, sep, rest = tensor.rpartition(":")
    if sep and rest.isdigit():
        op, io_sep, io = op.rpartition(":")
        if io_sep and io in ("input", "output"):
            if io == "output":
                return (safe_name(op), "output", rest)
            if graph is not None and op in graph:
                edges = graph.node(op).inputs
                if int(rest) < len(edges):
                    edge = edges[int(rest)]
                    return (safe_name(edge.source), "output", str(edge.index))
            return None
    if tensor in producers:
        node, slot = producers[tensor]
        return (safe_name(node), "output", str(slot))
    return (safe_name(tensor), "output", "0")        # a graph input: the dump of its input op


def _input_ops(graph: Graph | None, ops: pd.DataFrame | None) -> set[str]:
    """The network inputs as dump names: the graph's inputs, and the comparison's Data ops."""
    names = {safe_name(name) for name in graph.inputs} if graph is not None else set()
    if ops is not None and not ops.empty:
        names |= {safe_name(str(op)) for op in ops.loc[ops["op_type"].astype(str) == "Data", "op"]}
    return names


def tensor_rows(ranges: dict[str, tuple[float, float]], golden_dir: Path, graph: Graph | None,
                clip_share: float, inputs: set[str] = frozenset()) -> tuple[list[dict[str, Any]], int]:
    """Per range with a golden dump: the calibrated and golden ranges, their width ratio and the share of
    golden values outside the calibrated range; and how many ranges found no dump. ``inputs``: the
    network inputs' dump names (their ranges are the input's)."""
    files: dict[Key, DumpFile] = {f.name.tensor_key: f for f in scan_folder(golden_dir, "golden").files}
    producers = _producers(graph)
    rows, missing = [], 0
    for tensor, (low, high) in ranges.items():
        key = _golden_key(tensor, graph, producers)
        found = files.get(key) if key is not None else None
        if found is None:
            missing += 1
            continue
        data = np.asarray(load_dump(found.path), dtype=np.float64)
        data = data[np.isfinite(data)]
        if data.size == 0:
            missing += 1
            continue
        g_low, g_high = float(data.min()), float(data.max())
        outside = float(np.mean((data < low) | (data > high)))
        rows.append({"tensor": tensor, "op": key[0], "low": low, "high": high, "golden_low": g_low,
                     "golden_high": g_high,
                     "ratio": (high - low) / (g_high - g_low) if g_high > g_low else None,
                     "outside": outside, "clipped": outside > clip_share, "input": key[0] in inputs})
    return rows, missing


def calibration_facts(ranges: dict[str, tuple[float, float]], source: str | None, golden_dir: Path,
                      graph: Graph | None, thresholds: Thresholds,
                      ops: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """The ``calibration`` fact (none when no range meets a golden dump). ``ops``: the comparison's op facts
    (index: op index): the fact carries the earliest op whose range was compared, so a finding about the
    calibration ranks where its effect starts."""
    rows, missing = tensor_rows(ranges, golden_dir, graph, float(thresholds.knob("calibration", "clip_share")),
                                _input_ops(graph, ops))
    if not rows:
        return []
    ratios = np.array([r["ratio"] for r in rows if r["ratio"] is not None], dtype=float)
    deep = np.array([r["ratio"] for r in rows if r["ratio"] is not None and not r["input"]], dtype=float)
    worst = max(rows, key=lambda r: r["outside"])
    fact: dict[str, Any] = {
        "fact": "calibration", "id": "calibration", "table": source or "", "ranges": len(ranges),
        "tensors_compared": len(rows), "tensors_without_dump": missing,
        "clipped_share": float(np.mean([r["clipped"] for r in rows])),
        "worst_tensor": worst["tensor"], "worst_outside": worst["outside"],
    }
    if ratios.size:
        fact.update(width_ratio_median=float(np.median(ratios)), width_ratio_low=float(np.percentile(ratios, 10)),
                    width_ratio_high=float(np.percentile(ratios, 90)))
    if deep.size:
        fact["deep_width_ratio_median"] = float(np.median(deep))
    fact.update(_input_fields(next((r for r in rows if r["input"]), None)))
    fact.update(_first_op({r["op"] for r in rows}, ops))
    return [fact]


def _first_op(names: set[str], ops: pd.DataFrame | None) -> dict[str, Any]:
    if ops is None or ops.empty:
        return {}
    safe = ops["op"].astype(str).map(safe_name)
    hits = ops.index[safe.isin(names).to_numpy(dtype=bool)]
    if not len(hits):
        return {}
    first = int(min(hits))
    return {"index": first, "op": str(ops.loc[first, "op"])}


def _input_fields(row: dict[str, Any] | None) -> dict[str, Any]:
    """The network input's calibrated range as scale * golden + offset (the normalisation it missed)."""
    if row is None or row["ratio"] is None:
        return {}
    scale = row["ratio"]
    offset = row["low"] - scale * row["golden_low"]
    return {"input_tensor": row["tensor"], "input_low": row["low"], "input_high": row["high"],
            "golden_input_low": row["golden_low"], "golden_input_high": row["golden_high"],
            "input_width_ratio": scale, "input_scale": scale, "input_offset": offset}
