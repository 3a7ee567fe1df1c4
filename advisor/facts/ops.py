"""Op aggregation: the rows grouped into one row per op (a ``reduceat`` group-by), input ops, tool marks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..catalogs import load_catalog
from ..ingest.table import coded_from, lower_isin, text_mask
from .graph_join import MAX_LISTED

# Op types that feed the network: their outputs (or the first op's inputs) are the network input.
# Op types that stand for a network input (knowledge/ops/network_input.yaml).
INPUT_OP_TYPES = frozenset(load_catalog("network_input"))


# What an op's input tensors (``in_*``) and its other tensors (``out_*``) are summarised into:
# column -> (the ``rows`` column, how that side's rows combine, the value when it has none).
SIDE_SUMMARY: dict[str, tuple[str, np.ufunc, Any]] = {
    "cosine": ("cos", np.fmin, np.nan), "red": ("red", np.fmax, np.nan), "scale": ("scale", np.fmax, np.nan),
    "max_abs_error": ("mae", np.fmax, np.nan), "kl": ("kl", np.fmax, np.nan),
    "deviates": ("deviates", np.logical_or, False), "overflow": ("overflow", np.logical_or, False),
    "nonfinite": ("nonfinite", np.logical_or, False), "both_nonfinite": ("both_nonfinite", np.logical_or, False),
    "reference_nonfinite": ("reference_nonfinite", np.logical_or, False),
    "deviates_own": ("deviates_own", np.logical_or, False), "identical": ("identical", np.logical_and, False),
    "identical_by": ("identical_by", np.maximum, -1), "state_rel": ("state_rel", np.fmax, np.nan),
}  # fmin/fmax skip NaN like groupby's min/max; then ``rows`` (count) and ``dtype`` (first known)
OP_TEXT_COLUMNS = {"op": "op_name", "op_type": "op_type", "golden_ops": "golden_ops", "direction": "direction"}


class Groups:
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
        float; NaN when there is none. Found by searching the present rows' ordinals for each
        group's start: no row-sized array of positions."""
        if not len(self.starts):
            return np.zeros(0, dtype=float)
        taken = present[self._take]
        if not taken.any():   # a column no row has (a training direction in an inference comparison)
            return np.full(len(self.starts), np.nan)
        if taken.all():   # a value on every row (an op's name, its type): each group's first row
            ordinal, found = self.starts, np.ones(len(self.starts), dtype=bool)
        else:
            hits = np.flatnonzero(taken)                  # ordinals (in group order) of the present rows
            at = np.searchsorted(hits, self.starts)       # the first present row at or after each start
            ordinal = hits[np.minimum(at, len(hits) - 1)] if len(hits) else np.zeros(len(at), dtype=np.int64)
            found = (at < len(hits)) & (ordinal < self.starts + self.sizes)
        row = ordinal + self._take.start if isinstance(self._take, slice) else self._take[ordinal]
        return np.where(found, row, np.nan)


