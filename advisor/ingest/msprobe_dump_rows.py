"""Two dumps' tensors, paired into the rows of one ComparisonTable (advisor/ingest/msprobe_dump.py).

Each dump arrives as columns (``DumpColumns``): per tensor its call, io, the word of its name and
codes into the distinct texts of its argument, dtype, shape, md5 and value, and its statistics. Within a call
pair, tensors pair by (io, position or keyword); the rows are built by taking from both sides' columns
by position, the texts of both sides merged once per distinct text: no Python object per row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from advisor.dtypes import normalise_dtypes
from advisor.ingest.call_matching import CallPair
from advisor.ingest.derived_metrics import STAT_PAIRS, relative_differences
from advisor.ingest.msprobe_names import LEADING_INDEX, split_call_names, split_tensor_names
from advisor.ingest.table import COLUMNS, FLOAT_COLUMNS, ComparisonTable, coded_from, na_columns

STATS = ("max", "min", "mean", "norm")
IO_NAMES = ("input", "output", "parameter", "parameter_grad")
WORDS = ("input", "output", "parameters")   # a tensor's name: <call>.<word>.<arg>, or <call>.<arg>
GRAD = ".parameters_grad"
DOT = pa.scalar(".", pa.large_string())


@dataclass
class DumpColumns:
    """One dump's tensors as columns, a row per tensor in file order."""

    path: Path
    framework: str | None
    calls: list[str]                 # in file (execution) order
    call: np.ndarray                 # the tensor's call, an index into ``calls`` (integers, as all codes)
    io: np.ndarray                   # an index into IO_NAMES, -1 unknown (a .pkl name no pattern splits)
    word: np.ndarray                 # of the name, an index into WORDS, -1 none (``<call>.<arg>``)
    codes: dict[str, np.ndarray]     # arg, dtype, shape, md5, text: into ``texts[name]``, -1 none
    texts: dict[str, list[str]]
    stats: np.ndarray                # (tensors, 4) float64: STATS, NaN where not given
    nonfinite: np.ndarray            # bool: the printed max or min is inf or NaN
    line: np.ndarray                 # int64: the line of the call's key (of the tensor in a .pkl)
    names: list[str] | None          # per tensor, its name whole (.pkl); else <call>.<word>.<arg> (dump.json)


@dataclass
class PairedRows:
    """The table's rows: per row its call pair and its tensor on each side (-1: none)."""

    op_index: np.ndarray             # int64: the call pair's position
    target: np.ndarray               # int64: the target tensor
    bench: np.ndarray                # int64: the bench tensor
    target_call: np.ndarray          # per call pair, its target call (-1: none)
    bench_call: np.ndarray           # per call pair, its bench call (-1: none)


def paired_rows(pairs: list[CallPair], target: DumpColumns, bench: DumpColumns) -> PairedRows:
    """Within a call pair, tensors pair by io and by position / keyword (``0``, ``0.1``, ``bias``); rows
    follow the pairs, then the target's tensor order, bench-only tensors last."""
    target_call = _call_numbers(target.calls, [p.target for p in pairs])
    bench_call = _call_numbers(bench.calls, [p.bench for p in pairs])
    args, (target_arg, bench_arg) = _merged_texts((target.texts["arg"], target.codes["arg"]),
                                                  (bench.texts["arg"], bench.codes["arg"]))
    per_pair = (len(IO_NAMES) + 1) * (len(args) + 1)   # keys of one pair: (io, argument)

    def keys(dump: DumpColumns, calls_of_pairs: np.ndarray, arg: np.ndarray) -> np.ndarray:
        pair_of_call = np.full(len(dump.calls), -1, dtype=np.int64)
        known = calls_of_pairs >= 0
        pair_of_call[calls_of_pairs[known]] = np.flatnonzero(known)
        return (pair_of_call[dump.call] * per_pair + (dump.io.astype(np.int64) + 1) * (len(args) + 1)
                + arg.astype(np.int64) + 1)

    left = pd.DataFrame({"key": keys(target, target_call, target_arg), "target": np.arange(len(target.call))})
    right = pd.DataFrame({"key": keys(bench, bench_call, bench_arg), "bench": np.arange(len(bench.call))})
    rows = left.merge(right, on="key", how="outer", sort=False)
    op_index = rows["key"].to_numpy(dtype=np.int64) // per_pair
    on_target = rows["target"].fillna(-1).to_numpy(dtype=np.int64)
    on_bench = rows["bench"].fillna(-1).to_numpy(dtype=np.int64)
    del rows, left, right
    order = np.lexsort((np.where(on_bench < 0, len(bench.call), on_bench),
                        np.where(on_target < 0, len(target.call), on_target), op_index))
    return PairedRows(op_index[order], on_target[order], on_bench[order], target_call, bench_call)


