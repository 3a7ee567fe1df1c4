"""Write a large CSV fast: every field is a NUL-padded byte matrix, a line is its non-NUL bytes.

``DataFrame.to_csv(float_format="%.6f")`` formats each number with a Python call (about 7 s for a
million rows of ten floats). Here a field of ``n`` rows is an ``(n, width)`` uint8 matrix holding
its text, padded with NUL bytes on either side; separators are one-byte columns. Stacking the
fields of a block of rows side by side and keeping the non-NUL bytes in row-major order gives the
CSV text of that block in one numpy operation. Numbers are rendered digit by digit with integer
arithmetic, so no Python code runs per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import BinaryIO

import numpy as np

Field = np.ndarray  # (rows, width) uint8, text padded with NUL bytes


def text(values: np.ndarray) -> Field:
    """A field from a numpy bytes array (dtype ``S<w>``): one row per element."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind != "S":
        raise TypeError(f"expected a bytes array, got {values.dtype}")
    return values.view(np.uint8).reshape(len(values), values.dtype.itemsize)


def const(value: bytes, rows: int) -> Field:
    """The same text on every row (a separator, a fixed cell)."""
    return np.broadcast_to(np.frombuffer(value, dtype=np.uint8), (rows, len(value)))


def integers(values: np.ndarray) -> Field:
    """Non-negative integers in decimal."""
    values = np.asarray(values, dtype=np.int64)
    if len(values) and values.min() < 0:
        raise ValueError("integers() writes non-negative numbers only")
    return _digits(values, _digit_count(values))


def fixed(values: np.ndarray, decimals: int = 6, nan: bytes = b"NaN", inf: bytes = b"inf") -> Field:
    """Floats as ``'%.<decimals>f' % x`` writes them (up to |x| < 9e12); NaN and infinities as given."""
    values = np.asarray(values, dtype=np.float64)
    rows = len(values)
    finite = np.isfinite(values)
    magnitude = np.where(finite, np.abs(values), 0.0)
    if rows and magnitude.max() >= 9e12:
        raise ValueError("fixed() writes |x| < 9e12 only")
    scaled = np.rint(magnitude * 10.0**decimals).astype(np.int64)
    whole, fraction = np.divmod(scaled, 10**decimals)
    count = _digit_count(whole)
    negative = np.signbit(values) & finite
    # [sign][whole digits, right-aligned]["."][fraction digits]
    matrix = np.concatenate([np.zeros((rows, 1), np.uint8), _digits(whole, count),
                             const(b".", rows), _digits(fraction, np.full(rows, decimals))], axis=1)
    sign_column = matrix.shape[1] - decimals - 2 - count
    matrix[np.flatnonzero(negative), sign_column[negative]] = ord("-")
    for mask, word in ((np.isnan(values), nan), (np.isposinf(values), inf),
                       (np.isneginf(values), b"-" + inf)):
        if mask.any():
            matrix[mask] = 0
            matrix[mask, matrix.shape[1] - len(word):] = np.frombuffer(word, dtype=np.uint8)
    return matrix


def _digit_count(values: np.ndarray) -> np.ndarray:
    count = np.ones(len(values), dtype=np.int64)
    power = 10
    while len(values) and power <= values.max():
        count += values >= power
        power *= 10
    return count


def _digits(values: np.ndarray, count: np.ndarray) -> Field:
    """Right-aligned decimal digits of ``values``; ``count`` digits each (leading zeros kept)."""
    width = int(count.max()) if len(values) else 1
    matrix = np.zeros((len(values), width), dtype=np.uint8)
    rest = values.copy()
    for k in range(width):  # k-th digit from the right
        digit = (rest % 10).astype(np.uint8) + ord("0")
        matrix[:, width - 1 - k] = np.where(k < count, digit, 0)
        rest //= 10
    return matrix


def blank_rows(field: Field, rows: np.ndarray, word: bytes) -> Field:
    """``field`` with the given rows replaced by ``word`` (e.g. ``NaN`` for a composite cell)."""
    field = np.array(field, dtype=np.uint8)  # owns its data: broadcast consts cannot be written
    if field.shape[1] < len(word):
        field = np.concatenate([field, np.zeros((len(field), len(word) - field.shape[1]), np.uint8)], axis=1)
    field[rows] = 0
    field[rows, :len(word)] = np.frombuffer(word, dtype=np.uint8)
    return field


def lines(fields: Sequence[Field]) -> bytes:
    """The CSV text of one block: fields side by side, then every non-NUL byte in row order."""
    rows = len(fields[0])
    block = np.concatenate([*fields, const(b"\n", rows)], axis=1)
    return block[block != 0].tobytes()


def write_blocks(handle: BinaryIO, rows: int, block: Callable[[int, int], Sequence[Field]],
                 block_rows: int = 100_000) -> None:
    """Write ``rows`` rows, ``block(start, stop)`` giving the fields of each block of rows."""
    for start in range(0, rows, block_rows):
        handle.write(lines(block(start, min(rows, start + block_rows))))
