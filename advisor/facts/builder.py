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

from ..ingest.table import ComparisonTable
from .catalogs import load_catalog, op_type_of_name
from .thresholds import Thresholds

# Op types that feed the network: their outputs (or the first op's inputs) are the network input.
INPUT_OP_TYPES = frozenset({"data", "placeholder", "aippdata", "refdata", "input"})
# How many ops from an overflow start to follow while their outputs stay out of FP16 range.
KEEP_FP32_SPAN = 32
DEFAULT_MAX_OP_FACTS = 2000
SCALE_MIN_RMS = 1e-6
MAX_KEEP_FP32 = 64


@dataclass
class FactSet:
    network: dict[str, Any]
    ops: pd.DataFrame                      # one row per op, execution order, all ops
    op_facts: list[dict[str, Any]]         # the notable ops, ready to assert
    error_metric: str | None               # secondary metric for the plot
    warnings: list[str] = field(default_factory=list)

    def all_facts(self) -> list[dict[str, Any]]:
        return [self.network, *self.op_facts]


def build_facts(table: ComparisonTable, thresholds: Thresholds, *, input_nodes: tuple[str, ...] = (),
                max_op_facts: int = DEFAULT_MAX_OP_FACTS) -> FactSet:
    frame = table.frame
    warnings: list[str] = []
    rows = _row_flags(frame, thresholds)
    ops = _aggregate_ops(frame, rows)
    _mark_inputs(ops, input_nodes, warnings)
    _mark_entries(ops)
    output = _network_output(frame, rows, ops)
    output_index = output.pop("op_index", None)
    ops["is_output"] = ops.index == output_index if output_index is not None else False
    _mark_fp16_sensitive(ops)
    network = _network_fact(table, rows, ops, output)
    op_facts = _op_facts(ops, network, max_op_facts, warnings)
    _summarise_overflow(network, ops, op_facts)
    error_metric = next((m for m in ("relative_euclidean_distance", "max_abs_error", "mean_relative_error")
                         if m in table.present_metrics), None)
    return FactSet(network=network, ops=ops, op_facts=op_facts, error_metric=error_metric, warnings=warnings)


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
    """Per-row: comparable, deviates, non-finite target, overflow."""
    comparable = ~(frame["npu_only"].fillna(False) | frame["golden_only"].fillna(False)).to_numpy(dtype=bool)
    stored = frame["npu_dtype"].fillna(frame["golden_dtype"])
    dtype = effective_dtypes(stored, compute_dtype(stored[comparable]))
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
        nonfinite = (golden_ok & ~(np.isfinite(npu_mean) & np.isfinite(npu_std))) | np.isposinf(
            frame["max_abs_error"].to_numpy())
        # One side all zero makes cosine NaN; a target that collapsed to zeros is a real deviation.
        collapsed = golden_ok & (npu_std == 0) & (npu_mean == 0) & (frame["golden_std"].to_numpy() > 0)
        deviates = comparable & ((cos < thresholds.per_row(dtype, "cosine"))
                                 | (red > thresholds.per_row(dtype, "relative_euclidean_distance"))
                                 | (scale > thresholds.per_row(dtype, "scale"))
                                 | nonfinite | collapsed)
    is_fp16 = (stored == "float16").fillna(False).to_numpy(dtype=bool)
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
        "dtype": dtype,
        "stored_dtype": stored,
        "line": frame["source_line"],
    })


