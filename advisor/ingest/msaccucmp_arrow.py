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
from advisor.ingest.msaccucmp_fields import _split_std_fast, integers, split_tensor_ids_arrow, string_array
from advisor.ingest.msaccucmp_layout import FLAG_ROLES, INTEGER_ROLES, STD_ROLE, ColumnArray, Layout
from advisor.ingest.table import CODED_COLUMNS, METRIC_COLUMNS, STAT_COLUMNS, na_array, na_columns

# Bytes of the file per block. Small on purpose: pyarrow's streaming reader parses one block at a
# time, and a block's parse buffers and raw text are all that is alive beside the final columns
# (1 MiB: ~3,000 rows. Parsing the 1M-row benchmark file and dropping each block peaked at ~560 MiB
# RSS with 16 MiB blocks, ~220 MiB with 1 MiB ones, in about the same time.)
BLOCK_BYTES = 1 << 20
IN_FLIGHT = 2  # parsed blocks waiting for the worker
# Text is joined JOIN_BLOCKS blocks at a time, so a text column has about as many chunks as with the
# 16 MiB blocks the later stages were tuned on (~30 at 1M rows), not one per block: every later
# Arrow operation on a column (comparisons, takes, factorize) makes a call per chunk.
JOIN_BLOCKS = 16
ENCODINGS = ("utf-8", "utf-8-sig")
# No-value words every text and number column shares; ``*`` is NA too except in the two op-name
# columns, where it marks a missing side (handled below).
COMMON_NA = ["NaN", "nan", ""]
SIDE_ROLES = ("op_name", "golden_ops")
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
            parts = _Parts(path.stat().st_size)
            _convert_blocks(_batches(counted, layout), layout, parts)
        if not parts.rows or counted.lines() != parts.rows + 1:  # a quoted newline
            return None
        return _frame(parts, parts.rows, layout, path)
    except (pa.ArrowException, _GiveWay):
        return None
    finally:
        pa.default_memory_pool().release_unused()


def _convert_blocks(batches: Any, layout: Layout, parts: _Parts) -> None:
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


class _Parts:
    """The final columns, block by block. Numbers go straight into arrays sized from the first
    block (pages never written are never resident; a file longer than guessed grows them), so no
    column is ever held twice; Arrow text is kept in chunks of JOIN_BLOCKS blocks."""

    def __init__(self, file_bytes: int) -> None:
        self.file_bytes = file_bytes
        self.capacity = 0
        self.rows = 0           # rows of the blocks given room so far
        self.arrays: dict[str, np.ndarray] = {}
        self.chunks: dict[str, list[Any]] = {}
        self.maps: dict[str, dict[str, Any]] = {}  # distinct text -> mapped value, per column

    def must_grow(self, rows: int) -> bool:
        return bool(self.capacity) and self.rows + rows > self.capacity

    def next_block(self, rows: int) -> int:
        """Make room for a block of ``rows``; its first row."""
        if not self.capacity:  # a block is BLOCK_BYTES of the file; guess a quarter more rows
            self.capacity = rows + int(1.25 * rows * self.file_bytes / BLOCK_BYTES)
        if self.rows + rows > self.capacity:
            self.capacity = max(self.rows + rows, 2 * self.capacity)
            for name, values in self.arrays.items():
                grown = np.empty(self.capacity, dtype=values.dtype)
                grown[:self.rows] = values[:self.rows]
                self.arrays[name] = grown
        start, self.rows = self.rows, self.rows + rows
        return start

    def add(self, name: str, piece: Any, start: int) -> None:
        if isinstance(piece, np.ndarray):
            if name not in self.arrays:
                self.arrays[name] = np.empty(self.capacity, dtype=piece.dtype)
            self.arrays[name][start:start + len(piece)] = piece
        elif name in CODED_COLUMNS:  # texts that repeat: per block its distinct texts and codes into them
            encoded = piece.dictionary_encode()
            self.chunks.setdefault(name, [[], []])[0].append(
                (encoded.dictionary, encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)))
        else:
            chunks = self.chunks.setdefault(name, [[], []])  # joined chunks, blocks not yet joined
            chunks[1].append(piece)
            if len(chunks[1]) == JOIN_BLOCKS:
                chunks[0].append(_joined(chunks[1]))
                chunks[1] = []

    def __contains__(self, name: str) -> bool:
        return name in self.arrays or name in self.chunks

    def numpy(self, name: str) -> np.ndarray:
        return self.arrays.pop(name)[:self.rows]

    def strings(self, name: str) -> pd.api.extensions.ExtensionArray:
        import pyarrow as pa

        joined, blocks = self.chunks.pop(name)
        return string_array(pa.chunked_array([*joined, *blocks], type=pa.large_string()))

    def categorical(self, name: str) -> pd.Categorical:
        """A coded column from its blocks' distinct texts and codes. The blocks' texts are sorted
        by Arrow, once for the file (the order ``coded`` gives every reader's texts; pandas would sort
        and recode them through Python objects, about a second for the op names of a million rows):
        equal neighbours are one text, so sorting also finds the distinct texts, faster than hashing
        them (a text is in a block's texts once, but in several blocks' when its rows span blocks).
        Each block's codes are then mapped through."""
        import pyarrow as pa
        import pyarrow.compute as pc

        blocks = self.chunks.pop(name)[0]
        texts = pa.chunked_array([block_texts for block_texts, _ in blocks], type=pa.large_string()).combine_chunks()
        order = pc.array_sort_indices(texts).to_numpy()
        ordered = texts.take(order)
        new = np.ones(len(ordered), dtype=bool)   # a sorted position that starts another distinct text
        if len(ordered) > 1:
            new[1:] = np.asarray(pc.not_equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False), dtype=bool)
        code_type = np.int32 if len(ordered) < 2**31 - 1 else np.int64
        code_of = np.empty(len(order), dtype=code_type)   # per block text, its code in the sorted distinct texts
        code_of[order] = np.cumsum(new, dtype=code_type) - 1
        codes = np.empty(sum(len(block_codes) for _, block_codes in blocks), dtype=code_type)
        at = first = 0
        for block_texts, block_codes in blocks:   # one more slot per block for its NA (code -1)
            codes[at:at + len(block_codes)] = np.append(code_of[first:first + len(block_texts)], -1)[block_codes]
            at, first = at + len(block_codes), first + len(block_texts)
        # Each text is in the categories once: no check of that (pandas checks it with a hash table
        # of Python strings, ~30 MiB for the op names of a million rows, kept with the categories).
        distinct = ordered.filter(pa.array(new))
        dtype = pd.CategoricalDtype._from_fastpath(pd.Index(string_array(distinct)), ordered=False)
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)

    def booleans(self, name: str) -> pd.api.extensions.ExtensionArray:
        return pd.arrays.BooleanArray(self.numpy(name), self.numpy(name + "/na"))


