"""Facts about the cells of an Arrow large_string array read from its buffers by numpy: the offsets
say where each cell starts and ends in one character buffer, so a question about a byte of every
cell is one array operation, not a regular expression over every byte of every cell."""

from __future__ import annotations

from typing import Any

import numpy as np


def cell_buffers(column: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The offsets of an Arrow large_string array's cells (one more than the cells: cell i is
    ``text[offsets[i]:offsets[i + 1]]``) and its character bytes; None when it holds no text."""
    _, offsets_buffer, data = column.buffers()
    if data is None or not len(column):
        return None
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[column.offset:column.offset + len(column) + 1]
    return offsets, np.frombuffer(data, dtype=np.uint8)


def filled_cells(column: Any, offsets: np.ndarray) -> np.ndarray:
    """Per cell: not null and not empty."""
    filled = offsets[1:] > offsets[:-1]
    if column.null_count:
        filled &= column.is_valid().to_numpy(zero_copy_only=False)
    return filled


def newlines_per_cell(column: Any) -> np.ndarray:
    """How many newlines each cell of an Arrow large_string array holds: the newlines found in its
    character buffer by numpy, counted per cell by its offsets (a stack column is 40 % of the file)."""
    count = np.zeros(len(column), dtype=np.int64)
    if (buffers := cell_buffers(column)) is None:
        return count
    offsets, text = buffers
    start = int(offsets[0])
    at = np.flatnonzero(text[start:int(offsets[-1])] == 10) + start
    if at.size:
        count += np.bincount(np.searchsorted(offsets, at, side="right") - 1, minlength=len(column))
    return count


# The bytes text_column strips from both ends of a cell: space, tab, CR, LF (ASCII: never part of
# another character's UTF-8 bytes).
_EDGE_SPACE = np.zeros(256, dtype=bool)
_EDGE_SPACE[[ord(" "), ord("\t"), ord("\r"), ord("\n")]] = True


def has_edge_space(column: Any) -> bool:
    """Whether a cell of an Arrow large_string array starts or ends with a space, tab, CR or LF: the
    first and last byte of each cell read from its buffers by numpy (a regular expression reads
    every byte of a million names: ~0.5 s of a 1M-row msprobe read)."""
    if (buffers := cell_buffers(column)) is None:
        return False
    offsets, text = buffers
    starts, ends = offsets[:-1], offsets[1:]
    filled = filled_cells(column, offsets)
    return bool((_EDGE_SPACE[text[starts[filled]]] | _EDGE_SPACE[text[ends[filled] - 1]]).any())


# The bytes a plain decimal number is written with (csv_cells.PLAIN_NUMBER): digits, sign, point, exponent.
_NUMBER_BYTE = np.zeros(256, dtype=bool)
_NUMBER_BYTE[list(b"0123456789+-.eE")] = True


def number_shaped(column: Any) -> np.ndarray:
    """Per cell of an Arrow large_string array: filled, and written only with the bytes of a plain
    decimal number (a wider set than the numbers themselves: ``1-2`` passes). Read from the buffers by
    numpy, where a regular expression costs 60 ms per million cells."""
    if (buffers := cell_buffers(column)) is None:
        return np.zeros(len(column), dtype=bool)
    offsets, text = buffers
    start = int(offsets[0])
    odd = ~_NUMBER_BYTE[text[start:int(offsets[-1])]]
    filled = filled_cells(column, offsets)
    shaped = np.zeros(len(column), dtype=bool)
    if odd.size:
        # a filled cell is shaped when none of its bytes is odd: reduceat over [start, end) and [end, next
        # start) in turn, keeping the first of each pair (a null cell's bytes, if any, fall in the second)
        bounds = np.empty(2 * int(filled.sum()), dtype=np.int64)
        bounds[0::2], bounds[1::2] = offsets[:-1][filled] - start, offsets[1:][filled] - start
        shaped[filled] = ~np.logical_or.reduceat(np.append(odd, False), bounds)[0::2]
    return shaped


def spans(column: Any, begin: np.ndarray, end: np.ndarray, keep: np.ndarray) -> Any:
    """Per cell the bytes ``[begin, end)`` of an Arrow large_string array's character buffer (positions
    as ``cell_buffers`` gives them, within the cell, so the spans ascend) as a large_string array, null
    where ``keep`` is False: an array whose cells alternate span and gap is laid over the same buffer,
    and Arrow takes its spans, copying only their bytes."""
    import pyarrow as pa

    n = len(begin)
    if not keep.any():
        return pa.nulls(n, pa.large_string())
    offsets, _ = cell_buffers(column)
    at = np.where(keep, begin, offsets[:-1])
    bounds = np.empty(2 * n, dtype=np.int64)
    bounds[0::2], bounds[1::2] = at, np.where(keep, end, at)
    laid = pa.LargeStringArray.from_buffers(2 * n - 1, pa.py_buffer(bounds), column.buffers()[2])
    every_span = np.arange(0, 2 * n, 2)
    return laid.take(pa.array(every_span, mask=~keep))
