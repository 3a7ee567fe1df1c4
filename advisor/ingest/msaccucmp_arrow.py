"""The fast read of an msaccucmp result: pyarrow's CSV reader, block by block, each block turned
into its final columns before the next is parsed.

pandas' C parser turns every text cell into a Python object; pyarrow's parser writes numbers
straight into float64 buffers and text into Arrow strings, which the canonical table keeps as they
are (pandas' ``string`` dtype is Arrow-backed). The file is parsed in small blocks (BLOCK_BYTES):
each block's cells are converted at once (NA words, ``*`` sides, dtype names, YES/NO flags,
TensorIndex and StandardDeviation split) and its raw text dropped, so neither the file, nor a
whole-file Arrow table, nor a column of StandardDeviation text is ever held; only the final
columns grow. The text columns that repeat from row to row (table.CODED_COLUMNS: op names and
types, golden ops, io, dtypes, shape...) are dictionary-encoded block by block, so their text is
never held for every row either. A column skipped by the layout is parsed but never converted.

This path takes the usual file only, and gives way (returns None) to the exact read
(msaccucmp_exact.py) whenever it cannot vouch for the result. Every row must be one physical line:
a blank line (or a bare CR) is a row of the wrong length, which pyarrow refuses, as it refuses a
``*`` in a number column and bytes that are not UTF-8; a quoted newline is caught by counting the
file's newlines as pyarrow reads it (no second pass). It also gives way on a StandardDeviation
cell that is not four plain numbers and on a row with every identity field empty. The exact read
then gives the same table, or the one-line error naming the file and line. pyarrow is imported
here, when a file is read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.dtypes import normalise_dtype
from advisor.ingest.extra_columns import FALSE_WORDS, TRUE_WORDS
from advisor.ingest.msaccucmp_columns import Parts
from advisor.ingest.msaccucmp_fields import _split_std_fast, integers, split_tensor_ids_arrow
from advisor.ingest.msaccucmp_layout import FLAG_ROLES, INTEGER_ROLES, STD_ROLE, ColumnArray, Layout
from advisor.ingest.table import CODED_COLUMNS, METRIC_COLUMNS, STAT_COLUMNS, na_array, na_columns
from advisor.memory import give_back_free_heap

# Bytes of the file per block (2 MiB: ~6,000 rows). Small on purpose: pyarrow's streaming reader
# parses one block at a time, and a block's parse buffers and raw text are all that is alive beside
# the final columns (parsing the 1M-row benchmark file and dropping each block peaked at ~560 MiB
# RSS with 16 MiB blocks, ~220 MiB with 1 MiB ones, in about the same time). Not smaller: each
# block costs ~40 Arrow calls on the worker, which sets the pace; the whole read of that file took
# 1.55-1.72 s with 1 MiB blocks, 1.27-1.40 s with 2 MiB. What the blocks leave free inside the heaps
# is given back once they are read (memory.give_back_free_heap): without it the 2 MiB blocks held
# ~100 MiB more RSS into the rest of the run (`advisor run` peak 573-624 MiB, with it 579).
BLOCK_BYTES = 2 << 20
IN_FLIGHT = 2  # parsed blocks waiting for the worker
ENCODINGS = ("utf-8", "utf-8-sig")
# No-value words every text and number column shares; ``*`` is NA too except in the two op-name
# columns, where it marks a missing side (handled below).
COMMON_NA = ["NaN", "nan", ""]
DTYPE_ROLES = ("npu_dtype", "golden_dtype")
PLAIN_TEXT_ROLES = ("tensor_id", "npu_address", "golden_address", "shape", "compare_fail_reason")


class _GiveWay(Exception):
    """The exact read must decide this file."""


def read_arrow(path: Path, encoding: str, layout: Layout) -> pd.DataFrame | None:
    """The canonical columns (plus the user columns), or None when the exact read must decide."""
    if encoding not in ENCODINGS:
        return None
    import pyarrow as pa

    try:
        with open(path, "rb") as handle:
            counted = _LineCounter(handle)
            parts = Parts(path.stat().st_size, BLOCK_BYTES)
            _convert_blocks(_batches(counted, layout), layout, parts)
        give_back_free_heap()
        if not parts.rows or counted.lines() != parts.rows + 1:  # a quoted newline
            return None
        return _frame(parts, parts.rows, layout, path)
    except (pa.ArrowException, _GiveWay):
        return None
    finally:
        pa.default_memory_pool().release_unused()


def _convert_blocks(batches: Any, layout: Layout, parts: Parts) -> None:
    """Each block converted by one worker thread while pyarrow parses the next (both release the
    GIL for their C++ work); at most IN_FLIGHT parsed blocks wait, so memory stays a few blocks."""
    pending: deque[Future[None]] = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="advisor-msaccucmp") as worker:
        try:
            for batch in batches:
                if parts.must_grow(batch.num_rows):
                    while pending:  # no block may be written while the arrays are moved
                        pending.popleft().result()
                start = parts.next_block(batch.num_rows)
                _convert_numbers(batch, layout, parts, start)
                pending.append(worker.submit(_convert, batch, layout, parts, start))
                del batch
                while len(pending) > IN_FLIGHT:
                    pending.popleft().result()
            while pending:
                pending.popleft().result()
        finally:
            for job in pending:
                job.cancel()


class _LineCounter:
    """The file as pyarrow reads it, its newlines counted on the way: the rows must be the file's
    lines, and this vouches for it without a second pass over the file."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.closed = False
        self.newlines = 0
        self.last = b"\n"

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        if data:
            self.newlines += data.count(b"\n")
            self.last = data[-1:]
        return data

    def lines(self) -> int:
        return self.newlines + (self.last != b"\n")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


