"""Two msprobe dumps compared by their statistics: ``read_dump_pair(bench, target)``.

A dump is msprobe's ``dump.json`` (statistics mode: ``{"task", "level", "framework", "data": {call:
{"input_args": [...], "input_kwargs": {...}, "output": [...]}}}``, backward and module calls with
``input`` / ``output``, module ``parameters``, ``<module>.parameters_grad`` entries) or the old
ptdbg ``.pkl`` dump, which is text, one JSON array per line: ``[name, stack_id, [], dtype, shape,
[max, min, mean(, norm)]]``. It is never unpickled: a binary pickle is refused.

A tensor is an item with ``dtype`` and ``shape``; an argument is an item ``{"type": "int" | "float" |
"bool" | "str" ..., "value": ...}`` (``input_kwargs`` and positional alike): it becomes a row as msprobe's
compare CSV prints it, dtype ``<class 'int'>`` (``python.int``), a number's value as its statistics, a
bool's or a string's as ``npu_arg`` / ``golden_arg`` (``True``, ``nearest``); ``None`` is left out.
Its name follows msprobe's compare CSV: ``<call>.input.<n>`` (positional, nested ``<n>.<m>``),
``<call>.input.<keyword>``, ``<call>.output.<n>``, ``<call>.parameters.<name>``.

Calls are paired by advisor/ingest/call_matching.py (exact name, then normalised across
frameworks), tensors of a pair by (input/output, position or keyword). What stays unpaired becomes
``npu_only`` (target only) or ``golden_only`` (bench only) rows. The target is the ``npu`` side.

Only statistics are known, so only statistics are compared: ``npu_/golden_`` ``max, min, mean,
norm`` and ``max_rel_diff``... ``norm_rel_diff`` = |target - bench| / |bench| (0 where both are 0,
NaN where only the bench value is; advisor/ingest/derived_metrics.py). Cosine and every
element-wise error stay NaN: they cannot be computed from statistics. ``shape_mismatch`` compares
the two shapes; ``md5_match`` is filled when both tensors carry an ``md5`` (MD5-mode dumps).
``npu_nonfinite`` / ``golden_nonfinite``: the tensor's ``Max`` or ``Min`` is ``Infinity``, ``-Infinity``
or ``NaN`` (a value msprobe wrote, unlike an absent statistic).
``source_line`` is the line of the call's key in the dump the row comes from (the target's, or
the bench's for a bench-only row; the tensor's own line in a .pkl text dump).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.dtypes import normalise_dtypes
from advisor.errors import InputFormatError, UsageError
from advisor.ingest.call_matching import CallPair, pair_calls
from advisor.ingest.derived_metrics import STAT_PAIRS, relative_differences
from advisor.ingest.msprobe_names import IO_WORDS, split_call_names, split_tensor_names
from advisor.ingest.table import COLUMNS, FLOAT_COLUMNS, ComparisonTable, na_column
from advisor.inputfiles import read_input
from advisor.nesting import loads_json

FORMAT = "msprobe-dump"
STATS = ("max", "min", "mean", "norm")
STAT_KEYS = {"Max": "max", "Min": "min", "Mean": "mean", "Norm": "norm"}
# dump.json keys of a call -> the word msprobe puts in tensor names
NAME_WORDS = {"input_args": "input", "input_kwargs": "input", "input": "input", "output": "output",
              "parameters": "parameters"}
# io: canonical (input, output, parameter, parameter_grad); line: of the tensor, or of its call's key
TENSOR_COLUMNS = ("call", "tensor_id", "io", "arg", "dtype", "shape", *STATS, "md5", "nonfinite", "text", "line")


@dataclass
class Dump:
    """One side: its tensors (``TENSOR_COLUMNS``) and its calls in execution order."""

    path: Path
    framework: str | None
    tensors: pd.DataFrame
    calls: list[str]


def read_dump_pair(bench: str | Path, target: str | Path) -> ComparisonTable:
    """Compare two dumps by statistics; the target is the NPU side of the table."""
    bench_dump, target_dump = load_dump(Path(bench)), load_dump(Path(target))
    pairs = pair_calls(target_dump.calls, bench_dump.calls)
    rows = _paired_tensors(pairs, target_dump.tensors, bench_dump.tensors)
    frame = _canonical_frame(rows)
    statistics = {f"{side}_{stat}" for side in ("npu", "golden") for stat in STATS}
    present = [c for c in FLOAT_COLUMNS if c in statistics or c in STAT_PAIRS]
    return ComparisonTable(frame=frame, source=Path(target), format=FORMAT, present_metrics=present,
                           derived_metrics=[c for c in present if c in STAT_PAIRS])


@dataclass(frozen=True)
class DumpPairEntry:
    """The registry entry for ``--format`` listings: a dump pair is not one file, so it is never
    detected from a header and ``read_comparison`` cannot read it."""

    name: str = FORMAT
    expected_header: str = "two dump.json files: advisor run --bench BENCH/dump.json --target TARGET/dump.json"

    def matches(self, header_fields: list[str]) -> bool:
        return False

    def read(self, path: Path, encoding: str) -> ComparisonTable:
        raise UsageError(f"format '{FORMAT}' compares two dump.json files: give both, "
                         "advisor run --bench BENCH/dump.json --target TARGET/dump.json")


# --- loading ---------------------------------------------------------------------------------------

def load_dump(path: Path) -> Dump:
    text = _read_text(path)
    start = text.lstrip()[:1]
    if start == "{":
        return _load_dump_json(path, text)
    if start == "[":
        return _load_pkl_text(path, text)
    raise InputFormatError("not an msprobe dump.json nor a ptdbg .pkl text dump "
                           "(expected '{' or '[' at the start)", path=path, line=1)


def _read_text(path: Path) -> str:
    if not path.exists():
        raise InputFormatError("file not found", path=path)
    if path.is_dir():
        raise InputFormatError("is a directory, expected an msprobe dump.json file", path=path)
    data = read_input(path, what="dump.json")
    if data[:1] == b"\x80":
        raise InputFormatError("a binary pickle: advisor never unpickles files; "
                               "re-dump with msprobe to get dump.json", path=path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFormatError("not UTF-8 text", path=path) from None


def _load_dump_json(path: Path, text: str) -> Dump:
    document = loads_json(text, path, InputFormatError)
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict):
        raise InputFormatError("no 'data' object: not an msprobe dump.json", path=path, field="data")
    key_lines = _key_lines(text, data)
    records = []
    for call, entry in data.items():
        if not isinstance(entry, dict):
            raise InputFormatError(f"expected an object, found {type(entry).__name__}", path=path,
                                   field=f"data.{call}")
        records.extend(record + (key_lines[call],) for record in _call_tensors(path, call, entry))
    tensors = pd.DataFrame.from_records(records, columns=list(TENSOR_COLUMNS))
    return Dump(path=path, framework=document.get("framework"), tensors=tensors, calls=list(data))


def _call_tensors(path: Path, call: str, entry: dict[str, Any]) -> Iterator[tuple]:
    if call.endswith(".parameters_grad"):  # {"weight": {...}, "bias": {...}} of a module
        owner = call.removesuffix(".parameters_grad")
        yield from _tensors(path, call, f"{owner}.parameters_grad", "parameter_grad", entry, "")
        return
    for key, value in entry.items():
        if key in NAME_WORDS:
            word = NAME_WORDS[key]
            yield from _tensors(path, call, f"{call}.{word}", IO_WORDS[word], value, "")


def _tensors(path: Path, call: str, prefix: str, io: str, value: Any, arg: str) -> Iterator[tuple]:
    """The tensors in one argument, list or dict (nested), with their msprobe names."""
    if isinstance(value, dict) and "dtype" in value and "shape" in value:
        name = f"{prefix}.{arg}" if arg else prefix
        high, low, mean, norm = value.get("Max"), value.get("Min"), value.get("Mean"), value.get("Norm")
        if type(high) is float and type(low) is float and type(mean) is float and type(norm) is float:
            # the usual tensor, four plain floats: what the general path below gives, without its calls
            stats = [high, low, mean, norm]
            nonfinite = not (math.isfinite(high) and math.isfinite(low))
        else:
            stats = [_stat(path, name, value, key) for key in STAT_KEYS]
            nonfinite = _nonfinite_extrema(high, low)
        yield (call, name, io, arg or None, str(value["dtype"]), _shape_text(value["shape"]), *stats, _md5(value),
               nonfinite, None)
    elif isinstance(value, dict) and "type" in value and "value" in value:
        if value["value"] is not None:
            yield _argument(call, f"{prefix}.{arg}" if arg else prefix, io, arg, value)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _tensors(path, call, prefix, io, item, f"{arg}.{i}" if arg else str(i))
    elif isinstance(value, dict) and "type" not in value:  # keyword arguments, parameters
        for key, item in value.items():
            yield from _tensors(path, call, prefix, io, item, f"{arg}.{key}" if arg else str(key))


def _stat(path: Path, name: str, tensor: dict[str, Any], key: str) -> float:
    value = tensor.get(key)
    if value is None:
        return np.nan
    try:
        return float(value)  # bool (Bool tensors) -> 0.0 / 1.0; "inf" / "nan" strings too
    except (TypeError, ValueError):
        raise InputFormatError(f"bad number {value!r}", path=path, field=f"{name}.{key}") from None


def _argument(call: str, name: str, io: str, arg: str, item: dict[str, Any]) -> tuple:
    """An argument's row, as msprobe's compare CSV prints one: a number's value as every statistic; a
    bool's or a string's value as text (``True``, ``nearest``), no statistics."""
    value = item["value"]
    dtype = f"<class '{item['type']}'>"
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        return (call, name, io, arg or None, dtype, "[]", number, number, number, abs(number), None,
                not np.isfinite(number), None)
    return (call, name, io, arg or None, dtype, "[]", np.nan, np.nan, np.nan, np.nan, None, False, str(value))


def _nonfinite_extrema(*values: Any) -> bool:
    """Whether a printed maximum or minimum is inf or NaN (``Infinity``, ``NaN``: JSON's spellings,
    or the same as text); an absent value (None) says nothing."""
    for value in values:
        if value is None or isinstance(value, bool):
            continue
        try:
            if not np.isfinite(float(value)):
                return True
        except (TypeError, ValueError):
            continue
    return False


def _md5(tensor: dict[str, Any]) -> str | None:
    value = tensor.get("md5")
    return str(value) if value else None


def _shape_text(shape: Any) -> str | None:
    if isinstance(shape, list | tuple):
        return "[" + ", ".join(str(d) for d in shape) + "]"
    return None if shape is None else str(shape)


def _key_lines(text: str, data: dict[str, Any]) -> dict[str, int]:
    """Line of each call's key (``"name": {``). Keys come in file order and call names appear
    nowhere else in a dump.json, so one forward scan finds them all."""
    lines: dict[str, int] = {}
    position, line = 0, 1
    for call in data:
        at = text.find(json.dumps(call, ensure_ascii=False), position)
        if at < 0:  # spelt with escapes: no line rather than a wrong one
            lines[call] = 0
            continue
        line += text.count("\n", position, at)
        position = at
        lines[call] = line
    return lines


def _load_pkl_text(path: Path, text: str) -> Dump:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = loads_json(line, path, InputFormatError)
            name, dtype, shape, stats = item[0], item[3], item[4], list(item[5])
        except (InputFormatError, IndexError, TypeError, KeyError):
            raise InputFormatError("expected a JSON array [name, stack_id, [], dtype, shape, [max, min, mean]]",
                                   path=path, line=number) from None
        try:
            values = [float(v) if v is not None else np.nan for v in (stats + [None] * 4)[:4]]
        except (TypeError, ValueError):
            raise InputFormatError(f"bad statistics {stats!r}", path=path, line=number) from None
        records.append((str(name), str(dtype), _shape_text(shape), *values, _nonfinite_extrema(*stats[:2]), None,
                        number))
    if not records:
        raise InputFormatError("empty dump", path=path)
    frame = pd.DataFrame.from_records(records, columns=["tensor_id", "dtype", "shape", *STATS, "nonfinite", "text",
                                                       "line"])
    parts = split_tensor_names(frame["tensor_id"])
    frame["call"] = parts["call"].fillna(frame["tensor_id"]).astype(object)
    frame["io"] = parts["io"].astype(object)
    # the bare "_output" of old names is output 0, as "output.0" in a dump.json
    frame["arg"] = parts["arg"].fillna(parts["slot"].astype("string")).astype(object)
    frame["md5"] = None
    calls = list(dict.fromkeys(frame["call"]))
    return Dump(path=path, framework=None, tensors=frame[list(TENSOR_COLUMNS)], calls=calls)


# --- pairing -------------------------------------------------------------------------------------

def _paired_tensors(pairs: list[CallPair], target: pd.DataFrame, bench: pd.DataFrame) -> pd.DataFrame:
    """One row per tensor: target columns ``t_*``, bench columns ``b_*``, ``op_index`` = the call
    pair's position. Within a pair, tensors pair by io and by position / keyword (``0``, ``0.1``,
    ``bias``); rows follow the pairs, then the target's tensor order, bench-only tensors last."""
    target_pair = {p.target: i for i, p in enumerate(pairs) if p.target is not None}
    bench_pair = {p.bench: i for i, p in enumerate(pairs) if p.bench is not None}
    t = target.add_prefix("t_").assign(t_pos=np.arange(len(target)), op_index=target["call"].map(target_pair))
    b = bench.add_prefix("b_").assign(b_pos=np.arange(len(bench)), op_index=bench["call"].map(bench_pair))
    t["key"] = target["io"].fillna("") + "|" + target["arg"].fillna("")
    b["key"] = bench["io"].fillna("") + "|" + bench["arg"].fillna("")
    rows = t.drop(columns="t_call").merge(b.drop(columns="b_call"), on=["op_index", "key"], how="outer", sort=False)
    rows = rows.sort_values(["op_index", "t_pos", "b_pos"], na_position="last", kind="stable", ignore_index=True)
    at = rows["op_index"].to_numpy(dtype=np.int64)
    rows["t_call"] = np.array([p.target for p in pairs], dtype=object)[at]
    rows["b_call"] = np.array([p.bench for p in pairs], dtype=object)[at]
    return rows


