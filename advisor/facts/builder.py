"""Facts: what the rules see. Built from the ComparisonTable with column operations only.

A million-row table is a normal input, and durable_rules misbehaves with ~100k facts, so facts are
aggregated before they are asserted:

* one ``network`` fact with the whole-network numbers;
* one row per op in ``FactSet.ops`` (a DataFrame: every op, for the report's series and for rules
  that want counts), of which only the *notable* ops become ``op`` facts: ops where error enters,
  where overflow starts, the network's input and output ops. An op whose inputs already disagree
  only inherits error; rules learn about those ops through counts, not one fact each.

Local versus accumulated error (the distinction users most often get wrong): an op *deviates* when
one of its output tensors is outside the dtype's thresholds; error *enters* at an op that deviates
while its inputs agree. When the comparison has input rows for an op (``<op>:input:<n>``), "inputs
agree" is read from them; otherwise from the op before it in execution order, with lower confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..compare.dump_names import parse_dump_name
from ..graph import FusionReport, Graph
from ..ingest.table import ComparisonTable
from .catalogs import load_catalog, op_type_of_name
from .graph_join import MAX_LISTED, GraphJoin, join_graph, narrowing
from .thresholds import Thresholds
from .training import TRAINING_OP_FIELDS, decorate_op_fact, judge_roles, mark_training, training_network_fields

# Op types that feed the network: their outputs (or the first op's inputs) are the network input.
INPUT_OP_TYPES = frozenset({"data", "placeholder", "aippdata", "refdata", "input"})
# How many ops from an overflow start to follow while their outputs stay out of FP16 range.
KEEP_FP32_SPAN = 32
DEFAULT_MAX_OP_FACTS = 2000
SCALE_MIN_RMS = 1e-6
# An entry's error is absorbed when ABSORB_CLEAN_OPS consecutive ops after it are back at clean-run
# agreement, cosine >= ABSORBED_COSINE. Clean FP16/BF16 scenario runs keep 95% of their tensors above
# 0.99992; an error only shrunk below the threshold (to be amplified by a final Softmax) sits near
# 0.999. A heuristic, measured on the scenario corpus (benchmarks/diagnosis.py), not a law.
ABSORB_CLEAN_OPS = 3
ABSORBED_COSINE = 0.9998
MAX_KEEP_FP32 = 64


@dataclass
class FactSet:
    network: dict[str, Any]
    ops: pd.DataFrame                      # one row per op, execution order, all ops
    op_facts: list[dict[str, Any]]         # the notable ops, ready to assert
    error_metric: str | None               # secondary metric for the plot
    warnings: list[str] = field(default_factory=list)
    join: GraphJoin | None = None          # the model graph joined to ``ops`` (``--graph``)

    def all_facts(self) -> list[dict[str, Any]]:
        return [self.network, *self.op_facts]


def build_facts(table: ComparisonTable, thresholds: Thresholds, *, input_nodes: tuple[str, ...] = (),
                max_op_facts: int = DEFAULT_MAX_OP_FACTS, graph: Graph | None = None,
                fusion: FusionReport | None = None) -> FactSet:
    frame = table.frame
    warnings: list[str] = list(table.warnings)  # what the reader derived or assumed reaches the report
    rows = _row_flags(frame, thresholds)
    judge_roles(frame, rows)   # parameters, arguments, counters and checksums are not plain tensors
    ops = _aggregate_ops(frame, rows)
    mark_training(frame, rows, ops)
    _mark_tool_flags(frame, rows, ops)
    _mark_inputs(ops, input_nodes, warnings)
    join = join_graph(ops, graph, fusion) if graph is not None else None
    if join is not None:
        warnings.extend(join.warnings)
        if not join.matched:
            join = None
    _mark_entries(ops, _graph_inputs(ops, join) if join is not None else None)
    output = _network_output(frame, rows, ops, join)
    output_index = output.pop("op_index", None)
    if output_index is None:
        ops["is_output"] = False
    else:
        ops["is_output"] = ops.index.isin(output_index if isinstance(output_index, list) else [output_index])
    _mark_fp16_sensitive(ops)
    _mark_inserted_normalization(ops)
    if join is not None:
        _mark_graph(ops, join)
    network = _network_fact(table, rows, ops, output)
    network.update(clean_fact(training_network_fields(frame, rows, ops)))
    network["consistent"] = bool(network["consistent"] and not network["checksums_differ"]
                                 and not network["differing_parameters"] and not network["differing_arguments"]
                                 and network["judged_tensors"] + network["checksums_compared"] > 0)
    network.update(clean_fact(_tool_flag_fields(ops)))
    if join is not None:  # graph facts only with --graph: a run without one reports what it always did
        network.update(clean_fact(_unmatched(frame, ops, join)))
        network.update(clean_fact(join.network_fields()))
    op_facts = _op_facts(ops, network, max_op_facts, warnings, graph=join is not None)
    _summarise_overflow(network, ops, op_facts)
    error_metric = next((m for m in ("relative_euclidean_distance", "max_abs_error", "mean_relative_error")
                         if m in table.present_metrics), None)
    return FactSet(network=network, ops=ops, op_facts=op_facts, error_metric=error_metric, warnings=warnings,
                   join=join)


def _compared(ops: pd.DataFrame) -> np.ndarray:
    """Ops whose outputs were compared (a cosine, or a non-finite target)."""
    return (ops["out_cosine"].notna() | ops["out_nonfinite"]).to_numpy(dtype=bool)


def _graph_inputs(ops: pd.DataFrame, join: GraphJoin) -> dict[str, np.ndarray]:
    """For ops without input rows: what their graph predecessors' outputs say. Only those ops walk
    the graph (a comparison that lists input rows walks nothing)."""
    n = len(ops)
    known = np.zeros(n, dtype=bool)
    deviates = np.zeros(n, dtype=bool)
    overflow = np.zeros(n, dtype=bool)
    cosine = np.full(n, np.nan)
    compared = _compared(ops)
    out_dev = ops["out_deviates"].to_numpy(dtype=bool)
    out_over = ops["out_overflow"].to_numpy(dtype=bool)
    out_cos = ops["out_cosine"].to_numpy(dtype=float)
    known_ops = join.known
    for position in np.flatnonzero((ops["in_rows"] == 0).to_numpy() & known_ops):
        if not known_ops[position]:
            continue
        preds = join.predecessor_ops(int(position), compared)
        if preds:
            known[position] = True
            deviates[position] = out_dev[preds].any()
            overflow[position] = out_over[preds].any()
            cosine[position] = np.fmin.reduce(out_cos[preds])
    return {"known": known, "deviates": deviates, "overflow": overflow, "cosine": cosine}


def _mark_graph(ops: pd.DataFrame, join: GraphJoin) -> None:
    """Fusion evidence per op, and the Casts that narrow precision before the first problem node."""
    for name, values in join.fusion_columns(ops).items():
        ops[name] = values
    n = len(ops)
    narrowing_cast = np.zeros(n, dtype=bool)
    cast_from = np.full(n, None, dtype=object)
    cast_to = np.full(n, None, dtype=object)
    casts = np.flatnonzero(ops["op_type"].fillna("").str.lower().eq("cast").to_numpy(dtype=bool))
    in_dtype = ops["in_dtype"].astype(object).to_numpy()
    out_dtype = ops["out_dtype"].astype(object).to_numpy()
    for position in casts:
        graph_from, graph_to = join.cast_dtypes(int(position))
        source = in_dtype[position] if isinstance(in_dtype[position], str) else graph_from
        target = out_dtype[position] if isinstance(out_dtype[position], str) else graph_to
        cast_from[position], cast_to[position] = source, target
        narrowing_cast[position] = narrowing(source, target)
    ops["narrowing_cast"] = narrowing_cast
    ops["cast_from"] = pd.array(cast_from, dtype="string")
    ops["cast_to"] = pd.array(cast_to, dtype="string")
    entries = ((ops["error_enters"] | ops["hidden_entry"]) & ~ops["absorbed"]).to_numpy(dtype=bool)
    first = int(np.argmax(entries)) if entries.any() else -1   # no entry: nothing is "before" one
    ops["before_first_entry"] = ops["position"].to_numpy() < first


def _mark_inserted_normalization(ops: pd.DataFrame) -> None:
    """``inserted_norm_op`` / ``inserted_norm_type`` on a network input: the op that exists only on
    the target (no golden ops) among those right after the input, before the next op with golden
    data, whose type normalises an input (knowledge/ops/input_normalizing.yaml: the BatchNorm
    MagicMind's insert_bn_before_firstnode adds, an ATC AIPP)."""
    ops["inserted_norm_op"] = pd.Series(pd.NA, index=ops.index, dtype="string")
    ops["inserted_norm_type"] = pd.Series(pd.NA, index=ops.index, dtype="string")
    inputs = np.flatnonzero(ops["is_input"].to_numpy(dtype=bool))
    if not len(inputs):
        return
    normalizing = set(load_catalog("input_normalizing"))
    npu_only = ops["golden_ops"].isna().to_numpy()
    types = ops["op_type"].astype(object).to_numpy()
    for position in inputs:          # a handful of inputs, each followed by a few inserted ops
        after = position + 1
        while after < len(ops) and npu_only[after]:
            if str(types[after]).lower() in normalizing:
                ops.iloc[position, ops.columns.get_loc("inserted_norm_op")] = str(ops["op"].iloc[after])
                ops.iloc[position, ops.columns.get_loc("inserted_norm_type")] = str(types[after])
                break
            after += 1


def _unmatched(frame: pd.DataFrame, ops: pd.DataFrame, join: GraphJoin | None) -> dict[str, Any]:
    """Ops dumped on one side only (every row npu_only, or every row golden_only): counts and names.
    Array work over the rows, then one look-up per unmatched op."""
    member = (frame["op_index"].notna().to_numpy() & ~frame["is_network_output"].fillna(False).to_numpy(dtype=bool)
              & frame["op_index"].isin(ops.index).fillna(False).to_numpy(dtype=bool))
    if not member.any() or not len(ops):
        return {"unmatched_ops": 0, "npu_only_ops": 0, "golden_only_ops": 0}
    codes = np.searchsorted(ops.index.to_numpy(), frame["op_index"].to_numpy()[member])
    sides = {}
    for column in ("npu_only", "golden_only"):
        other = ~frame[column].fillna(False).to_numpy(dtype=bool)[member]
        sides[column] = np.bincount(codes, weights=other, minlength=len(ops)) == 0
    npu_only = np.flatnonzero(sides["npu_only"] & (ops["tensors"].to_numpy() > 0))
    golden_only = np.flatnonzero(sides["golden_only"] & (ops["tensors"].to_numpy() > 0))
    names = ops["op"].astype(object).to_numpy()
    fields: dict[str, Any] = {"unmatched_ops": len(npu_only) + len(golden_only), "npu_only_ops": len(npu_only),
                              "golden_only_ops": len(golden_only)}
    if len(npu_only):
        fields["npu_only_names"] = ",".join(str(names[p]) for p in npu_only[:MAX_LISTED])
    if len(golden_only):
        fields["golden_only_names"] = ",".join(str(names[p]) for p in golden_only[:MAX_LISTED])
    if join is not None and len(npu_only):
        nodes = join.graph.nodes
        fields["npu_only_inserted"] = sum(1 for p in npu_only if any(nodes[i].is_inserted for i in join.nodes_of(p)))
    return fields


# Lower rank = more precise. A tensor computed from lower-precision data carries that precision's
# error even when it is stored wider (an FP16 network's output cast back to float32), so a row is
# judged by the least precise of its own dtype and the network's compute dtype.
PRECISION_RANK = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3, "int8": 4, "uint8": 4}