def _call_numbers(calls: list[str], named: list[str | None]) -> np.ndarray:
    number = {call: i for i, call in enumerate(calls)}
    return np.array([number[c] if c is not None else -1 for c in named], dtype=np.int64)


def _merged_texts(*sides: tuple[list[str], np.ndarray]) -> tuple[list[str], list[np.ndarray]]:
    """The distinct texts of several coded columns, and each column's codes into them (-1 kept)."""
    texts = list(dict.fromkeys(text for side_texts, _ in sides for text in side_texts))
    number = {text: i for i, text in enumerate(texts)}
    codes = []
    for side_texts, side_codes in sides:
        remap = np.array([number[text] for text in side_texts] + [-1], dtype=np.int64)   # -1 takes the last
        codes.append(remap[side_codes])
    return texts, codes


def _at(values: np.ndarray, rows: np.ndarray, fill: object) -> np.ndarray:
    """``values[rows]``, ``fill`` where a row is -1."""
    return np.append(values, np.array([fill], dtype=values.dtype))[rows]


def _either(rows: PairedRows, has_target: np.ndarray, target: tuple[list[str], np.ndarray],
            bench: tuple[list[str], np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """Per row, the code of the target tensor's text (the bench tensor's for a bench-only row) into
    the texts of both sides."""
    texts, (on_target, on_bench) = _merged_texts(target, bench)
    return np.where(has_target, _at(on_target, rows.target, -1), _at(on_bench, rows.bench, -1)), texts


def _arrow_texts(codes: np.ndarray, texts: list[str]) -> pa.Array:
    return pa.array(texts, pa.large_string()).take(pa.array(codes, mask=codes < 0))


def canonical_table(rows: PairedRows, target: DumpColumns, bench: DumpColumns, *, source: Path,
                    format: str) -> ComparisonTable:
    n = len(rows.op_index)
    has_t, has_b = rows.target >= 0, rows.bench >= 0
    # per row its call: the target tensor's (the bench tensor's for a bench-only row), in both sides' calls
    calls = pa.array(target.calls + bench.calls, pa.large_string())
    row_call = np.where(has_t, _at(target.call.astype(np.int64), rows.target, -1),
                        len(target.calls) + _at(bench.call.astype(np.int64), rows.bench, -1))
    columns: dict[str, object] = {
        "op_index": pd.array(rows.op_index, dtype="Int64"),
        "op_name": coded_from(np.where(has_t, rows.target_call[rows.op_index], -1), target.calls),
        "golden_ops": coded_from(rows.bench_call[rows.op_index], bench.calls),
        "is_network_output": pd.array(np.zeros(n, dtype=bool), dtype="boolean"),
        "npu_only": pd.array(has_t & ~has_b, dtype="boolean"),
        "golden_only": pd.array(has_b & ~has_t, dtype="boolean"),
        "source_line": np.where(has_t, _at(target.line, rows.target, 0), _at(bench.line, rows.bench, 0)),
        **_names(rows, has_t, row_call, calls, target, bench),
        **_call_parts(row_call, calls),
        **_tensor_texts(rows, target, bench),
    }
    for i, stat in enumerate(STATS):
        columns[f"npu_{stat}"] = _at(target.stats[:, i], rows.target, np.nan)
        columns[f"golden_{stat}"] = _at(bench.stats[:, i], rows.bench, np.nan)
    for side, dump, at, present in (("npu", target, rows.target, has_t), ("golden", bench, rows.bench, has_b)):
        columns[f"{side}_nonfinite"] = pd.arrays.BooleanArray(_at(dump.nonfinite, at, False) & present, ~present)
        if dump.texts["text"]:   # else NA, in the buffer absent columns share
            columns[f"{side}_arg"] = pd.arrays.ArrowStringArray(_arrow_texts(_at(dump.codes["text"], at, -1),
                                                                             dump.texts["text"]))
    for diff, (npu_stat, golden_stat) in STAT_PAIRS.items():
        columns[diff] = relative_differences(columns[npu_stat], columns[golden_stat])
    absent = na_columns([name for name in COLUMNS if name not in columns], n)
    frame = pd.DataFrame({name: columns[name] if name in columns else absent[name] for name in COLUMNS}, copy=False)
    statistics = {f"{side}_{stat}" for side in ("npu", "golden") for stat in STATS}
    present = [c for c in FLOAT_COLUMNS if c in statistics or c in STAT_PAIRS]
    return ComparisonTable(frame=frame, source=source, format=format, present_metrics=present,
                           derived_metrics=[c for c in present if c in STAT_PAIRS])


def _names(rows: PairedRows, has_t: np.ndarray, row_call: np.ndarray, calls: pa.Array, target: DumpColumns,
           bench: DumpColumns) -> dict[str, object]:
    """``tensor_id`` (``<call>.<word>.<arg>``, or the name whole in a .pkl), ``io`` and ``slot`` (the
    argument's leading index; 0 for a single unnamed output; none for a keyword) of each row."""
    arg, args = _either(rows, has_t, (target.texts["arg"], target.codes["arg"]),
                        (bench.texts["arg"], bench.codes["arg"]))
    io = np.where(has_t, _at(target.io, rows.target, -1), _at(bench.io, rows.bench, -1))
    word = np.where(has_t, _at(target.word, rows.target, -1), _at(bench.word, rows.bench, -1))
    names = pc.binary_join_element_wise(calls.take(pa.array(row_call)), _arrow_texts(word, list(WORDS)),
                                        _arrow_texts(arg, args), DOT, null_handling="skip")
    if target.names is not None or bench.names is not None:   # a .pkl tensor keeps its name as written
        whole = [pa.array(dump.names, pa.large_string()).take(pa.array(at, mask=at < 0))
                 if dump.names is not None else pa.nulls(len(at), pa.large_string())
                 for dump, at in ((target, rows.target), (bench, rows.bench))]
        names = pc.coalesce(pc.if_else(pa.array(has_t), *whole), names)
    leading = [LEADING_INDEX.match(text) for text in args]
    slot_of = np.array([int(m["slot"]) if m else 0 for m in leading] + [0], dtype=np.int64)
    no_slot = np.array([m is None for m in leading] + [False])
    return {
        "tensor_id": pd.arrays.ArrowStringArray(names),
        "io": coded_from(io, list(IO_NAMES)),
        "slot": pd.arrays.IntegerArray(slot_of[arg], no_slot[arg] | (io < 0)),
    }


def _call_parts(row_call: np.ndarray, calls: pa.Array) -> dict[str, object]:
    """``op_type`` and ``direction`` of each row, from its call's name (msprobe_names), each distinct
    call parsed once; a module's ``parameters_grad`` is a backward call of the module's class."""
    names = pd.Series(pd.arrays.ArrowStringArray(calls), copy=False)
    parts = split_call_names(names)
    grad = names.str.endswith(GRAD).to_numpy(dtype=bool)
    if grad.any():
        owners = split_tensor_names(names[grad])
        for name in ("op_type", "direction"):
            parts.loc[grad, name] = owners[name]
    op_types, op_type_texts = pd.factorize(parts["op_type"])
    directions, direction_texts = pd.factorize(parts["direction"])
    return {
        "op_type": coded_from(op_types[row_call], list(op_type_texts)),
        "direction": pd.arrays.ArrowStringArray(_arrow_texts(directions[row_call], list(direction_texts))),
    }


def _tensor_texts(rows: PairedRows, target: DumpColumns, bench: DumpColumns) -> dict[str, object]:
    """dtypes (normalised), shapes, whether the shapes differ and the md5 digests agree."""
    columns: dict[str, object] = {}
    for side, dump, at in (("npu", target, rows.target), ("golden", bench, rows.bench)):
        dtypes, dtype_texts = pd.factorize(normalise_dtypes(pd.Series(dump.texts["dtype"], dtype=object)))
        columns[f"{side}_dtype"] = coded_from(_at(dtypes, _at(dump.codes["dtype"], at, -1), -1), list(dtype_texts))
    columns["shape"] = coded_from(_at(target.codes["shape"], rows.target, -1), target.texts["shape"])
    columns["golden_shape"] = coded_from(_at(bench.codes["shape"], rows.bench, -1), bench.texts["shape"])
    both = (rows.target >= 0) & (rows.bench >= 0)
    for name in ("shape", "md5"):
        _, (on_target, on_bench) = _merged_texts((target.texts[name], target.codes[name]),
                                                 (bench.texts[name], bench.codes[name]))
        left, right = _at(on_target, rows.target, -1), _at(on_bench, rows.bench, -1)
        same = (left == right) & (left >= 0)
        if name == "shape":   # both tensors present, their printed shapes differ (or are not printed)
            columns["shape_mismatch"] = pd.arrays.BooleanArray(both & ~same, ~both)
        else:
            known = both & (left >= 0) & (right >= 0)
            columns["md5_match"] = pd.arrays.BooleanArray(same & known, ~known)
    return columns
