"""``advisor node``: everything known about one op — comparison rows, graph node, neighbours, findings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..diagnosis import Diagnosis
from ..errors import UsageError
from ..graph import Graph
from ..ingest.table import METRIC_COLUMNS, ComparisonTable
from .common import fuzzy_contains, jsonable, safe_name
from .ops import OpSummary, summarise_ops


@dataclass
class TensorRow:
    tensor: str
    io: str
    slot: int | None
    dtype: str | None
    shape: str | None
    overflow: bool | None
    metrics: dict[str, float]
    fail_reason: str | None = None
    direction: str | None = None     # forward | backward (msprobe), None when the comparison does not say


@dataclass
class Neighbour:
    name: str
    op_type: str
    distance: int               # data edges away (1 = direct)
    direction: str              # "predecessor" | "successor"
    index: int | None = None    # op_index in the comparison, when compared
    out_cosine: float = float("nan")


@dataclass
class NodeReport:
    name: str
    op_type: str
    index: int | None
    fused_from: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)
    tensors: list[TensorRow] = field(default_factory=list)
    graph_inputs: list[str] = field(default_factory=list)     # tensor names feeding the op (graph)
    graph_outputs: list[str] = field(default_factory=list)
    in_graph: bool | None = None                              # None: no graph given
    predecessors: list[Neighbour] = field(default_factory=list)
    successors: list[Neighbour] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    summary: OpSummary | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["attributes"] = {k: _attribute_value(v) for k, v in self.attributes.items()}
        return jsonable(data)


def _attribute_value(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_attribute_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _attribute_value(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist() if value.size <= 64 else f"array{list(value.shape)}"
    return str(value)


def match_op(name: str, ops: list[OpSummary], graph: Graph | None = None) -> tuple[OpSummary | None, str]:
    """The op named ``name``: exact, then by op index (digits), then the unique fuzzy match among
    compared ops (name, then fused-from); failing that, an op only the graph knows. Returns
    (the op or None, its name). Raises UsageError when nothing or several ops match."""
    for op in ops:
        if op.name == name:
            return op, op.name
    if name.isdigit():
        for op in ops:
            if op.index == int(name):
                return op, op.name
    if graph is not None and name in graph:
        return None, name
    for field_name in ("name", "fused_from"):
        hits = [op for op in ops if (fuzzy_contains(op.name, name) if field_name == "name"
                                     else any(g == name for g in op.fused_from))]
        if len(hits) == 1:
            return hits[0], hits[0].name
        if len(hits) > 1:
            exact = [op for op in hits if op.name.lower() == name.lower()]
            if len(exact) == 1:
                return exact[0], exact[0].name
            listed = ", ".join(op.name for op in hits[:10])
            raise UsageError(f"{name!r} matches {len(hits)} ops: {listed}{', ...' if len(hits) > 10 else ''}")
    if graph is not None:
        hits = [node.name for node in graph if fuzzy_contains(node.name, name)]
        if len(hits) == 1:
            return None, hits[0]
    raise UsageError(f"no op matches {name!r} (try `advisor ops RESULT --name {name}`)")


def inspect_node(name: str, table: ComparisonTable, graph: Graph | None = None, *, depth: int = 1,
                 diagnosis: Diagnosis | None = None) -> NodeReport:
    ops = summarise_ops(table, graph)
    op, full_name = match_op(name, ops, graph)
    report = NodeReport(name=full_name, op_type=op.op_type if op else "", index=op.index if op else None,
                        fused_from=list(op.fused_from) if op else [], summary=op)
    if op is not None:
        report.tensors = _tensor_rows(table, op)
    if graph is not None:
        node = _graph_node(graph, full_name)
        report.in_graph = node is not None
        if node is not None:
            report.op_type = report.op_type or node.op_type
            report.fused_from = list(node.fused_from) or report.fused_from
            report.passes = list(node.passes)
            report.attributes = dict(node.attributes)
            report.graph_inputs = [edge.tensor for edge in node.inputs]
            report.graph_outputs = list(node.outputs)
            by_name = {o.name: o for o in ops}
            for o in ops:  # dump-safe names, then the golden ops each target op was fused from
                for alias in (safe_name(o.name), *o.fused_from):
                    by_name.setdefault(alias, o)
            report.predecessors = _walk(graph, node.name, depth, "predecessor", by_name)
            report.successors = _walk(graph, node.name, depth, "successor", by_name)
    if diagnosis is not None:
        report.findings = mentions(diagnosis, report)
    return report


def _graph_node(graph: Graph, name: str) -> Any:
    if name in graph:
        return graph.node(name)
    wanted = safe_name(name)
    return next((node for node in graph if safe_name(node.name) == wanted), None)


def _tensor_rows(table: ComparisonTable, op: OpSummary) -> list[TensorRow]:
    frame = table.frame
    if op.index is not None:
        part = frame[(frame["op_index"] == op.index).fillna(False).to_numpy(dtype=bool)]
    else:
        part = frame[(frame["op_name"] == op.name).fillna(False).to_numpy(dtype=bool)]
    metrics = [m for m in METRIC_COLUMNS if m in table.present_metrics] or list(METRIC_COLUMNS)
    rows = []
    for _, row in part.iterrows():
        rows.append(TensorRow(
            tensor=_opt(row["tensor_id"]) or "", io=_opt(row["io"]) or "",
            slot=None if _opt(row["slot"]) is None else int(row["slot"]),
            dtype=_opt(row["npu_dtype"]), shape=_opt(row["shape"]),
            overflow=None if _opt(row["overflow"]) is None else bool(row["overflow"]),
            metrics={m: float(row[m]) for m in metrics},
            fail_reason=_opt(row["compare_fail_reason"]), direction=_opt(row["direction"])))
    return rows


def _opt(value: Any) -> Any:
    try:
        import pandas as pd
        return None if pd.isna(value) else value
    except (TypeError, ValueError):
        return value


def _walk(graph: Graph, start: str, depth: int, direction: str, by_name: dict[str, OpSummary]) -> list[Neighbour]:
    """Breadth-first along data edges, each op once at its shortest distance."""
    step = graph.predecessors if direction == "predecessor" else graph.successors
    seen = {start}
    frontier = [start]
    out: list[Neighbour] = []
    for distance in range(1, max(depth, 0) + 1):
        nxt = []
        for name in frontier:
            for other in step(name):
                if other in seen:
                    continue
                seen.add(other)
                nxt.append(other)
                op = by_name.get(other) or by_name.get(safe_name(other))
                out.append(Neighbour(other, graph.node(other).op_type, distance, direction,
                                     op.index if op else None,
                                     op.outputs.get("cosine", float("nan")) if op else float("nan")))
        frontier = nxt
        if not frontier:
            break
    return out


def mentions(diagnosis: Diagnosis, report: NodeReport) -> list[dict[str, Any]]:
    """The findings about this op: it is their op (or its index), or their evidence names it."""
    names = {report.name, *report.fused_from}
    found = []
    for finding in diagnosis.findings:
        text = " ".join(finding.evidence.values())
        if (finding.op in names or (report.index is not None and finding.index == report.index)
                or any(n and n in text.split() for n in names) or report.name in text):
            found.append({"id": finding.id, "rule": finding.rule, "kind": finding.kind,
                          "severity": finding.severity, "root_cause": finding.root_cause,
                          "op": finding.op, "index": finding.index, "confidence": finding.confidence,
                          "title": finding.title.get("en", ""), "evidence": finding.evidence.get("en", "")})
    return found
