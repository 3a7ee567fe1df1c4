"""The identity columns of an msprobe comparison (op_index, op_type, op_name, golden_ops, io, slot,
direction, npu_only, golden_only) from its two name columns: what advisor/ingest/msprobe_csv.py
documents, made from the parts of the names kept as codes per row (coded_tensor_names, below) and
spread by them. A million rows hold a million distinct tensor names but only a few hundred
thousand calls and a handful of APIs, directions and io words: no column of a string per row is
made for a text the table keeps as codes (``category``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from advisor.ingest.msprobe_names import distinct_call_parts, name_strings, tensor_parts
from advisor.ingest.table import coded_from


def identity_columns(text: dict[str, pd.Series], n: int) -> dict[str, object]:
    """The identity columns of ``n`` rows from the cleaned text columns (``_npu_name``,
    ``_bench_name``, ``npu_dtype``, ``golden_dtype``; any may be absent)."""
    empty = pd.Series(pd.NA, index=range(n), dtype="string")
    npu_name = text.get("_npu_name", empty)
    bench_name = text.get("_bench_name", empty)
    # one pass over both columns; most rows print the same name twice, and a bench name is split
    # only where it differs
    differ = np.flatnonzero(~(npu_name == bench_name).fillna(False).to_numpy(dtype=bool))
    names = pd.concat([npu_name, bench_name.iloc[differ]], ignore_index=True) if differ.size else npu_name
    coded = coded_tensor_names(names)
    rows = np.where(names.isna().to_numpy(dtype=bool), -1, np.arange(len(names)))
    del names
    npu_code = rows[:n]
    bench_code = npu_code.copy()
    bench_code[differ] = rows[n:]
    del rows
    npu_side = npu_name.notna() | text.get("npu_dtype", empty).notna()
    bench_side = bench_name.notna() | text.get("golden_dtype", empty).notna()
    npu_only = (npu_side & ~bench_side).to_numpy(dtype=bool)
    golden_only = (bench_side & ~npu_side).to_numpy(dtype=bool)
    npu_call, bench_call = _at(coded.call, npu_code), _at(coded.call, bench_code)
    call = np.where(npu_call >= 0, npu_call, bench_call)
    # npu name blank: the parts come from the bench name (same API in a name-matched compare)
    part = np.where(npu_code >= 0, npu_code, bench_code)
    slot = _at(coded.slot, part)
    direction = _at(coded.direction, part)
    return {
        "op_index": _first_seen(call, len(coded.calls)),
        "op_type": _coded(coded.op_type, coded.op_types, part),
        "op_name": _compact(np.where(golden_only, -1, call), coded.calls),
        "golden_ops": _compact(bench_call, coded.calls),
        "tensor_id": npu_name.array,
        "io": _coded(coded.io, coded.ios, part),
        "slot": pd.arrays.IntegerArray(np.maximum(slot, 0), slot < 0),
        "direction": pd.arrays.ArrowStringArray(coded.directions.take(pa.array(direction, mask=direction < 0))),
        "npu_only": pd.array(npu_only, dtype="boolean"),
        "golden_only": pd.array(golden_only, dtype="boolean"),
    }


def _at(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``codes[rows]``, -1 where ``rows`` is -1."""
    return np.append(codes, -1)[rows]


def _coded(codes: np.ndarray, texts: pa.Array, rows: np.ndarray) -> pd.Categorical:
    """The ``category`` column of the texts at ``codes[rows]``."""
    return _compact(_at(codes, rows), texts)


def _compact(codes: np.ndarray, texts: pa.Array) -> pd.Categorical:
    """A ``category`` column of the ``texts`` the ``codes`` use (-1: NA), as ``table.coded`` has one:
    the texts no row uses are not among its categories."""
    used = np.flatnonzero(np.bincount(codes + 1, minlength=len(texts) + 1)[1:])
    renumber = np.full(len(texts) + 1, -1, dtype=np.int64)
    renumber[used] = np.arange(used.size)
    return coded_from(renumber[codes], texts.take(pa.array(used)))


def _first_seen(codes: np.ndarray, count: int) -> pd.arrays.IntegerArray:
    """The codes renumbered from 0 in the order they first appear (``pd.factorize`` of the texts), NA for -1."""
    order = pd.unique(codes)
    known = order[order >= 0]
    renumber = np.full(count + 1, -1, dtype=np.int64)
    renumber[known] = np.arange(known.size)
    numbered = renumber[codes]
    return pd.arrays.IntegerArray(np.maximum(numbered, 0), numbered < 0)


@dataclass(frozen=True)
class CodedNames:
    """The parts of a column of tensor names as codes per row (-1: none) into small arrays of texts:
    a million tensors hold a few hundred thousand calls and a handful of APIs, io words and
    directions, and no part is made a string per row."""
    call: np.ndarray          # into calls; a name that fits no shape is its own call
    calls: pa.Array
    op_type: np.ndarray
    op_types: pa.Array
    io: np.ndarray            # input, output, parameter, parameter_grad (IO_WORDS)
    ios: pa.Array
    direction: np.ndarray
    directions: pa.Array
    slot: np.ndarray          # the slot itself, -1 for none


def coded_tensor_names(names: pd.Series) -> CodedNames:
    """What ``split_tensor_names`` gives (but the arg and the counter), as codes. Each row is taken as
    its own name, as the tensors of a comparison are, and parsed without first hashing a million
    names to find the few repeated ones (half a second on a 1M-row file); each distinct call is
    parsed once."""
    texts = name_strings(names).cast(pa.large_string())
    parts = tensor_parts(texts)
    call = parts["call"]
    if call.null_count > texts.null_count:   # a name that fits no shape is still the best identity there is
        call = pc.coalesce(call, texts)
    call_code, calls = _codes(call)
    del call, texts
    of_call = distinct_call_parts(calls)
    # a parameters_grad tensor's call is its module: its own op_type and direction come first
    op_type, op_types = _own_first(*_codes(of_call["op_type"]), call_code, parts["op_type"])
    direction, directions = _own_first(*_codes(of_call["direction"]), call_code, parts["direction"])
    io, ios = _codes(parts["io"])
    slot = parts["slot"].fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return CodedNames(call_code, calls, op_type, op_types, io, ios, direction, directions, slot)


def _codes(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Per value the position of its text among the distinct texts (-1: null), and those texts."""
    encoded = values.cast(pa.large_string()).dictionary_encode()
    return encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary


def _own_first(codes: np.ndarray, texts: pa.Array, of_row: np.ndarray, own: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Per row ``own``'s text where it has one, else the text of its call (``codes[of_row]``): as codes
    into the texts of both."""
    row_codes = np.append(codes, -1)[of_row]
    has = own.is_valid().to_numpy(zero_copy_only=False)
    if not has.any():
        return row_codes, texts
    joined = pa.concat_arrays([texts, own.filter(pa.array(has)).cast(pa.large_string())]).dictionary_encode()
    renumber = joined.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    row_codes = np.append(renumber[:len(texts)], -1)[row_codes]
    row_codes[has] = renumber[len(texts):]
    return row_codes, joined.dictionary