def aggregate_ops(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per op in op-index order: its name, type, golden ops, first line and tensor count,
    then its input tensors (``in_*``) and its other tensors (``out_*``) summarised.

    One pass per column over rows grouped by (op, side); a text column is read only at the one
    row per op that holds its first value, never grouped or copied."""
    op_rows = (~rows["is_net_out"] & rows["op_index"].notna() & rows["aggregated"]).to_numpy()
    # The op of each row as a code into the sorted op indices (sort-based: no hash table over a
    # million rows); rows outside op_rows get a code too, which Groups never reads.
    index = rows["op_index"]
    values = index.to_numpy(dtype=np.int64, na_value=-1)
    op_labels = values[op_rows]   # np.unique hashes integers: slower than sorting rows in op order,
    if (op_labels[1:] < op_labels[:-1]).any():   # which they usually are already (a sort: 50 ms at 1M rows)
        op_labels.sort()
    op_labels = op_labels[np.concatenate(([True], op_labels[1:] != op_labels[:-1]))] if len(op_labels) else op_labels
    key = np.searchsorted(op_labels, values)
    del values
    key *= 2
    key += ~rows["is_input"].to_numpy(dtype=bool)   # side 0: inputs, 1: the rest
    groups = Groups(key, op_rows)
    del key
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

    # The columns are gathered, then made into the frame at once, uncopied (a column set on a
    # DataFrame one at a time is copied).
    columns: dict[str, Any] = {}
    for name, column in OP_TEXT_COLUMNS.items():
        columns[name] = _take(frame[column].array, both(groups.first(frame[column].notna().to_numpy())))
    columns["source_line"] = both(groups.reduce(np.minimum, rows["line"].to_numpy())).astype("int64")
    columns["tensors"] = per_op(groups.sizes, 0, 0) + per_op(groups.sizes, 1, 0)
    stored = rows["stored_dtype"].array
    first_dtype = groups.first(stored.codes >= 0)
    dtype_code = np.where(np.isnan(first_dtype), np.nan, stored.codes[np.nan_to_num(first_dtype).astype(np.int64)])
    summaries: dict[str, list[np.ndarray]] = {}   # per op, [in, out]: each per-group summary freed at once
    for name, (column, ufunc, fill) in SIDE_SUMMARY.items():
        summary = groups.reduce(ufunc, rows[column].to_numpy())
        summaries[name] = [per_op(summary, side, fill) for side in (0, 1)]
        del summary
    side_dtypes = []
    for side, prefix in enumerate(("in", "out")):
        for name in SIDE_SUMMARY:
            columns[f"{prefix}_{name}"] = summaries[name][side]
        columns[f"{prefix}_rows"] = per_op(groups.sizes, side, 0)
        side_dtypes.append(np.nan_to_num(per_op(dtype_code, side, np.nan), nan=-1).astype(stored.codes.dtype))
        columns[f"{prefix}_dtype"] = pd.Categorical.from_codes(side_dtypes[-1], dtype=stored.dtype)
    del summaries
    columns["dtype"] = pd.Categorical.from_codes(np.where(side_dtypes[1] >= 0, side_dtypes[1], side_dtypes[0]),
                                                 dtype=stored.dtype)
    columns["position"] = np.arange(n_ops, dtype="int64")
    ops = pd.DataFrame(columns, index=pd.Index(pd.array(op_labels, dtype=index.dtype), name="op_index"),
                       copy=False)
    return ops


# msquickcmp's own marks on each row (advisor/ingest/table.py): per op, whether any row carries one.
TOOL_FLAGS = ("tool_precision_error", "tool_output_node")


def mark_tool_flags(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame) -> None:
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


def tool_flag_fields(ops: pd.DataFrame) -> dict[str, Any]:
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
    """``values`` at positions ``at`` (floats, NaN for none: NA), keeping the dtype.

    An Arrow column read in chunks is taken chunk by chunk: pyarrow's ``take`` on a chunked array
    first concatenates every chunk, a transient copy of the whole column (150 MiB for the op names
    of 3M rows) to fetch a few hundred thousand values."""
    positions = np.where(np.isnan(at), -1, at).astype(np.int64)
    starts = _chunk_starts(values)
    if starts is None or len(starts) <= 2:
        return values.take(positions, allow_fill=True)
    present = np.flatnonzero(positions >= 0)
    wanted = positions[present]
    order = np.argsort(wanted, kind="stable")
    rows = wanted[order]
    bounds = np.searchsorted(rows, starts)
    parts = [values[starts[c]:starts[c + 1]].take(rows[bounds[c]:bounds[c + 1]] - starts[c])
             for c in range(len(starts) - 1) if bounds[c] < bounds[c + 1]]
    gathered = type(values)._concat_same_type(parts) if parts else values[:0]
    where = np.full(len(positions), -1, dtype=np.int64)
    where[present[order]] = np.arange(len(order))
    return gathered.take(where, allow_fill=True)


def _chunk_starts(values: pd.api.extensions.ExtensionArray) -> np.ndarray | None:
    """Where each chunk of an Arrow-backed column starts, and its length at the end; None when the
    column is not a chunked Arrow array."""
    arrow = getattr(values, "__arrow_array__", None)
    chunks = getattr(arrow(), "chunks", None) if arrow is not None else None
    if chunks is None:
        return None
    return np.concatenate(([0], np.cumsum([len(chunk) for chunk in chunks], dtype=np.int64)))


def mark_inputs(ops: pd.DataFrame, input_nodes: tuple[str, ...], warnings: list[str]) -> None:
    """Input ops: named by the user, else Data-like op types, else the first op in execution order."""
    if input_nodes:
        source = "user"
        names = set(input_nodes)
        golden = ops["golden_ops"].array   # codes into the distinct texts
        texts = pd.Series(golden.categories, dtype=object)
        # Only a text that contains a name can list it: split those few texts, not every op's.
        maybe = _cells_containing(texts, names)
        listed = texts.iloc[maybe].str.split(",").map(lambda gs: not names.isdisjoint(gs)).to_numpy(dtype=bool)
        in_golden = np.isin(golden.codes, maybe[listed])
        is_input = pd.Series(text_mask(ops["op"], lambda texts: texts.isin(names)) | in_golden, index=ops.index)
        found = set(ops.loc[is_input, "op"]) | {g for gs in golden[is_input].dropna() for g in gs.split(",")}
        missing = sorted(names - found)
        if missing:
            warnings.append(f"--input-nodes not found in the comparison: {', '.join(missing)}")
    else:
        is_input = lower_isin(ops["op_type"], INPUT_OP_TYPES)
        source = "op_type"
        if not is_input.any() and len(ops):
            is_input = ops["position"] == 0
            source = "first_op"
    ops["input_source"] = coded_from(np.zeros(len(ops), dtype=np.int8), [source])
    ops["is_input"] = is_input.to_numpy(dtype=bool)
    is_data = lower_isin(ops["op_type"], INPUT_OP_TYPES)
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


def mark_inserted_normalization(ops: pd.DataFrame) -> None:
    """``inserted_norm_op`` / ``inserted_norm_type`` on a network input: the op that exists only on
    the target (no golden ops) among those right after the input, before the next op with golden
    data, whose type normalises an input (knowledge/ops/input_normalizing.yaml: the BatchNorm
    MagicMind's insert_bn_before_firstnode adds, an ATC AIPP)."""
    found: dict[int, tuple[str, str]] = {}   # input position -> (op, type)
    inputs = np.flatnonzero(ops["is_input"].to_numpy(dtype=bool))
    normalizing = set(load_catalog("input_normalizing"))
    npu_only = ops["golden_ops"].isna().to_numpy()
    types = ops["op_type"]
    for position in inputs:          # a handful of inputs, each followed by a few inserted ops
        after = position + 1
        while after < len(ops) and npu_only[after]:
            if str(types.iat[after]).lower() in normalizing:
                found[int(position)] = (str(ops["op"].iat[after]), str(types.iat[after]))
                break
            after += 1
    for column, part in (("inserted_norm_op", 0), ("inserted_norm_type", 1)):
        texts = list(dict.fromkeys(names[part] for names in found.values()))
        codes = np.full(len(ops), -1, dtype=np.int64)
        for position, names in found.items():
            codes[position] = texts.index(names[part])
        ops[column] = coded_from(codes, texts)


def gradient_owner(ops: pd.DataFrame) -> np.ndarray:
    """Per op, the position of the backward call that computes it when it is a module's parameter
    gradients (msprobe L0 lists ``Module.fc2.Linear``'s gradients as an op of their own, just before or
    just after ``Module.fc2.Linear.backward.0``); -1 for every other op."""
    owner = np.full(len(ops), -1, dtype=np.int64)
    candidates = np.flatnonzero((ops["direction"] == "backward").fillna(False).to_numpy(dtype=bool)
                                & (ops["in_rows"] == 0).to_numpy(dtype=bool))
    if not len(candidates):
        return owner
    names = ops["op"].astype(object).to_numpy()
    for at in candidates:
        name = names[at]
        if not isinstance(name, str) or ".backward." in name or ".forward." in name:
            continue
        for near in (at + 1, at - 1):
            if 0 <= near < len(ops) and isinstance(names[near], str) and names[near].startswith(name + ".backward."):
                owner[at] = near
                break
    return owner