def compute_dtype(dtypes: pd.Series) -> str | None:
    """The least precise float/int8 dtype among the target tensors: what the network computes in."""
    present = [d for d in dtypes.dropna().unique() if d in PRECISION_RANK]
    return max(present, key=PRECISION_RANK.__getitem__) if present else None


def effective_dtypes(dtypes: pd.Series, floor: str | None) -> pd.Series:
    if floor is None:
        return dtypes
    rank = dtypes.map(PRECISION_RANK)
    return dtypes.mask(rank < PRECISION_RANK[floor], floor)


def _row_flags(frame: pd.DataFrame, thresholds: Thresholds) -> pd.DataFrame:
    """Per-row: comparable, deviates, non-finite target, overflow.

    A million rows hold a handful of distinct dtypes, so the stored dtype is kept as a Categorical
    (``stored_dtype``) and what depends on it (compute dtype, effective dtype, thresholds) is
    worked out once per distinct dtype, not once per row."""
    comparable = ~(frame["npu_only"].fillna(False) | frame["golden_only"].fillna(False)).to_numpy(dtype=bool)
    stored = frame["npu_dtype"].fillna(frame["golden_dtype"])
    codes, names = pd.factorize(stored)  # code -1: no dtype on either side
    per_code = pd.Series([*names, None], dtype=stored.dtype)  # indexed by code; -1 takes the NA
    dtype = effective_dtypes(per_code, compute_dtype(_first_seen(codes, names, comparable)))
    cos = frame["cosine"].to_numpy()
    red = frame["relative_euclidean_distance"].to_numpy()
    npu_mean, npu_std = frame["npu_mean"].to_numpy(), frame["npu_std"].to_numpy()
    golden_mean, golden_std = frame["golden_mean"].to_numpy(), frame["golden_std"].to_numpy()
    golden_ok = np.isfinite(golden_mean) & np.isfinite(golden_std)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # Root mean square from (mean; std): rms^2 = mean^2 + std^2. A golden tensor near zero has
        # no meaningful scale, so the ratio is only taken above a tiny rms.
        golden_rms = np.hypot(golden_mean, golden_std)
        scale = np.where(golden_ok & (golden_rms > SCALE_MIN_RMS),
                         np.abs(np.hypot(npu_mean, npu_std) / golden_rms - 1.0), np.nan)
        # msprobe prints L2 norms instead of (mean; std): over the same elements the norm ratio is the
        # rms ratio, so statistics-only comparisons (summary mode, dump.json pairs) are judged too.
        golden_norm = frame["golden_norm"].to_numpy()
        norm_scale = np.abs(frame["npu_norm"].to_numpy() / golden_norm - 1.0)
        scale = np.where(np.isnan(scale) & (np.abs(golden_norm) > SCALE_MIN_RMS), norm_scale, scale)
        nonfinite = (golden_ok & ~(np.isfinite(npu_mean) & np.isfinite(npu_std))) | np.isposinf(
            frame["max_abs_error"].to_numpy())
        # One side all zero makes cosine NaN; a target that collapsed to zeros is a real deviation.
        collapsed = golden_ok & (npu_std == 0) & (npu_mean == 0) & (frame["golden_std"].to_numpy() > 0)
        deviates = comparable & ((cos < thresholds.per_row(dtype, "cosine")[codes])
                                 | (red > thresholds.per_row(dtype, "relative_euclidean_distance")[codes])
                                 | (scale > thresholds.per_row(dtype, "scale")[codes])
                                 | nonfinite | collapsed)
    is_fp16 = (per_code == "float16").fillna(False).to_numpy(dtype=bool)[codes]
    overflow = frame["overflow"].fillna(False).to_numpy(dtype=bool) | (nonfinite & is_fp16 & comparable)
    return pd.DataFrame({
        "op_index": frame["op_index"],
        "is_input": (frame["io"] == "input").fillna(False).to_numpy(dtype=bool),
        "is_net_out": frame["is_network_output"].fillna(False).to_numpy(dtype=bool),
        "comparable": comparable,
        "cos": np.where(comparable, cos, np.nan),
        "red": np.where(comparable, red, np.nan),
        "scale": np.where(comparable, scale, np.nan),
        "mae": np.where(comparable, frame["max_abs_error"].to_numpy(), np.nan),
        "kl": np.where(comparable, frame["kl_divergence"].to_numpy(), np.nan),
        "deviates": deviates,
        "nonfinite": nonfinite & comparable,
        "overflow": overflow,
        "stored_dtype": pd.Categorical.from_codes(codes, categories=names),
        "line": frame["source_line"],
    }, copy=False)  # no consolidated copy of the columns