def _batches(source: Any, layout: Layout) -> Any:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    float_roles = set(layout.float_roles)
    wanted = [role for role in layout.names if not role.startswith("_skip")]
    return pcsv.open_csv(
        pa.PythonFile(source, mode="r"),
        read_options=pcsv.ReadOptions(column_names=layout.names, skip_rows=1, block_size=BLOCK_BYTES),
        # A blank line is a row of the wrong length; a quoted newline is found by the line count.
        parse_options=pcsv.ParseOptions(newlines_in_values=False, ignore_empty_lines=False),
        convert_options=pcsv.ConvertOptions(
            column_types={r: pa.float64() if r in float_roles else pa.large_string() for r in wanted},
            include_columns=wanted, null_values=COMMON_NA, strings_can_be_null=True))


def _convert_numbers(batch: Any, layout: Layout, parts: Parts, start: int) -> None:
    """One block's number columns -> their rows of the final arrays (nulls become NaN). Done by the
    thread that parses, which waits on the worker otherwise: the rest of the block (_convert) is
    the longer half."""
    float_roles = set(layout.float_roles)
    for role in batch.schema.names:
        if role in float_roles:
            parts.add(role, batch.column(role).to_numpy(zero_copy_only=False), start)


def _convert(batch: Any, layout: Layout, parts: Parts, start: int) -> None:
    """One block's cells but its numbers (_convert_numbers) -> its pieces of the final columns
    (rows from ``start`` on)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def add(name: str, piece: Any) -> None:
        parts.add(name, piece, start)

    rows = batch.num_rows
    names = set(batch.schema.names)
    if STD_ROLE in names:
        stats = _split_std_fast(batch.column(STD_ROLE))
        if stats is None:
            raise _GiveWay
        for name, values in stats.items():
            add(name, values)
    no_text = pa.nulls(rows, type=pa.large_string())
    text = {role: batch.column(role) if role in names else no_text
            for role in ("op_name", "golden_ops", "tensor_id", "op_type")}
    text["tensor_id"] = _star_is_na(text["tensor_id"])
    if "op_index" in names and _has_blank_row(batch.column("op_index"), text):
        raise _GiveWay  # the exact read drops such rows and keeps the others' lines
    op_name, golden_only = _coded(text["op_name"])
    golden, npu_only = _coded(text["golden_ops"])
    add("golden_only", golden_only)
    add("npu_only", npu_only)
    add("op_name", op_name)
    add("golden_ops", golden)
    op_type, _ = _coded(text["op_type"])
    add("op_type", op_type)
    # Only a row without an op type can be the Node_Output row.
    add("is_network_output", (op_type[1] == -1) & _is_text(op_name, "Node_Output"))
    for role in DTYPE_ROLES:
        if role in names:
            texts, codes = _coded(batch.column(role))[0]  # two names may give one dtype: categorical() merges them
            add(role, (_answers(texts, normalise_dtype, pa.large_string(), parts.maps.setdefault(role, {})), codes))
    for role in FLAG_ROLES:
        if role in names:
            flags = _distinct_map(batch.column(role), _yes_no_word, pa.bool_(), parts.maps.setdefault(role, {}))
            add(role, _bools(pc.fill_null(flags, False)))
            add(role + "/na", _bools(pc.is_null(flags)))
    if "tensor_id" in names:
        io, slot, no_slot = split_tensor_ids_arrow(text["tensor_id"])
        add("io", _coded(io)[0])
        add("slot", slot)
        add("slot/na", no_slot)
        add("tensor_id", text["tensor_id"])
    for role in (*PLAIN_TEXT_ROLES, *layout.user_roles):
        if role in names and role != "tensor_id":
            add(role, _coded(batch.column(role))[0] if role in CODED_COLUMNS else _star_is_na(batch.column(role)))


def _frame(parts: Parts, rows: int, layout: Layout, path: Path) -> pd.DataFrame:
    lines = np.arange(2, rows + 2, dtype=np.int64)
    columns: dict[str, ColumnArray] = {}
    for role in INTEGER_ROLES:
        columns[role] = (integers(parts.numpy(role), layout.headers[role], path, lines) if role in parts
                         else na_array("Int64", rows))
    if "slot" in parts:
        columns["slot"] = pd.arrays.IntegerArray(parts.numpy("slot"), parts.numpy("slot/na"))
    for role in ("golden_only", "npu_only", "is_network_output"):
        columns[role] = pd.arrays.BooleanArray(parts.numpy(role), np.zeros(rows, dtype=bool))
    for role in FLAG_ROLES:
        if role in parts:
            columns[role] = parts.booleans(role)
    for role in ("op_type", "op_name", "golden_ops", "io", *DTYPE_ROLES, *PLAIN_TEXT_ROLES, *layout.user_roles):
        if role in parts:
            columns[role] = parts.categorical(role) if role in CODED_COLUMNS else parts.strings(role)
    for metric in (*METRIC_COLUMNS, *STAT_COLUMNS):
        if metric in parts:
            columns[metric] = parts.numpy(metric)
    columns["source_line"] = lines
    absent = na_columns([name for name in layout.columns if name not in columns], rows)
    return pd.DataFrame({name: columns[name] if name in columns else absent[name] for name in layout.columns},
                        copy=False)


def _coded(values: Any) -> tuple[tuple[Any, np.ndarray], np.ndarray]:
    """A block of a text column as (its distinct texts, per row a code into them, -1 for NA),
    ``*`` as NA; and the rows that held ``*``. ``*`` is looked for among the distinct texts, not
    in every row, and is not one of the texts kept (a category no row has would be a category
    all the same)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = values.dictionary_encode()
    texts = encoded.dictionary
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    star = pc.index(texts, "*").as_py()
    if star < 0:
        return (texts, codes), np.zeros(len(codes), dtype=bool)
    stars = codes == star
    recode = np.arange(-1, len(texts), dtype=codes.dtype)  # per code + 1 (NA first): its new code
    recode[star + 1:] -= 1
    recode[star + 1] = -1
    return (pa.concat_arrays([texts[:star], texts[star + 1:]]), recode[codes + 1]), stars