def _aggregate_ops(frame: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    op_rows = ~rows["is_net_out"] & rows["op_index"].notna()
    ident = frame.loc[op_rows, ["op_index", "op_name", "op_type", "golden_ops", "source_line"]]
    ops = ident.groupby("op_index", sort=True).agg(
        op=("op_name", "first"), op_type=("op_type", "first"), golden_ops=("golden_ops", "first"),
        source_line=("source_line", "min"), tensors=("source_line", "size"))
    for side, mask in (("in", op_rows & rows["is_input"]), ("out", op_rows & ~rows["is_input"])):
        agg = rows[mask].groupby("op_index", sort=False).agg(
            cosine=("cos", "min"), red=("red", "max"), scale=("scale", "max"), max_abs_error=("mae", "max"),
            kl=("kl", "max"),
            deviates=("deviates", "any"), overflow=("overflow", "any"), nonfinite=("nonfinite", "any"),
            rows=("comparable", "size"), dtype=("stored_dtype", "first"))
        ops = ops.join(agg.add_prefix(f"{side}_"))
    for column in ("in_deviates", "in_overflow", "in_nonfinite",
                   "out_deviates", "out_overflow", "out_nonfinite"):
        ops[column] = ops[column].fillna(False).astype(bool)
    for column in ("in_rows", "out_rows"):
        ops[column] = ops[column].fillna(0).astype("int64")
    ops["dtype"] = ops["out_dtype"].fillna(ops["in_dtype"])
    ops["position"] = np.arange(len(ops), dtype="int64")
    return ops


def _mark_inputs(ops: pd.DataFrame, input_nodes: tuple[str, ...], warnings: list[str]) -> None:
    """Input ops: named by the user, else Data-like op types, else the first op in execution order."""
    if input_nodes:
        names = set(input_nodes)
        golden_sets = ops["golden_ops"].fillna("").str.split(",")
        is_input = ops["op"].isin(names) | golden_sets.map(lambda gs: not names.isdisjoint(gs))
        found = set(ops.loc[is_input, "op"]) | {g for gs in golden_sets[is_input] for g in gs}
        missing = sorted(names - found)
        if missing:
            warnings.append(f"--input-nodes not found in the comparison: {', '.join(missing)}")
        ops["input_source"] = "user"
    else:
        is_input = ops["op_type"].fillna("").str.lower().isin(INPUT_OP_TYPES)
        ops["input_source"] = "op_type"
        if not is_input.any() and len(ops):
            is_input = ops["position"] == 0
            ops["input_source"] = "first_op"
    ops["is_input"] = is_input.to_numpy(dtype=bool)
    is_data = ops["op_type"].fillna("").str.lower().isin(INPUT_OP_TYPES)
    # A Data op has no inputs of its own: its output *is* the network input.
    ops["input_deviates"] = ops["is_input"] & (ops["in_deviates"] | (is_data & ops["out_deviates"]))


def _mark_entries(ops: pd.DataFrame) -> None:
    """Where error enters (local error) as opposed to where it is inherited (accumulated)."""
    out_dev = ops["out_deviates"]
    prev_out_dev = out_dev.shift(1, fill_value=False).astype(bool)
    earlier_dev = out_dev.cumsum().shift(1, fill_value=0) > 0
    has_inputs = ops["in_rows"] > 0
    ops["inputs_known"] = has_inputs
    ops["inputs_agree"] = np.where(has_inputs, ~ops["in_deviates"], ~prev_out_dev)
    ops["error_enters"] = out_dev & ops["inputs_agree"]
    # The first disagreement of the whole network shows on an op's *inputs*: it entered in an op the
    # comparison does not cover (a target-only Cast/TransData, an op dumped on one side only).
    ops["hidden_entry"] = has_inputs & ops["in_deviates"] & ~earlier_dev & ~ops["is_input"]
    reference = ops["in_cosine"].where(has_inputs, ops["out_cosine"].shift(1))
    ops["local_drop"] = (reference - ops["out_cosine"]).where(ops["error_enters"])
    prev_overflow = ops["out_overflow"].shift(1, fill_value=False).astype(bool)
    inputs_overflow = np.where(has_inputs, ops["in_overflow"], prev_overflow)
    ops["overflow_enters"] = ops["out_overflow"] & ~inputs_overflow
    # Ops that deviate after this one: what a root cause here would explain.
    after = out_dev[::-1].cumsum()[::-1] - out_dev
    ops["downstream_deviating"] = after.astype("int64")
    severity = ((1.0 - ops["out_cosine"]) / 0.01).clip(0, 5).fillna(5) / 5   # 0..1
    ops["entry_confidence"] = (np.where(has_inputs, 0.6, 0.45) + 0.35 * severity).round(3)


def _network_output(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame) -> dict[str, Any]:
    """The network output: the Node_Output row, else the last op with a compared output."""
    net_out = rows[rows["is_net_out"] & rows["comparable"]]
    if len(net_out):
        cos = net_out["cos"].min()
        golden_file = frame.loc[net_out.index[0], "golden_ops"]
        return {"output_source": "Node_Output",
                "output_op": str(golden_file) if pd.notna(golden_file) else "Node_Output",
                "output_cosine": cos, "output_red": net_out["red"].max(),
                "output_deviates": bool(net_out["deviates"].any()), "output_known": bool(np.isfinite(cos)),
                "output_line": int(net_out["line"].iloc[0])}
    compared = ops[ops["out_cosine"].notna() | ops["out_nonfinite"]]
    if not len(compared):
        return {"output_source": "none", "output_known": False, "output_deviates": False}
    last = compared.iloc[-1]
    source = "last_op" if last.name == ops.index[-1] else "last_compared_op"
    return {"output_source": source, "output_op": last["op"], "op_index": last.name,
            "output_cosine": last["out_cosine"], "output_red": last["out_red"],
            "output_deviates": bool(last["out_deviates"]), "output_known": True,
            "output_line": int(last["source_line"])}


def _mark_fp16_sensitive(ops: pd.DataFrame) -> None:
    catalog = load_catalog("fp16_sensitive")
    by_type = ops["op_type"].fillna("").str.lower().isin(catalog)
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
    odd = np.concatenate((np.flatnonzero(~(_ALPHA[buf] | _DIGIT[buf])), [size]))
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
    edges = (np.bincount(first[sensitive], minlength=size + 1)
             - np.bincount(stop[sensitive] + 1, minlength=size + 1))
    text = out[np.cumsum(edges[:size]) > 0].tobytes().decode("ascii")
    return text.split("\n")[:-1], np.unique(owner)


def _keep_fp32(ops: pd.DataFrame, position: int) -> list[str]:
    """What to keep in FP32 for an overflow starting at ``position``: the op itself and the
    FP16-sensitive ops after it whose outputs are still out of range (a LayerNorm's Pow overflows,
    then its ReduceMean, Sqrt and Div see inf). Golden op names where known, since keep-dtype lists
    name the original model's ops. Only what the comparison shows overflowing, smallest set first."""
    names: list[str] = []
    for offset, (_, op) in enumerate(ops.iloc[position: position + KEEP_FP32_SPAN].iterrows()):
        if offset and not op["out_overflow"]:
            break
        if offset and not op["fp16_sensitive"]:
            continue
        golden = op["sensitive_golden"]
        names.extend(golden.split(",") if isinstance(golden, str) else [op["op"]])
    return list(dict.fromkeys(names))


def _network_fact(table: ComparisonTable, rows: pd.DataFrame, ops: pd.DataFrame,
                  output: dict[str, Any]) -> dict[str, Any]:
    deviating = ops[ops["out_deviates"]]
    dtypes = rows.loc[rows["comparable"], "stored_dtype"].value_counts()
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
        "compute_dtype": compute_dtype(rows.loc[rows["comparable"], "stored_dtype"]) or "unknown",
        "has_fp16": bool((rows["stored_dtype"] == "float16").any()),
        "format": table.format,
        **output,
    }
    if len(deviating):
        fact["first_deviating_index"] = int(deviating.index[0])
        fact["first_deviating_op"] = str(deviating["op"].iloc[0])
    fact["consistent"] = (fact["deviating_ops"] == 0 and fact["overflow_ops"] == 0
                          and not fact["output_deviates"] and not fact["input_deviates"])
    return clean_fact(fact)