def _first_seen(codes: np.ndarray, names: pd.Index, mask: np.ndarray) -> pd.Series:
    """The distinct names of the ``mask`` rows, in the order they first appear (``Series.unique``)."""
    present, first = np.unique(codes[mask], return_index=True)
    order = present[np.argsort(first)]
    return pd.Series(names.take(order[order >= 0]))


def _dtype_counts(rows: pd.DataFrame, mask: np.ndarray) -> pd.Series:
    """``value_counts()`` of the stored dtypes of the ``mask`` rows: most frequent first, ties in
    the order they first appear, no NA."""
    stored = rows["stored_dtype"].array
    known = stored.codes[mask]
    known = known[known >= 0]
    present, first = np.unique(known, return_index=True)
    order = present[np.argsort(first)]
    counts = pd.Series(np.bincount(known, minlength=len(stored.categories))[order],
                       index=stored.categories.take(order))
    return counts.sort_values(ascending=False, kind="stable")


# What an op's input tensors (``in_*``) and its other tensors (``out_*``) are summarised into:
# column -> (the ``rows`` column, how that side's rows combine, the value when it has none).
SIDE_SUMMARY: dict[str, tuple[str, np.ufunc, Any]] = {
    "cosine": ("cos", np.fmin, np.nan), "red": ("red", np.fmax, np.nan), "scale": ("scale", np.fmax, np.nan),
    "max_abs_error": ("mae", np.fmax, np.nan), "kl": ("kl", np.fmax, np.nan),
    "deviates": ("deviates", np.logical_or, False), "overflow": ("overflow", np.logical_or, False),
    "nonfinite": ("nonfinite", np.logical_or, False),
}  # fmin/fmax skip NaN like groupby's min/max; then ``rows`` (count) and ``dtype`` (first known)
OP_TEXT_COLUMNS = {"op": "op_name", "op_type": "op_type", "golden_ops": "golden_ops", "direction": "direction"}


