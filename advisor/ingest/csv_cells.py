"""What the text-CSV readers share: one read of every cell as text with the physical line of each
row, pandas' parser errors as one-line InputFormatErrors, and number cells that tools fill with
words (``N/A``, ``Nan``, ``shape unmatched``...) turned into float64 with NaN.

msaccucmp's reader has its own tuned, typed, chunked read (see msaccucmp.py); msprobe and generic
files are read here, every column as text first, because their number columns legitimately hold
words and percentages.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.errors import InputFormatError

# Cells that mean "no value" in some tool's output. msprobe writes N/A (no bench data, bench value 0),
# Nan, None, unsupported (scalar or 0-d tensor), "shape unmatched", "No data", "unreadable data";
# msaccucmp NaN and *; spreadsheets a lone space or "-".
NO_VALUE: frozenset[str] = frozenset({
    "", "-", "*", "NaN", "nan", "NAN", "-nan", "Nan", "N/A", "n/a", "NA", "None", "none", "null", "NULL",
    "unsupported", "shape unmatched", "dtype unmatched", "No data", "No real data", "unreadable data",
    "api unmatched",
})


def read_text_cells(path: Path, encoding: str, sep: str = ",") -> tuple[pd.DataFrame, np.ndarray]:
    """Every cell as text (NA where empty), header names stripped, blank rows dropped; and the
    1-based physical line of each row (the header is line 1; quoted newlines are counted)."""
    try:
        # No usecols: with it the C parser silently drops the extra fields of a too-long row.
        raw = pd.read_csv(path, encoding=encoding, sep=sep, engine="c", header=0, dtype=str,
                          keep_default_na=False, na_values=[""], index_col=False,
                          skip_blank_lines=False)  # keeps row i on line i + 2 until newlines count
    except UnicodeDecodeError:
        raise  # read_comparison retries as GBK
    except pd.errors.EmptyDataError:
        raise InputFormatError("no rows: the file has a header but no comparison rows", path=path) from None
    except pd.errors.ParserError as err:
        raise parser_error(err, path) from None
    raw.columns = [str(c).strip() for c in raw.columns]
    lines = np.arange(2, 2 + len(raw), dtype=np.int64)
    if _physical_line_count(path) != 1 + len(raw):  # some quoted cell holds a newline
        newlines = np.zeros(len(raw), dtype=np.int64)
        for name in raw.columns:
            column = raw[name]
            if column.str.contains("\n", regex=False, na=False).any():
                newlines += column.str.count("\n").fillna(0).to_numpy(np.int64)
        lines[1:] += np.cumsum(newlines)[:-1]
    blank = raw.isna().all(axis=1).to_numpy()
    if blank.any():
        raw, lines = raw.loc[~blank].reset_index(drop=True), lines[~blank]
    if raw.empty:
        raise InputFormatError("no rows: the file has a header but no comparison rows", path=path)
    check_last_row_complete(path, encoding, len(raw.columns), int(lines[-1]), sep=sep)
    return raw, lines


def _physical_line_count(path: Path) -> int:
    count, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def map_distinct(values: pd.Series, function: Callable[[str], str | None]) -> pd.Series:
    """``function`` applied once per distinct value (NA stays NA), as pandas strings: a column
    of dtypes, shapes or verdicts holds a handful of distinct values over a million rows."""
    codes, uniques = pd.factorize(values.to_numpy(dtype=object, na_value=None))
    mapped = np.array([function(str(u)) for u in uniques] + [None], dtype=object)
    return pd.Series(mapped[codes], index=values.index, dtype="string")


def text_column(cells: pd.Series, no_value: Iterable[str] = ("",)) -> pd.Series:
    """Cells stripped of spaces and tabs, as pandas strings; ``no_value`` words become NA."""
    words = set(no_value)

    def clean(text: str) -> str | None:
        text = text.strip(" \t\r\n")
        return None if text in words else text

    return map_distinct(cells, clean)


def numbers(cells: pd.Series, header: str, lines: np.ndarray, path: Path, *, percent: bool = False,
            no_value: frozenset[str] = NO_VALUE) -> np.ndarray:
    """float64 from text cells: ``no_value`` words -> NaN, ``inf`` kept, ``12.5%`` -> 0.125 when
    ``percent``. Anything else is an error naming the column and the line."""
    # Fast path: the C parser takes every plain number; only what it leaves as NaN is looked at.
    values = pd.to_numeric(cells, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
    unsure = np.flatnonzero(np.isnan(values) & cells.notna().to_numpy(dtype=bool))
    if not unsure.size:
        return values
    text = text_column(cells.iloc[unsure], ())
    missing = text.isna() | text.isin(list(no_value))
    share = np.zeros(len(text), dtype=bool)
    if percent:
        share = text.str.endswith("%").fillna(False).to_numpy(dtype=bool)
        text = text.str.removesuffix("%").str.rstrip(" \t")
    parsed = pd.to_numeric(text.mask(missing), errors="coerce")
    bad = np.flatnonzero((parsed.isna() & ~missing).to_numpy(dtype=bool))
    if bad.size:
        row = unsure[bad[0]]
        raise InputFormatError(f"bad number {cells.iat[row]!r} in column {header}", path=path, line=int(lines[row]))
    found = parsed.to_numpy(dtype="float64", na_value=np.nan)
    values[unsure] = np.where(share, found / 100.0, found)
    return values


def parser_error(err: pd.errors.ParserError, path: Path) -> InputFormatError:
    """pandas' C-parser error as one line naming the file and, when pandas says it, the line."""
    text = str(err).strip()
    if match := re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text):
        expected, line, saw = match.groups()
        return InputFormatError(f"row has {saw} fields but the header has {expected}", path=path,
                                line=int(line))
    if match := re.search(r"EOF inside string starting at row (\d+)", text):
        return InputFormatError("quoted field never closed: the file is truncated", path=path,
                                line=int(match.group(1)) + 1)
    return InputFormatError(f"not a readable CSV: {text.splitlines()[-1]}", path=path)


def check_last_row_complete(path: Path, encoding: str, n_fields: int, line: int, sep: str = ",") -> None:
    """pandas pads a short row with NA silently; a short *last* row means the file was cut."""
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - 65536))
        tail = handle.read().rstrip(b"\r\n")
    last = tail[tail.rfind(b"\n") + 1:]
    if last.count(b'"') % 2:  # the end of a multi-line quoted field: cannot count fields here
        return
    fields = next(csv.reader([last.decode(encoding, errors="replace")], delimiter=sep), [])
    if len(fields) < n_fields:
        raise InputFormatError(
            f"truncated file: the last row has {len(fields)} of {n_fields} fields", path=path, line=line)