OP_FACT_FIELDS = ("op", "op_type", "golden_ops", "dtype", "position", "source_line", "tensors",
                  "in_cosine", "out_cosine", "in_red", "out_red", "in_scale", "out_scale", "out_max_abs_error",
                  "out_kl",
                  "is_input", "is_output", "input_source", "inputs_known", "inputs_agree", "out_deviates",
                  "error_enters", "hidden_entry", "local_drop", "entry_confidence", "out_overflow",
                  "overflow_enters", "out_nonfinite", "input_deviates", "fp16_sensitive",
                  "downstream_deviating")


def _op_facts(ops: pd.DataFrame, network: dict[str, Any], limit: int, warnings: list[str]) -> list[dict]:
    primary = ops["overflow_enters"] | ops["input_deviates"] | ops["is_output"] | ops["is_input"]
    notable = primary | ops["error_enters"] | ops["hidden_entry"]
    chosen = ops[notable]
    if len(chosen) > limit:
        # Keep every primary op, then the earliest entry points: the earliest cause leads anyway.
        rank = np.where(primary[notable], 0, 1)
        chosen = (chosen.assign(_rank=rank).sort_values(["_rank", "position"])
                  .head(limit).sort_values("position"))
        warnings.append(f"{int(notable.sum())} notable ops; rules saw the first {limit} "
                        f"(raise --max-op-facts to see all)")
    facts = []
    for index, op in zip(chosen.index, chosen[list(OP_FACT_FIELDS)].to_dict("records"), strict=True):
        fact = {"id": f"op:{index}", "fact": "op", "index": int(index), **op}
        if op["overflow_enters"]:
            fact["keep_fp32"] = ",".join(_keep_fp32(ops, int(op["position"])))
        fact["output_deviates"] = network["output_deviates"]
        facts.append(clean_fact(fact))
    return facts


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