class _Groups:
    """Rows grouped by an integer key, reduced with numpy's ``reduceat`` (a groupby without a
    DataFrame). When the grouped rows are contiguous and already in key order, as in a comparison
    that lists each op's inputs, then its outputs, op after op, no column is copied."""

    def __init__(self, key: np.ndarray, member: np.ndarray) -> None:
        rows = np.flatnonzero(member)
        ordered = key[rows]
        in_place = not (ordered[1:] < ordered[:-1]).any()
        if not in_place:
            rows = rows[np.argsort(ordered, kind="stable")]  # stable: row order within a group
            ordered = key[rows]
        contiguous = in_place and len(rows) > 0 and rows[-1] - rows[0] + 1 == len(rows)
        self._size = len(member)
        self._take = slice(rows[0], rows[-1] + 1) if contiguous else rows
        self.starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1]))) if len(rows) \
            else np.zeros(0, dtype=np.int64)
        self.keys = ordered[self.starts]
        self.sizes = np.diff(np.append(self.starts, len(rows)))

    def reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        if not len(self.starts):
            return np.zeros(0, dtype=values.dtype)
        return ufunc.reduceat(values[self._take], self.starts)

    def first(self, present: np.ndarray) -> np.ndarray:
        """Per group, the first row position where ``present`` (groupby's ``first`` skips NA), as
        float; NaN when there is none."""
        if not hasattr(self, "_positions"):
            self._positions = np.arange(self._size)
        at = self.reduce(np.minimum, np.where(present, self._positions, self._size))
        return np.where(at < self._size, at, np.nan)