def _joined(blocks: list[Any]) -> Any:
    import pyarrow as pa

    return pa.chunked_array(blocks, type=pa.large_string()).combine_chunks()


def _convert_numbers(batch: Any, layout: Layout, parts: _Parts, start: int) -> None:
    """One block's number columns -> their rows of the final arrays (nulls become NaN). Done by the
    thread that parses, which waits on the worker otherwise: the rest of the block (_convert) is
    the longer half."""
    float_roles = set(layout.float_roles)
    for role in batch.schema.names:
        if role in float_roles:
            parts.add(role, batch.column(role).to_numpy(zero_copy_only=False), start)


def _convert(batch: Any, layout: Layout, parts: _Parts, start: int) -> None:
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
    op_name, golden = text["op_name"], text["golden_ops"]
    golden_only, npu_only = _equals(op_name, "*"), _equals(golden, "*")
    add("golden_only", golden_only)
    add("npu_only", npu_only)
    add("op_name", _mask(op_name, golden_only))
    add("golden_ops", _mask(golden, npu_only))
    op_type = _star_is_na(text["op_type"])
    add("op_type", op_type)
    # Only a row without an op type can be the Node_Output row.
    add("is_network_output", _bools(pc.and_(pc.is_null(op_type), pc.fill_null(pc.equal(op_name, "Node_Output"), False)))
        if op_type.null_count else np.zeros(rows, dtype=bool))
    for role in DTYPE_ROLES:
        if role in names:
            add(role, _distinct_map(_star_is_na(batch.column(role)), normalise_dtype, pa.large_string(),
                                          parts.maps.setdefault(role, {})))
    for role in FLAG_ROLES:
        if role in names:
            flags = _distinct_map(batch.column(role), _yes_no_word, pa.bool_(), parts.maps.setdefault(role, {}))
            add(role, _bools(pc.fill_null(flags, False)))
            add(role + "/na", _bools(pc.is_null(flags)))
    if "tensor_id" in names:
        io, slot, no_slot = split_tensor_ids_arrow(text["tensor_id"])
        add("io", io)
        add("slot", slot)
        add("slot/na", no_slot)
        add("tensor_id", text["tensor_id"])
    for role in (*PLAIN_TEXT_ROLES, *layout.user_roles):
        if role in names and role != "tensor_id":
            add(role, _star_is_na(batch.column(role)))


def _frame(parts: _Parts, rows: int, layout: Layout, path: Path) -> pd.DataFrame:
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
    """``function`` applied once per distinct value (a column of dtypes or YES/NO holds a handful;
    ``known`` keeps the answers from block to block), then spread to every row by Arrow; NA stays NA."""
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = values.dictionary_encode()
    distinct = encoded.dictionary.to_pylist()
    for value in distinct:
        if value not in known:
            known[value] = function(value)
    mapped = pa.array([known[v] for v in distinct], type=result_type)
    return pc.take(mapped, encoded.indices)


def _yes_no_word(text: str) -> bool | None:
    """As extra_columns.yes_no_flags: YES/TRUE -> True, NO/FALSE -> False, else NA."""
    text = text.strip().lower()
    return True if text in TRUE_WORDS else False if text in FALSE_WORDS else None
