"""``advisor ops``: one line per op of a comparison, filtered and in execution order."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..graph import Graph
from ..ingest.table import METRIC_COLUMNS, ComparisonTable
from .common import HIGHER_IS_BETTER, fuzzy_contains, jsonable, safe_name


@dataclass
class OpSummary:
    """One op: identity, fusion, and its worst input and output metrics (NaN: not compared)."""

    index: int | None
    op_type: str
    name: str
    fused_from: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    dtype: str | None = None
    tensors: int = 0
    inputs: dict[str, float] = field(default_factory=dict)    # metric -> worst over input tensors
    outputs: dict[str, float] = field(default_factory=dict)   # metric -> worst over output tensors
    overflow: bool = False
    source_line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return jsonable(asdict(self))


def worst(metric: str, values: pd.Series | np.ndarray) -> float:
    """The worst value of a metric: the lowest cosine, the highest error (NaN when none)."""
    array = np.asarray(values, dtype=np.float64)
    array = array[~np.isnan(array)]
    if not array.size:
        return float("nan")
    return float(array.min() if metric in HIGHER_IS_BETTER else array.max())


def summarise_ops(table: ComparisonTable, graph: Graph | None = None) -> list[OpSummary]:
    """Every op of the comparison in execution order (``op_index``; file order when absent), with
    fused-from ops and passes from ``graph`` when given (matched by name, or by dump-safe name)."""
    frame = table.frame
    rows = frame[~frame["is_network_output"].fillna(False).to_numpy(dtype=bool)]
    metrics = [m for m in METRIC_COLUMNS if m in table.present_metrics] or list(METRIC_COLUMNS)
    key = rows["op_index"].astype("Float64").fillna(-1).to_numpy(dtype=np.float64)
    names = rows["op_name"].fillna("").astype(str).to_numpy()
    group_key = [(k, n) if k < 0 else (k, "") for k, n in zip(key, names, strict=True)]
    order: dict[tuple, list[int]] = {}
    for position, k in enumerate(group_key):
        order.setdefault(k, []).append(position)
    by_safe = {safe_name(node.name): node for node in graph} if graph is not None else {}
    out: list[OpSummary] = []
    for (k, _), positions in sorted(order.items(), key=lambda item: (item[0][0] < 0, item[0][0], item[1][0])):
        part = rows.iloc[positions]
        first = part.iloc[0]
        name = _text(part["op_name"]) or _text(part["golden_ops"]) or ""
        is_input = (part["io"] == "input").fillna(False).to_numpy(dtype=bool)
        summary = OpSummary(
            index=int(k) if k >= 0 else None, op_type=_text(part["op_type"]) or "", name=name,
            fused_from=[g for g in (_text(part["golden_ops"]) or "").split(",") if g],
            dtype=_text(part.loc[~is_input, "npu_dtype"]) or _text(part["npu_dtype"]),
            tensors=len(part), overflow=bool(part["overflow"].fillna(False).any()),
            source_line=int(first["source_line"]),
            inputs={m: worst(m, part.loc[is_input, m]) for m in metrics},
            outputs={m: worst(m, part.loc[~is_input, m]) for m in metrics})
        node = _graph_node(graph, by_safe, name)
        if node is not None:
            summary.fused_from = list(node.fused_from) or summary.fused_from
            summary.passes = list(node.passes)
            summary.op_type = summary.op_type or node.op_type
        out.append(summary)
    return out


def _text(column: pd.Series) -> str | None:
    values = column.dropna()
    return str(values.iloc[0]) if len(values) else None


def _graph_node(graph: Graph | None, by_safe: dict, name: str) -> Any:
    if graph is None or not name:
        return None
    if name in graph:
        return graph.node(name)
    return by_safe.get(safe_name(name))


def filter_ops(ops: list[OpSummary], *, name: str | None = None, op_type: str | None = None,
               below: tuple[str, float] | None = None, above: tuple[str, float] | None = None,
               limit: int | None = None) -> list[OpSummary]:
    """Fuzzy name / type match (case and separators ignored; the name also matches fused-from
    ops), then metric thresholds on the worst output tensor: ``below`` keeps ops whose value is
    under the threshold (``cosine=0.98``), ``above`` those over it (``red=0.01``)."""
    kept = []
    for op in ops:
        if name and not (fuzzy_contains(op.name, name) or any(fuzzy_contains(g, name) for g in op.fused_from)):
            continue
        if op_type and not fuzzy_contains(op.op_type, op_type):
            continue
        if below and not (op.outputs.get(below[0], np.nan) < below[1]):
            continue
        if above and not (op.outputs.get(above[0], np.nan) > above[1]):
            continue
        kept.append(op)
    return kept[:limit] if limit is not None and limit >= 0 else kept


def list_ops(table: ComparisonTable, graph: Graph | None = None, **filters: Any) -> list[OpSummary]:
    """:func:`summarise_ops` then :func:`filter_ops`."""
    return filter_ops(summarise_ops(table, graph), **filters)
