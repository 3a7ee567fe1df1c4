"""What the text-CSV readers share: one read of every cell as text with the physical line of each
row, pandas' parser errors as one-line InputFormatErrors, and number cells that tools fill with
words (``N/A``, ``Nan``, ``shape unmatched``...) turned into float64 with NaN.

msaccucmp's reader has its own tuned, typed, chunked read (see msaccucmp.py); msprobe and generic
files are read here, every column as text first, because their number columns legitimately hold
words and percentages.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.errors import InputFormatError
from advisor.ingest.arrow_text import has_edge_space, number_shaped
from advisor.ingest.text_blocks import arrow_text_cells

# Cells that mean "no value" in some tool's output. msprobe writes N/A (no bench data, bench value 0),
# Nan, None, unsupported (scalar or 0-d tensor), "shape unmatched", "No data", "unreadable data";
# msaccucmp NaN and *; spreadsheets a lone space or "-".
NO_VALUE: frozenset[str] = frozenset({
    "", "-", "*", "NaN", "nan", "NAN", "-nan", "Nan", "N/A", "n/a", "NA", "None", "none", "null", "NULL",
    "unsupported", "shape unmatched", "dtype unmatched", "No data", "No real data", "unreadable data",
    "api unmatched",
})


def read_text_cells(path: Path, encoding: str, sep: str = ",",
                    unused: frozenset[str] = frozenset()) -> tuple[pd.DataFrame, np.ndarray]:
    """Every cell as text (NA where empty), header names stripped, blank rows dropped; and the
    1-based physical line of each row (the header is line 1; quoted newlines are counted).
    ``unused``: headers the caller ignores (msprobe's stack texts): left out of the frame, and
    never made into strings when pyarrow reads the file."""
    names = header_names(read_header(path, encoding, sep))
    check_first_row(path, encoding, len(names), sep)
    read = arrow_text_cells(path, encoding, sep, names, unused)
    if read is None:
        raw = _pandas_text_cells(path, encoding, sep, names)
        newlines = _newlines_per_row(raw) if physical_line_count(path) != 1 + len(raw) else None
        filled = raw.notna().any(axis=1).to_numpy()
        raw = raw.drop(columns=[name for name in names if name in unused])
    else:
        raw, newlines, filled = read
    lines = np.arange(2, 2 + len(raw), dtype=np.int64)
    if newlines is not None and newlines.any():  # some quoted cell holds a newline
        lines[1:] += np.cumsum(newlines)[:-1]
    if not filled.all():
        raw, lines = raw.loc[filled].reset_index(drop=True), lines[filled]
    if raw.empty:
        raise InputFormatError("no rows: the file has a header but no comparison rows", path=path)
    check_last_row_complete(path, encoding, len(names), int(lines[-1]), sep=sep)
    return raw, lines


def _pandas_text_cells(path: Path, encoding: str, sep: str, names: list[str]) -> pd.DataFrame:
    try:
        # No usecols: with it the C parser silently drops the extra fields of a too-long row.
        with strict_parser(path):
            return pd.read_csv(path, encoding=encoding, sep=sep, engine="c", header=0, names=names, dtype=str,
                               keep_default_na=False, na_values=[""], index_col=False,
                               skip_blank_lines=False)  # keeps row i on line i + 2 until newlines count
    except UnicodeDecodeError:
        raise  # read_comparison retries as GBK
    except pd.errors.EmptyDataError:
        raise InputFormatError("no rows: the file has a header but no comparison rows", path=path) from None
    except pd.errors.ParserError as err:
        raise parser_error(err, path) from None


def _newlines_per_row(raw: pd.DataFrame) -> np.ndarray:
    newlines = np.zeros(len(raw), dtype=np.int64)
    for name in raw.columns:
        column = raw[name]
        if column.str.contains("\n", regex=False, na=False).any():
            newlines += column.str.count("\n").fillna(0).to_numpy(np.int64)
    return newlines


# A comparison has a few dozen columns; a header of thousands is not one, and every later step is
# per column. Messages quote at most this many characters of a cell.
MAX_COLUMNS = 1024
MAX_SHOWN_CHARS = 60


def shown(value: object) -> str:
    """``repr`` of a cell for a message, cut to MAX_SHOWN_CHARS: a 50 MB cell stays a short line."""
    text = repr(value)
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS - 3]}... ({len(str(value)):,} characters)"


def read_header(path: Path, encoding: str, sep: str = ",") -> list[str]:
    """The header's fields, stripped, from the first line (read_comparison has checked its size)."""
    with open(path, encoding=encoding, newline="") as handle:
        first = handle.readline(MAX_HEADER_CHARS)
    try:
        fields = next(csv.reader([first], delimiter=sep), [])
    except csv.Error as err:
        raise InputFormatError(f"not a readable CSV header: {err}", path=path, line=1) from None
    check_column_count(len(fields), path)
    return [f.strip() for f in fields]


MAX_HEADER_CHARS = 1 << 20
FIRST_ROW_CHARS = 1 << 20


def check_first_row(path: Path, encoding: str, n_fields: int, sep: str = ",") -> None:
    """pandas does not fail a first data row with more fields than the header: it drops the extra
    fields with a warning, after work quadratic in their number (200,000 fields: 16 s). So the
    first row is counted here, from at most FIRST_ROW_CHARS of it; later rows fail in pandas, fast."""
    with open(path, encoding=encoding, newline="", errors="replace") as handle:
        handle.readline(MAX_HEADER_CHARS)
        text = handle.read(FIRST_ROW_CHARS)
    line = 2
    try:
        for row in csv.reader(io.StringIO(text), delimiter=sep):
            if row:
                break
            line += 1
        else:
            return
    except csv.Error:
        return  # pandas reports it with its line
    if len(row) > n_fields:
        complete = "" if text.count("\n") else "at least "
        raise InputFormatError(f"row has {complete}{len(row):,} fields but the header has {n_fields}",
                               path=path, line=line)


@contextmanager
def strict_parser(path: Path) -> Iterator[None]:
    """pandas' ParserWarning (fields dropped) as an error: no row is ever silently cut.
    check_first_row catches the known case first, with a better message."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            yield
        except pd.errors.ParserWarning as warning:
            raise InputFormatError(f"not a readable CSV: {str(warning)[:200]}", path=path) from None


def check_column_count(count: int, path: Path) -> None:
    if count > MAX_COLUMNS:
        raise InputFormatError(f"the header has {count:,} columns, more than the {MAX_COLUMNS:,} a comparison "
                               "result can have: not a comparison CSV", path=path, line=1)


def header_names(fields: list[str]) -> list[str]:
    """Header fields as pandas names them: a repeated name gets ``.1``, ``.2``... (as ``DataType.1``)."""
    seen: dict[str, int] = {}
    names = []
    for field in fields:
        name = field
        while name in seen:
            seen[field] += 1
            name = f"{field}.{seen[field]}"
        seen.setdefault(field, 0)
        seen[name] = 0
        names.append(name)
    return names


def physical_line_count(path: Path) -> int:
    count, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def map_distinct(values: pd.Series, function: Callable[[str], str | None]) -> pd.Series:
    """``function`` applied once per distinct value (NA stays NA), as pandas strings: a column
    of dtypes, shapes or verdicts holds a handful of distinct values over a million rows. A column
    read as Arrow strings is encoded and spread by Arrow, without a Python string per row."""
    arrow = arrow_strings(values)
    if arrow is not None:
        import pyarrow as pa

        encoded = arrow.dictionary_encode()
        mapped = pa.array([function(u) for u in encoded.dictionary.to_pylist()], type=pa.large_string())
        return pd.Series(pd.arrays.ArrowStringArray(mapped.take(encoded.indices)), index=values.index,
                         dtype="string", copy=False)
    codes, uniques = pd.factorize(values.to_numpy(dtype=object, na_value=None))
    mapped = np.array([function(str(u)) for u in uniques] + [None], dtype=object)
    return pd.Series(mapped[codes], index=values.index, dtype="string")


def arrow_strings(values: pd.Series) -> Any:
    """The column as one Arrow string array when pandas holds it in Arrow (what ``read_csv`` gives
    with pyarrow installed), else None."""
    dtype = values.dtype
    if not (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"):
        return None
    import pyarrow as pa

    arrow = pa.array(values.array)
    if isinstance(arrow, pa.ChunkedArray):  # combine_chunks copies even a single chunk
        arrow = arrow.chunk(0) if arrow.num_chunks == 1 else arrow.combine_chunks()
    return arrow.cast(pa.large_string()) if arrow.type != pa.large_string() else arrow


def text_column(cells: pd.Series, no_value: Iterable[str] = ("",)) -> pd.Series:
    """Cells stripped of spaces and tabs, as pandas strings; ``no_value`` words become NA. A column
    read as Arrow strings is cleaned by Arrow (a name column holds a million distinct texts)."""
    words = set(no_value)
    arrow = arrow_strings(cells)
    if arrow is not None:
        import pyarrow as pa
        import pyarrow.compute as pc

        text = arrow   # copied only when a cell changes: a name column is the file's largest
        if has_edge_space(arrow):
            text = pc.utf8_trim(arrow, characters=" \t\r\n")
        if words:
            listed = pc.is_in(text, value_set=pa.array(sorted(words), type=pa.large_string()))
            if pc.any(listed).as_py():
                text = pc.if_else(listed, pa.scalar(None, pa.large_string()), text)
        return pd.Series(pd.arrays.ArrowStringArray(text), index=cells.index, dtype="string", copy=False)

    def clean(text: str) -> str | None:
        text = text.strip(" \t\r\n")
        return None if text in words else text

    return map_distinct(cells, clean)


def numbers(cells: pd.Series, header: str, lines: np.ndarray, path: Path, *, percent: bool = False,
            no_value: frozenset[str] = NO_VALUE) -> np.ndarray:
    """float64 from text cells: ``no_value`` words -> NaN, ``inf`` kept, ``12.5%`` -> 0.125 when
    ``percent``. Anything else is an error naming the column and the line."""
    values, words = numbers_and_words(cells, percent=percent, no_value=no_value)
    if words is not None:
        row = int(np.flatnonzero(words.notna().to_numpy(dtype=bool))[0])
        raise InputFormatError(f"bad number {shown(cells.iat[row])} in column {header}", path=path,
                               line=int(lines[row]))
    return values


def numbers_and_words(cells: pd.Series, *, percent: bool = False,
                      no_value: frozenset[str] = NO_VALUE) -> tuple[np.ndarray, pd.Series | None]:
    """As ``numbers``, but a cell that is no number is NaN and returned, stripped, among the words
    (a string Series, NA elsewhere; None when there are none)."""
    # Fast path: every plain number parsed at once; only what it leaves as NaN is looked at, each
    # distinct text once (a million "Nan" or "None" cells are a handful of texts).
    values = _plain_numbers(cells)
    unsure = np.flatnonzero(np.isnan(values) & cells.notna().to_numpy(dtype=bool))
    if not unsure.size:
        return values, None
    codes, distinct = pd.factorize(cells.iloc[unsure])
    text = text_column(pd.Series(distinct), ())
    missing = text.isna() | text.isin(list(no_value))
    share = np.zeros(len(text), dtype=bool)
    if percent:
        share = text.str.endswith("%").fillna(False).to_numpy(dtype=bool)
        text = text.str.removesuffix("%").str.rstrip(" \t")
    parsed = pd.to_numeric(text.mask(missing), errors="coerce")
    bad = (parsed.isna() & ~missing).to_numpy(dtype=bool)
    found = parsed.to_numpy(dtype="float64", na_value=np.nan)
    values[unsure] = np.where(share, found / 100.0, found)[codes]
    if not bad.any():
        return values, None
    import pyarrow as pa

    wrong = bad[codes]
    word_of_row = np.full(len(cells), -1, dtype=np.int64)   # per row its word among the distinct ones
    word_of_row[unsure[wrong]] = np.searchsorted(np.flatnonzero(bad), codes[wrong])
    distinct_words = pa.array(text_column(pd.Series(distinct[bad]), ()).to_numpy(), pa.large_string())
    spread = distinct_words.take(pa.array(word_of_row, mask=word_of_row < 0))   # no Python string per row
    return values, pd.Series(pd.arrays.ArrowStringArray(spread), index=cells.index, dtype="string", copy=False)


# A decimal number as a tool prints it: what Arrow's cast and pandas' to_numeric read alike (to the
# bit: checked on 400k numbers of every printed form, tests/ingest/test_csv_cells.py). Anything else
# (inf, words, spaces, percentages) takes the slow path below, as before.
PLAIN_NUMBER = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"


def _plain_numbers(cells: pd.Series) -> np.ndarray:
    """float64 of the cells that are plain numbers, NaN elsewhere (a fresh, writable array)."""
    arrow = arrow_strings(cells)
    if arrow is None:
        return pd.to_numeric(cells, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan, copy=True)
    import pyarrow as pa
    import pyarrow.compute as pc

    # The cells written with a number's bytes, the same text with that as its validity, cast at once;
    # a cell among them that is no number (``1-2``) fails the cast, and RE2 then picks the plain ones.
    shaped = number_shaped(arrow)
    if arrow.offset == 0:
        validity = pa.py_buffer(np.packbits(shaped, bitorder="little"))
        candidates = pa.Array.from_buffers(arrow.type, len(arrow), [validity, *arrow.buffers()[1:]])
    else:
        candidates = pc.if_else(pa.array(shaped), arrow, None)
    try:
        numbers = pc.cast(candidates, pa.float64())
    except pa.ArrowInvalid:
        numbers = pc.cast(pc.if_else(pc.match_substring_regex(arrow, PLAIN_NUMBER), arrow, None), pa.float64())
    return np.array(numbers.to_numpy(zero_copy_only=False), dtype=np.float64)


def parser_error(err: pd.errors.ParserError, path: Path) -> InputFormatError:
    """pandas' C-parser error as one line naming the file and, when pandas says it, the line."""
    text = str(err).strip()
    if match := re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text):
        expected, line, saw = match.groups()
        return InputFormatError(f"row has {int(saw):,} fields but the header has {expected}", path=path,
                                line=int(line))
    if match := re.search(r"EOF inside string starting at row (\d+)", text):
        return InputFormatError("quoted field never closed: the file is truncated", path=path,
                                line=int(match.group(1)) + 1)
    last = text.splitlines()[-1] if text else "parser error"
    return InputFormatError(f"not a readable CSV: {last[:200]}", path=path)


def check_last_row_complete(path: Path, encoding: str, n_fields: int, line: int, sep: str = ",") -> None:
    """pandas pads a short row with NA silently; a short *last* row means the file was cut."""
    with open(path, "rb") as handle:
        start = max(0, handle.seek(0, 2) - 65536)
        handle.seek(start)
        tail = handle.read().rstrip(b"\r\n")
    if start and b"\n" not in tail:  # the last row is longer than the window: it cannot be counted here
        return
    last = tail[tail.rfind(b"\n") + 1:]
    if last.count(b'"') % 2:  # the end of a multi-line quoted field: cannot count fields here
        return
    fields = next(csv.reader([last.decode(encoding, errors="replace")], delimiter=sep), [])
    if len(fields) < n_fields:
        raise InputFormatError(
            f"truncated file: the last row has {len(fields)} of {n_fields} fields", path=path, line=line)