def _aggregate_ops(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per op in op-index order: its name, type, golden ops, first line and tensor count,
    then its input tensors (``in_*``) and its other tensors (``out_*``) summarised.

    One pass per column over rows grouped by (op, side); a text column is read only at the one
    row per op that holds its first value, never grouped or copied."""
    op_rows = (~rows["is_net_out"] & rows["op_index"].notna() & rows["aggregated"]).to_numpy()
    op_code, op_labels = pd.factorize(rows["op_index"].where(op_rows), sort=True)
    groups = _Groups(2 * op_code + ~rows["is_input"].to_numpy(), op_rows)  # side 0: inputs, 1: the rest
    n_ops = len(op_labels)
    side_groups = [np.flatnonzero(groups.keys % 2 == side) for side in (0, 1)]
    side_ops = [groups.keys[g] // 2 for g in side_groups]

    def per_op(values: np.ndarray, side: int, fill: Any) -> np.ndarray:
        """One value per group -> per op for one side, ``fill`` for ops without that side."""
        out = np.full(n_ops, fill, dtype=np.result_type(values.dtype, np.asarray(fill).dtype))
        out[side_ops[side]] = values[side_groups[side]]
        return out

    def both(values: np.ndarray) -> np.ndarray:
        """One value per group -> per op, the smaller of its two sides' (NaN: none)."""
        return np.fmin(per_op(values, 0, np.nan), per_op(values, 1, np.nan))

    ops = pd.DataFrame(index=pd.Index(op_labels, name="op_index"))
    for name, column in OP_TEXT_COLUMNS.items():
        ops[name] = _take(frame[column].array, both(groups.first(frame[column].notna().to_numpy())))
    ops["source_line"] = both(groups.reduce(np.minimum, rows["line"].to_numpy())).astype("int64")
    ops["tensors"] = per_op(groups.sizes, 0, 0) + per_op(groups.sizes, 1, 0)
    stored = rows["stored_dtype"].array
    first_dtype = groups.first(stored.codes >= 0)
    dtype_code = np.where(np.isnan(first_dtype), np.nan, stored.codes[np.nan_to_num(first_dtype).astype(np.int64)])
    summaries = {name: groups.reduce(ufunc, rows[column].to_numpy())
                 for name, (column, ufunc, _) in SIDE_SUMMARY.items()}
    for side, prefix in enumerate(("in", "out")):
        for name, (_, _, fill) in SIDE_SUMMARY.items():
            ops[f"{prefix}_{name}"] = per_op(summaries[name], side, fill)
        ops[f"{prefix}_rows"] = per_op(groups.sizes, side, 0)
        ops[f"{prefix}_dtype"] = _take(stored.categories.array, per_op(dtype_code, side, np.nan))
    ops["dtype"] = ops["out_dtype"].fillna(ops["in_dtype"])
    ops["position"] = np.arange(len(ops), dtype="int64")
    return ops


# msquickcmp's own marks on each row (advisor/ingest/table.py): per op, whether any row carries one.
TOOL_FLAGS = ("tool_precision_error", "tool_output_node")


def _mark_tool_flags(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame) -> None:
    """``tool_precision_error`` / ``tool_output_node`` per op: True when msquickcmp marked any of its
    rows, False when it marked none, NA when the comparison has no such marks."""
    position = None
    for column in TOOL_FLAGS:
        flags = frame[column]
        known = flags.notna().to_numpy(dtype=bool)
        if not known.any() or not len(ops):  # the usual case: no marks, nothing per row is allocated
            ops[column] = pd.arrays.BooleanArray(np.zeros(len(ops), dtype=bool), np.ones(len(ops), dtype=bool))
            continue
        if position is None:
            op_rows = (~rows["is_net_out"] & rows["op_index"].notna() & rows["aggregated"]).to_numpy()
            position = np.searchsorted(ops.index.to_numpy(),
                                       frame["op_index"].to_numpy(dtype=np.float64, na_value=np.nan)[op_rows])
        marked = np.bincount(position, weights=flags.fillna(False).to_numpy(dtype=bool)[op_rows],
                             minlength=len(ops)) > 0
        seen = np.bincount(position, weights=known[op_rows], minlength=len(ops)) > 0
        ops[column] = pd.arrays.BooleanArray(marked, ~seen)


def _tool_flag_fields(ops: pd.DataFrame) -> dict[str, Any]:
    """The network's view of msquickcmp's marks: absent when the comparison has none."""
    fields: dict[str, Any] = {}
    error = ops["tool_precision_error"]
    if error.notna().any():
        marked = ops[error.fillna(False).to_numpy(dtype=bool)]
        fields["tool_precision_error_ops"] = len(marked)
        if len(marked):
            fields["tool_first_precision_error_op"] = str(marked["op"].iloc[0])
            fields["tool_first_precision_error_index"] = int(marked.index[0])
    output = ops["tool_output_node"]
    if output.notna().any():
        names = ops.loc[output.fillna(False).to_numpy(dtype=bool), "op"].astype(str)
        fields["tool_output_ops"] = ",".join(names.head(MAX_LISTED))
    return fields


def _take(values: pd.api.extensions.ExtensionArray, at: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """``values`` at positions ``at`` (floats, NaN for none: NA), keeping the dtype."""
    return values.take(np.where(np.isnan(at), -1, at).astype(np.int64), allow_fill=True)


def _mark_inputs(ops: pd.DataFrame, input_nodes: tuple[str, ...], warnings: list[str]) -> None:
    """Input ops: named by the user, else Data-like op types, else the first op in execution order."""
    if input_nodes:
        names = set(input_nodes)
        golden = ops["golden_ops"].fillna("")
        # Only a cell that contains a name can list it: split those few cells, not every op's.
        maybe = _cells_containing(golden, names)
        listed = golden.iloc[maybe].str.split(",").map(lambda gs: not names.isdisjoint(gs)).to_numpy(dtype=bool)
        in_golden = np.zeros(len(ops), dtype=bool)
        in_golden[maybe[listed]] = True
        is_input = ops["op"].isin(names) | in_golden
        found = set(ops.loc[is_input, "op"]) | {g for gs in golden[is_input].str.split(",") for g in gs}
        missing = sorted(names - found)
        if missing:
            warnings.append(f"--input-nodes not found in the comparison: {', '.join(missing)}")
        ops["input_source"] = "user"
    else:
        is_input = _lower_isin(ops["op_type"], INPUT_OP_TYPES)
        ops["input_source"] = "op_type"
        if not is_input.any() and len(ops):
            is_input = ops["position"] == 0
            ops["input_source"] = "first_op"
    ops["is_input"] = is_input.to_numpy(dtype=bool)
    is_data = _lower_isin(ops["op_type"], INPUT_OP_TYPES)
    # A Data op has no inputs of its own: its output *is* the network input. So is the output of any op
    # the user names as an input, whatever its type (what the user feeds in is what it produces; the
    # vendor's advisor reads a named input node's own rows the same way).
    own_output = is_data | (ops["input_source"] == "user")
    ops["input_deviates"] = ops["is_input"] & (ops["in_deviates"] | (own_output & ops["out_deviates"]))
    if input_nodes:
        named = ops[ops["is_input"]]
        unjudged = named[named[["in_cosine", "out_cosine", "in_red", "out_red", "in_scale", "out_scale"]].isna().all(
            axis=1) & ~named["in_deviates"] & ~named["out_deviates"]]
        if len(unjudged):
            warnings.append("--input-nodes found but never judged (no metric on their tensors): "
                            + ", ".join(str(op) for op in unjudged["op"].head(MAX_LISTED)))


def _cells_containing(cells: pd.Series, words: set[str]) -> np.ndarray:
    """Positions of the ``cells`` (text, no NA) that contain one of ``words`` anywhere: a superset
    of the cells that list one as a comma-separated item, found by searching the joined text
    rather than splitting every cell. All positions when a word is empty or too common to help."""
    texts = cells.tolist()
    everything = np.arange(len(texts))
    blob = "\n".join(texts)
    hits: list[int] = []
    for word in words:
        at = blob.find(word) if word else 0
        while at >= 0:
            if not word or len(hits) >= len(texts):
                return everything
            hits.append(at)
            at = blob.find(word, at + 1)
    spans = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1  # each cell and its "\n"
    starts = np.cumsum(spans) - spans
    return np.unique(np.searchsorted(starts, np.asarray(hits, dtype=np.int64), side="right") - 1)


def _lower_isin(values: pd.Series, names: Any) -> pd.Series:
    """``values.fillna("").str.lower().isin(names)``, lower-casing each distinct value once."""
    codes, distinct = pd.factorize(values)  # code -1: NA, which counts as ""
    hits = np.append(pd.Series(distinct, dtype=object).str.lower().isin(names).to_numpy(dtype=bool), "" in names)
    return pd.Series(hits[codes], index=values.index, name=values.name)


def _mark_entries(ops: pd.DataFrame, graph: dict[str, np.ndarray] | None = None) -> None:
    """Where error enters (local error) as opposed to where it is inherited (accumulated).

    An op's inputs are read from its input rows; without them, from its graph predecessors' outputs
    when a graph was given; else from the op before it in execution order."""
    out_dev = ops["out_deviates"]
    prev_out_dev = out_dev.shift(1, fill_value=False).astype(bool)
    earlier_dev = out_dev.cumsum().shift(1, fill_value=0) > 0
    has_inputs = ops["in_rows"] > 0
    by_graph = np.zeros(len(ops), dtype=bool) if graph is None else graph["known"] & ~has_inputs.to_numpy()
    ops["inputs_known"] = has_inputs
    ops["inputs_from"] = np.where(has_inputs, "input_rows", np.where(by_graph, "graph", "previous_op"))
    prev_agree = ~prev_out_dev.to_numpy(dtype=bool)
    if graph is not None:
        prev_agree = np.where(by_graph, ~graph["deviates"], prev_agree)
    # An op whose parameters or arguments differ does not receive agreeing inputs, whatever its data.
    ops["inputs_agree"] = (np.where(has_inputs, ~ops["in_deviates"], prev_agree)
                           & ~ops["param_differs"].to_numpy(dtype=bool) & ~ops["arg_differs"].to_numpy(dtype=bool))
    ops["error_enters"] = out_dev & ops["inputs_agree"]
    # The first disagreement of the whole network shows on an op's *inputs*: it entered in an op the
    # comparison does not cover (a target-only Cast/TransData, an op dumped on one side only).
    ops["hidden_entry"] = has_inputs & ops["in_deviates"] & ~earlier_dev & ~ops["is_input"]
    previous_cosine = ops["out_cosine"].shift(1)
    prev_overflow = ops["out_overflow"].shift(1, fill_value=False).astype(bool)
    if graph is not None:
        previous_cosine = previous_cosine.where(~by_graph, graph["cosine"])
        prev_overflow = prev_overflow.where(~by_graph, graph["overflow"])
    reference = ops["in_cosine"].where(has_inputs, previous_cosine)
    ops["local_drop"] = (reference - ops["out_cosine"]).where(ops["error_enters"])
    inputs_overflow = np.where(has_inputs, ops["in_overflow"], prev_overflow)
    ops["overflow_enters"] = ops["out_overflow"] & ~inputs_overflow
    # Ops that deviate after this one: what a root cause here would explain.
    after = out_dev[::-1].cumsum()[::-1] - out_dev
    ops["downstream_deviating"] = after.astype("int64")
    severity = ((1.0 - ops["out_cosine"]) / 0.01).clip(0, 5).fillna(5) / 5   # 0..1
    ops["entry_confidence"] = (np.where(has_inputs, 0.6, np.where(by_graph, 0.55, 0.45)) + 0.35 * severity).round(3)
    ops["absorbed"] = _absorbed_entries(ops, has_inputs)


def _absorbed_entries(ops: pd.DataFrame, has_inputs: pd.Series) -> np.ndarray:
    """Entries whose error the network absorbs before error enters again later: between this entry
    and the next one, ABSORB_CLEAN_OPS consecutive ops agree on their inputs and outputs. The later
    entry, not this one, is then what breaks the output (a transformer's residual stream drowns a
    small attention error; a later Softmax over the wrong axis does not recover)."""
    entry = (ops["error_enters"] | ops["hidden_entry"]).to_numpy()
    absorbed = np.zeros(len(ops), dtype=bool)
    positions = np.flatnonzero(entry)
    if len(positions) < 2:
        return absorbed
    # "Agree" here means well inside the thresholds, not just below them: an error merely shrunk
    # under the threshold (a quantised layer's error that a final Softmax amplifies again) is not
    # absorbed.
    clean = (~ops["out_deviates"] & ~(has_inputs & ops["in_deviates"])
             & (ops["out_cosine"].fillna(1.0) >= ABSORBED_COSINE)).to_numpy()
    # streak[i]: how many consecutive clean ops end at position i.
    breaks = np.flatnonzero(~clean)
    last_break = np.full(len(clean), -1)
    last_break[breaks] = breaks
    last_break = np.maximum.accumulate(last_break)
    streak = np.arange(len(clean)) - last_break
    for here, following in zip(positions[:-1], positions[1:], strict=True):
        between = streak[here + 1: following]
        absorbed[here] = len(between) > 0 and between.max() >= ABSORB_CLEAN_OPS
    return absorbed


def _network_output(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame,
                    join: GraphJoin | None = None) -> dict[str, Any]:
    """The network output: the Node_Output row, else the ops that produce the graph's outputs (with
    ``--graph``), else the last op with a compared output."""
    net_out = rows[rows["is_net_out"] & rows["comparable"]]
    if len(net_out):
        cos = net_out["cos"].min()
        golden_file = frame.loc[net_out.index[0], "golden_ops"]
        return {"output_source": "Node_Output", "output_op": _output_op_name(golden_file),
                "output_cosine": cos, "output_red": net_out["red"].max(),
                "output_deviates": bool(net_out["deviates"].any()), "output_known": bool(np.isfinite(cos)),
                "output_line": int(net_out["line"].iloc[0])}
    if join is not None:
        outputs = join.output_ops(_compared(ops))
        if outputs:
            chosen = ops.iloc[sorted(outputs)]
            worst = chosen.loc[chosen["out_cosine"].fillna(-2.0).idxmin()]
            return {"output_source": "graph_output", "output_op": worst["op"], "op_index": list(chosen.index),
                    "output_ops": ",".join(str(op) for op in chosen["op"][:MAX_LISTED]),
                    "output_cosine": chosen["out_cosine"].min(), "output_red": chosen["out_red"].max(),
                    "output_deviates": bool(chosen["out_deviates"].any()), "output_known": True,
                    "output_line": int(worst["source_line"])}
    # An output counts as compared when any judged metric exists (statistics-only comparisons
    # such as msprobe summary mode have no cosine, only a scale from the norms).
    compared = ops[ops["out_cosine"].notna() | ops["out_red"].notna() | ops["out_scale"].notna()
                   | ops["out_nonfinite"]]
    if not len(compared):
        return {"output_source": "none", "output_known": False, "output_deviates": False}
    last = compared.iloc[-1]
    source = "last_op" if last.name == ops.index[-1] else "last_compared_op"
    return {"output_source": source, "output_op": last["op"], "op_index": last.name,
            "output_cosine": last["out_cosine"], "output_red": last["out_red"],
            "output_deviates": bool(last["out_deviates"]), "output_known": True,
            "output_line": int(last["source_line"])}


def _output_op_name(golden_file: object) -> str:
    """The op a Node_Output row's golden file was dumped from (``Softmax_111.0.1714993867004658.npy``
    -> ``Softmax_111``); the cell as written when it is no dump file name; ``Node_Output`` when empty."""
    if golden_file is None or pd.isna(golden_file) or not str(golden_file).strip():
        return "Node_Output"
    text = str(golden_file).strip()
    parsed = parse_dump_name(text.split(",")[0].strip().rsplit("/", 1)[-1])
    return parsed.op if parsed is not None else text


def _mark_fp16_sensitive(ops: pd.DataFrame) -> None:
    catalog = load_catalog("fp16_sensitive")
    by_type = _lower_isin(ops["op_type"], catalog)
    golden = ops["golden_ops"].dropna()
    by_golden = _sensitive_golden_ascii(golden, catalog)
    if by_golden is None:
        by_golden = _sensitive_golden_exact(golden, catalog)
    ops["sensitive_golden"] = by_golden.reindex(ops.index)
    ops["fp16_sensitive"] = by_type | ops["sensitive_golden"].notna()


def _sensitive_golden_exact(golden: pd.Series, catalog: dict[str, str]) -> pd.Series:
    """Per op (``golden``'s index), its golden names whose type is in ``catalog``, comma-joined.

    The reference version, for names that are not plain ASCII: one Python call per name. (Joining
    with ``groupby(...).agg(",".join)`` costs a Python call *per op*: 3 s for 300k ops.)"""
    names = golden.str.split(",").explode().str.strip()
    sensitive = names[names.map(op_type_of_name).str.lower().isin(catalog)]
    joined: dict[Any, str] = {}
    for label, name in zip(sensitive.index, sensitive, strict=True):
        joined[label] = f"{joined[label]},{name}" if label in joined else name
    return pd.Series(joined) if joined else sensitive.groupby(level=0).agg(",".join)


# Byte classes for _sensitive_golden_ascii. SPACE: what str.strip() removes, in ASCII.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0"):ord("9") + 1] = True
_ALPHA = np.zeros(256, dtype=bool)
_ALPHA[ord("a"):ord("z") + 1] = _ALPHA[ord("A"):ord("Z") + 1] = True
_ALNUM = _ALPHA | _DIGIT
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"):ord("Z") + 1] += 32
_CELLS_PER_BLOCK = 65536  # bounds the byte arrays' memory


def _sensitive_golden_ascii(golden: pd.Series, catalog: dict[str, str]) -> pd.Series | None:
    """``_sensitive_golden_exact`` with array operations, on the cells joined into byte strings
    (a million-row comparison holds ~300k ops: a Python call per golden name costs seconds).

    None when a cell is not plain ASCII (``str.strip`` and the type regex then follow Unicode
    rules) or holds a newline or NUL: use the exact version.
    """
    keys = [key.encode("ascii") for key in catalog if key.isascii()]
    width = max(map(len, keys), default=0)
    if not width:
        return None
    keys_array = np.array(keys, dtype=f"S{width}")
    texts = golden.tolist()
    cells: list[str] = []
    owners: list[np.ndarray] = []
    for start in range(0, len(texts), _CELLS_PER_BLOCK):
        block = texts[start:start + _CELLS_PER_BLOCK]
        blob = "\n".join(block) + "\n"
        if not blob.isascii() or blob.count("\n") != len(block) or "\0" in blob:
            return None
        joined, owner = _sensitive_names(np.frombuffer(blob.encode("ascii"), dtype=np.uint8), keys_array)
        cells.extend(joined)
        owners.append(owner + start)
    if not cells:  # the exact version's empty result, from a cell known to hold none
        return _sensitive_golden_exact(golden.iloc[:1], catalog)
    return pd.Series(cells, index=golden.index[np.concatenate(owners)])


def _sensitive_names(buf: np.ndarray, keys: np.ndarray) -> tuple[list[str], np.ndarray]:
    """For cells joined by "\n" into ``buf``: the comma-joined sensitive names of each cell that
    has any, and the cell numbers. Each name is a span of ``buf``; stripping, its leaf (after the
    last "/") and its type (``op_type_of_name``: a leaf ``<letter><letters/digits>_<digits>``
    without the ``_<digits>``, else the whole leaf) are span arithmetic."""
    size = len(buf)
    ends = np.flatnonzero((buf == ord(",")) | (buf == ord("\n")))  # every name ends at one
    closes_cell = buf[ends] == ord("\n")
    cell = np.cumsum(closes_cell) - closes_cell
    first = np.concatenate(([0], ends[:-1] + 1))
    stop = ends.copy()
    # str.strip(): [first, stop) is the name without surrounding spaces (the loops run once per
    # space of the most padded name: none in real files).
    while (move := (first < stop) & _SPACE[buf[np.minimum(first, size - 1)]]).any():
        first += move
    while (move := (stop > first) & _SPACE[buf[stop - 1]]).any():
        stop -= move
    slashes = np.concatenate(([-1], np.flatnonzero(buf == ord("/"))))
    leaf = np.maximum(slashes[np.searchsorted(slashes, stop) - 1] + 1, first)
    digits_from = stop.copy()
    while (move := (digits_from > leaf) & _DIGIT[buf[digits_from - 1]]).any():
        digits_from -= move
    underscore = digits_from - 1
    suffixed = (digits_from < stop) & (underscore > leaf) & (buf[np.maximum(underscore, 0)] == ord("_"))
    # The part before "_<digits>" must start with a letter and hold letters and digits only.
    odd = np.concatenate((np.flatnonzero(~_ALNUM[buf]), [size]))
    plain = odd[np.searchsorted(odd, leaf)] >= underscore
    typed = suffixed & plain & _ALPHA[buf[np.minimum(leaf, size - 1)]]
    length = np.where(typed, underscore, stop) - leaf
    # The lower-cased type as fixed-width bytes; a type longer than every key cannot match.
    width = keys.dtype.itemsize
    fits = np.flatnonzero(length <= width)
    chars = np.zeros((len(fits), width), dtype=np.uint8)
    for k in range(width):
        chars[:, k] = np.where(k < length[fits], _LOWER[buf[np.minimum(leaf[fits] + k, size - 1)]], 0)
    sensitive = fits[np.isin(chars.view(f"S{width}").ravel(), keys)]
    if not len(sensitive):
        return [], sensitive
    # Keep each sensitive name and the byte after it, rewritten to "," when the next kept name is
    # of the same cell, else to "\n": the kept bytes then read as one joined cell per line.
    owner = cell[sensitive]
    more = np.concatenate((owner[1:] == owner[:-1], [False]))
    out = buf.copy()
    out[stop[sensitive]] = np.where(more, ord(","), ord("\n"))
    edges = np.zeros(size + 1, dtype=np.int8)  # +1 where a kept span starts, -1 after it ends
    edges[first[sensitive]] = 1
    edges[stop[sensitive] + 1] -= 1
    text = out[np.cumsum(edges[:size], dtype=np.int8) > 0].tobytes().decode("ascii")
    return text.split("\n")[:-1], owner[np.concatenate(([True], owner[1:] != owner[:-1]))]


def _keep_fp32(ops: pd.DataFrame, position: int) -> list[str]:
    """What to keep in FP32 for an overflow starting at ``position``: the op itself and the
    FP16-sensitive ops after it whose outputs are still out of range (a LayerNorm's Pow overflows,
    then its ReduceMean, Sqrt and Div see inf), and the sensitive op that then reads the
    out-of-range values back in (a Softmax after logits past 65504: kept in FP16, its input would
    be cast back and saturate again). Golden op names where known, since keep-dtype lists name the
    original model's ops. Only what the comparison shows overflowing, smallest set first."""
    def keep(op: pd.Series) -> None:
        golden = op["sensitive_golden"]
        names.extend(golden.split(",") if isinstance(golden, str) else [op["op"]])

    names: list[str] = []
    for offset, (_, op) in enumerate(ops.iloc[position: position + KEEP_FP32_SPAN].iterrows()):
        if offset and not op["out_overflow"]:
            if op["in_overflow"] and op["fp16_sensitive"]:
                keep(op)
            break
        if not offset or op["fp16_sensitive"]:
            keep(op)
    return list(dict.fromkeys(names))


def _network_fact(table: ComparisonTable, rows: pd.DataFrame, ops: pd.DataFrame,
                  output: dict[str, Any]) -> dict[str, Any]:
    deviating = ops[ops["out_deviates"]]
    comparable = rows["comparable"].to_numpy()
    stored = rows["stored_dtype"].array
    dtypes = _dtype_counts(rows, comparable)
    fact: dict[str, Any] = {
        "id": "network", "fact": "network",
        "rows": len(table.frame), "ops": len(ops),
        "compared_tensors": int(rows["comparable"].sum()),
        "deviating_tensors": int(rows["deviates"].sum()),
        "deviating_ops": len(deviating),
        "entry_points": int((ops["error_enters"] | ops["hidden_entry"]).sum()),
        "overflow_ops": int(ops["out_overflow"].sum()),
        "nonfinite_ops": int(ops["out_nonfinite"].sum()),
        "input_ops": int(ops["is_input"].sum()),
        "input_deviates": bool(ops["input_deviates"].any()),
        "dtype": str(dtypes.index[0]) if len(dtypes) else "unknown",
        "compute_dtype": compute_dtype(_first_seen(stored.codes, stored.categories, comparable)) or "unknown",
        "has_fp16": bool((stored.categories == "float16").any()),  # the categories are the dtypes present
        "format": table.format,
        **output,
    }
    if len(deviating):
        fact["first_deviating_index"] = int(deviating.index[0])
        fact["first_deviating_op"] = str(deviating["op"].iloc[0])
    fact["consistent"] = (fact["deviating_ops"] == 0 and fact["overflow_ops"] == 0
                          and not fact["output_deviates"] and not fact["input_deviates"])
    return clean_fact(fact)


OP_FACT_FIELDS = ("op", "op_type", "golden_ops", "direction", "dtype", "position", "source_line", "tensors",
                  "in_cosine", "out_cosine", "in_red", "out_red", "in_scale", "out_scale", "out_max_abs_error",
                  "out_kl",
                  "is_input", "is_output", "input_source", "inputs_known", "inputs_from", "inputs_agree",
                  "out_deviates",
                  "error_enters", "hidden_entry", "local_drop", "entry_confidence", "out_overflow",
                  "overflow_enters", "out_nonfinite", "input_deviates", "fp16_sensitive", "absorbed",
                  "downstream_deviating", "inserted_norm_op", "inserted_norm_type",
                  *TOOL_FLAGS)


GRAPH_OP_FACT_FIELDS = ("graph_known", "fused_from", "fusion_passes", "is_fused", "narrowing_cast", "cast_from",
                        "cast_to", "before_first_entry")


def _op_facts(ops: pd.DataFrame, network: dict[str, Any], limit: int, warnings: list[str],
              graph: bool = False) -> list[dict]:
    primary = ops["overflow_enters"] | ops["input_deviates"] | ops["is_output"] | ops["is_input"]
    if graph:
        primary = primary | (ops["narrowing_cast"] & ops["before_first_entry"])
    primary = primary | ops["param_first"] | ops["arg_differs"] | ops["bits_first"]
    notable = primary | ops["error_enters"] | ops["hidden_entry"] | _first_marked(ops)
    fields = list(OP_FACT_FIELDS) + list(TRAINING_OP_FIELDS) + (list(GRAPH_OP_FACT_FIELDS) if graph else [])
    chosen = ops[notable]
    if len(chosen) > limit:
        # Keep every primary op, then the earliest entry points: the earliest cause leads anyway.
        rank = np.where(primary[notable], 0, 1)
        chosen = (chosen.assign(_rank=rank).sort_values(["_rank", "position"])
                  .head(limit).sort_values("position"))
        warnings.append(f"{int(notable.sum())} notable ops; rules saw the first {limit} "
                        f"(raise --max-op-facts to see all)")
    facts = []
    for index, op in zip(chosen.index, chosen[fields].to_dict("records"), strict=True):
        fact = {"id": f"op:{index}", "fact": "op", "index": int(index), **op}
        if op["overflow_enters"]:
            fact["keep_fp32"] = ",".join(_keep_fp32(ops, int(op["position"])))
        fact["output_deviates"] = network["output_deviates"]
        decorate_op_fact(fact, network)
        facts.append(clean_fact(fact))
    return facts


def _first_marked(ops: pd.DataFrame) -> np.ndarray:
    """The first op msquickcmp marks IsPrecisionError: its own verdict, for rules to weigh."""
    marked = ops["tool_precision_error"].fillna(False).to_numpy(dtype=bool)
    first = np.zeros(len(ops), dtype=bool)
    if marked.any():
        first[int(np.argmax(marked))] = True
    return first


def _summarise_overflow(network: dict[str, Any], ops: pd.DataFrame, op_facts: list[dict[str, Any]]) -> None:
    """Ops where an overflow starts on agreeing inputs (not fed by an earlier overflow's garbage),
    and the union of what to keep in FP32 for all of them: a user who fixes only the first overflow
    would otherwise meet the next one in the following run."""
    independent = [f for f in op_facts if f.get("overflow_enters") and f.get("inputs_agree")]
    network["overflow_entries"] = len(independent)
    keep = [name for fact in independent for name in fact.get("keep_fp32", "").split(",") if name]
    if keep:
        network["keep_fp32_all"] = ",".join(list(dict.fromkeys(keep))[:MAX_KEEP_FP32])


def clean_fact(fact: dict[str, Any]) -> dict[str, Any]:
    """Make a fact plain: no NA/NaN (the field is then absent, so conditions on it do not match) and
    Python scalars instead of numpy ones. Infinities stay; the engine clamps them when it encodes."""
    clean: dict[str, Any] = {}
    for key, value in fact.items():
        if value is None or value is pd.NA:
            continue
        if isinstance(value, (np.bool_, bool)):
            clean[key] = bool(value)
        elif isinstance(value, (np.integer, int)):
            clean[key] = int(value)
        elif isinstance(value, (np.floating, float)):
            number = float(value)
            if math.isnan(number):
                continue
            clean[key] = number
        else:
            clean[key] = str(value)
    return clean