def _is_text(coded: tuple[Any, np.ndarray], text: str) -> np.ndarray:
    """The rows of a coded block (_coded) that hold ``text``."""
    import pyarrow.compute as pc

    texts, codes = coded
    at = pc.index(texts, text).as_py()
    return codes == at if at >= 0 else np.zeros(len(codes), dtype=bool)


def _bools(values: Any) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def _equals(values: Any, word: str) -> np.ndarray:
    import pyarrow.compute as pc

    return _bools(pc.fill_null(pc.equal(values, word), False))


def _mask(values: Any, where: np.ndarray) -> Any:
    """``values`` with NA where ``where``; no copy when nothing is masked."""
    import pyarrow.compute as pc

    return pc.if_else(where, None, values) if where.any() else values


def _star_is_na(values: Any) -> Any:
    import pyarrow.compute as pc

    if pc.index(values, "*").as_py() < 0:  # the usual block: no star, one pass, no mask
        return values
    return _mask(values, _equals(values, "*"))


def _has_blank_row(index: Any, text: dict[str, Any]) -> bool:
    """Any row with no Index, op names or TensorIndex (a line of bare commas)."""
    import pyarrow.compute as pc

    if not index.null_count:
        return False
    blank = pc.is_null(index)
    for role in ("op_name", "golden_ops", "tensor_id"):
        blank = pc.and_(blank, pc.is_null(text[role]))
    return bool(pc.any(blank).as_py())


def _distinct_map(values: Any, function: Callable[[str], Any], result_type: Any, known: dict[str, Any]) -> Any:
    """``function`` applied once per distinct value (a column of YES/NO holds a handful; ``known``
    keeps the answers from block to block), then spread to every row by Arrow; NA stays NA."""
    import pyarrow.compute as pc

    encoded = values.dictionary_encode()
    return pc.take(_answers(encoded.dictionary, function, result_type, known), encoded.indices)


def _answers(distinct: Any, function: Callable[[str], Any], result_type: Any, known: dict[str, Any]) -> Any:
    """``function`` of each of the ``distinct`` texts, asked once per text and file (``known``)."""
    import pyarrow as pa

    values = distinct.to_pylist()
    for value in values:
        if value not in known:
            known[value] = function(value)
    return pa.array([known[value] for value in values], type=result_type)


def _yes_no_word(text: str) -> bool | None:
    """As extra_columns.yes_no_flags: YES/TRUE -> True, NO/FALSE -> False, else NA."""
    text = text.strip().lower()
    return True if text in TRUE_WORDS else False if text in FALSE_WORDS else None