def _canonical_frame(rows: pd.DataFrame) -> pd.DataFrame:
    n = len(rows)
    has_t = rows["t_tensor_id"].notna().to_numpy(dtype=bool)
    has_b = rows["b_tensor_id"].notna().to_numpy(dtype=bool)
    t_call = rows["t_call"].astype("string")
    b_call = rows["b_call"].astype("string")
    # one pass over both sides: a paired tensor has the same name twice
    both_names = split_tensor_names(pd.concat([rows["t_tensor_id"], rows["b_tensor_id"]], ignore_index=True))
    target_names, bench_names = both_names.iloc[:n].reset_index(drop=True), both_names.iloc[n:].reset_index(drop=True)
    names = target_names.where(pd.Series(has_t), bench_names, axis=0)
    # a tensor name no pattern splits still has its call's API and direction
    call_parts = split_call_names(t_call.where(pd.Series(has_t), b_call))
    columns: dict[str, object] = {
        "op_index": pd.array(rows["op_index"].to_numpy(dtype=np.int64), dtype="Int64"),
        "op_type": names["op_type"].fillna(call_parts["op_type"]).astype("string").array,
        "op_name": t_call.where(pd.Series(has_t)).array,
        "golden_ops": b_call.array,
        "tensor_id": rows["t_tensor_id"].fillna(rows["b_tensor_id"]).astype("string").array,
        "io": names["io"].astype("string").array,
        "slot": names["slot"].astype("Int64").array,
        "direction": names["direction"].fillna(call_parts["direction"]).astype("string").array,
        "npu_dtype": normalise_dtypes(rows["t_dtype"]),
        "golden_dtype": normalise_dtypes(rows["b_dtype"]),
        "shape": rows["t_shape"].astype("string").array,
        "golden_shape": rows["b_shape"].astype("string").array,
        "is_network_output": pd.array(np.zeros(n, dtype=bool), dtype="boolean"),
        "npu_only": pd.array(has_t & ~has_b, dtype="boolean"),
        "golden_only": pd.array(has_b & ~has_t, dtype="boolean"),
    }
    both = has_t & has_b
    same_shape = (rows["t_shape"] == rows["b_shape"]).to_numpy(dtype=bool)
    columns["shape_mismatch"] = pd.arrays.BooleanArray(both & ~same_shape, ~both)
    md5_known = both & rows["t_md5"].notna().to_numpy(dtype=bool) & rows["b_md5"].notna().to_numpy(dtype=bool)
    columns["md5_match"] = pd.arrays.BooleanArray(md5_known & (rows["t_md5"] == rows["b_md5"]).to_numpy(dtype=bool),
                                                  ~md5_known)
    for stat in STATS:
        columns[f"npu_{stat}"] = rows[f"t_{stat}"].to_numpy(dtype=np.float64)
        columns[f"golden_{stat}"] = rows[f"b_{stat}"].to_numpy(dtype=np.float64)
    for side, prefix, present in (("npu", "t", has_t), ("golden", "b", has_b)):
        nonfinite = rows[f"{prefix}_nonfinite"].fillna(False).to_numpy(dtype=bool)
        columns[f"{side}_nonfinite"] = pd.arrays.BooleanArray(nonfinite & present, ~present)
    for diff, (npu_stat, golden_stat) in STAT_PAIRS.items():
        columns[diff] = relative_differences(columns[npu_stat], columns[golden_stat])
    columns["npu_arg"] = rows["t_text"].astype("string").array
    columns["golden_arg"] = rows["b_text"].astype("string").array
    columns["source_line"] = rows["t_line"].fillna(rows["b_line"]).fillna(0).to_numpy(dtype=np.int64)
    return pd.DataFrame({name: columns[name] if name in columns else na_column(name, n) for name in COLUMNS},
                        copy=False)
