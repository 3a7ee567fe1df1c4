"""``advisor ops``: one line per op of a comparison, filtered and in execution order."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..facts.ops import Groups  # the facts' vectorised group-by (one grouping for both)
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
    backward: bool = False             # a gradient op (msprobe's backward rows)
    inputs_identical: bool = False     # every compared input equal on both sides (max |x - y| = 0)

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
    fused-from ops and passes from ``graph`` when given (matched by name, or by dump-safe name).

    Rows are grouped by (op, side) the way the facts group them (``Groups``: numpy ``reduceat``
    over rows in op order), so a million rows cost column operations, not a pandas step per op."""
    frame = table.frame
    member = ~frame["is_network_output"].fillna(False).to_numpy(dtype=bool)
    metrics = [m for m in METRIC_COLUMNS if m in table.present_metrics] or list(METRIC_COLUMNS)
    op_code, index = _op_codes(frame, member)
    is_input = (frame["io"] == "input").fillna(False).to_numpy(dtype=bool)
    groups = Groups(2 * op_code + ~is_input, member)  # side 0: inputs, 1: the other tensors
    n_ops = len(index)
    sides = [np.flatnonzero(groups.keys % 2 == side) for side in (0, 1)]

    def per_op(values: np.ndarray, side: int, fill: Any) -> np.ndarray:
        out = np.full(n_ops, fill, dtype=np.result_type(values.dtype, np.asarray(fill).dtype))
        out[groups.keys[sides[side]] // 2] = values[sides[side]]
        return out

    def first(column: str, side: int | None = None) -> list[Any]:
        """Per op, the first non-NA value of ``column`` (of one side's rows when ``side`` is given)."""
        at = groups.first(frame[column].notna().to_numpy(dtype=bool))
        at = per_op(at, side, np.nan) if side is not None else np.fmin(per_op(at, 0, np.nan), per_op(at, 1, np.nan))
        taken = frame[column].array.take(np.where(np.isnan(at), -1, at).astype(np.int64), allow_fill=True)
        return taken.astype("string").to_numpy(dtype=object, na_value=None).tolist()

    worst_in, worst_out = {}, {}
    for m in metrics:
        reduced = groups.reduce(np.fmin if m in HIGHER_IS_BETTER else np.fmax,
                                frame[m].to_numpy(dtype=np.float64, na_value=np.nan))
        worst_in[m], worst_out[m] = per_op(reduced, 0, np.nan).tolist(), per_op(reduced, 1, np.nan).tolist()
    overflow = groups.reduce(np.logical_or, frame["overflow"].fillna(False).to_numpy(dtype=bool))
    overflow = per_op(overflow, 0, False) | per_op(overflow, 1, False)
    tensors = per_op(groups.sizes, 0, 0) + per_op(groups.sizes, 1, 0)
    lines = frame["source_line"].to_numpy()
    start = groups.first(np.ones(len(frame), dtype=bool))
    start = np.fmin(per_op(start, 0, np.nan), per_op(start, 1, np.nan)).astype(np.int64)
    op_names, golden, op_types = first("op_name"), first("golden_ops"), first("op_type")
    out_dtypes, any_dtypes = first("npu_dtype", side=1), first("npu_dtype")
    directions = first("direction")
    by_safe = {safe_name(node.name): node for node in graph} if graph is not None else {}
    out: list[OpSummary] = []
    for i in range(n_ops):
        name = op_names[i] or golden[i] or ""
        summary = OpSummary(
            index=index[i], op_type=op_types[i] or "", name=name,
            fused_from=[g for g in (golden[i] or "").split(",") if g],
            dtype=out_dtypes[i] or any_dtypes[i], tensors=int(tensors[i]), overflow=bool(overflow[i]),
            source_line=int(lines[start[i]]),
            inputs={m: worst_in[m][i] for m in metrics}, outputs={m: worst_out[m][i] for m in metrics},
            backward=directions[i] == "backward")
        summary.inputs_identical = summary.inputs.get("max_abs_error") == 0
        node = _graph_node(graph, by_safe, name)
        if node is not None:
            summary.fused_from = list(node.fused_from) or summary.fused_from
            summary.passes = list(node.passes)
            summary.op_type = summary.op_type or node.op_type
        out.append(summary)
    return out


def _op_codes(frame: pd.DataFrame, member: np.ndarray) -> tuple[np.ndarray, list[int | None]]:
    """Each row's op number (ops in execution order) and each op's index. Rows with an index of 0
    or more form one op per index, in index order; the others (no index) one op per (index, name),
    after them, by index then first row."""
    key = frame["op_index"].to_numpy(dtype=np.float64, na_value=-1.0)
    code = np.zeros(len(frame), dtype=np.int64)
    indexed = member & (key >= 0)
    values, code[indexed] = np.unique(key[indexed], return_inverse=True)
    index: list[int | None] = [int(v) for v in values]
    rest = np.flatnonzero(member & (key < 0))
    if len(rest):
        names = frame["op_name"].astype("string").fillna("").to_numpy(dtype=object)[rest]
        pairs = pd.MultiIndex.from_arrays([key[rest], names])
        local, _ = pd.factorize(pairs)  # first-appearance order
        first_row = np.full(local.max() + 1, len(frame))
        np.minimum.at(first_row, local, rest)
        first_key = key[first_row]
        order = np.lexsort((first_row, first_key))
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        code[rest] = len(values) + rank[local]
        index += [None] * len(order)
    return code, index


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
