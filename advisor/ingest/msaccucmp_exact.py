"""The exact read of an msaccucmp result: pandas' C parser, chunk by chunk, every row on its physical line.

The Arrow read (msaccucmp_arrow.py) takes the usual file; this one takes the rest: blank lines, quoted
newlines, rows shorter than the header, ``*`` in a number column, GBK text; and it is what names the
file and line of a bad cell. Explicit dtypes, ``chunksize`` rows at a time, each chunk turned into
canonical columns before the next is read.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.dtypes import normalise_dtypes
from advisor.errors import InputFormatError
from advisor.ingest.csv_cells import check_first_row, check_last_row_complete, parser_error, shown
from advisor.ingest.extra_columns import yes_no_flags
from advisor.ingest.msaccucmp_fields import integers, split_standard_deviation, split_tensor_ids
from advisor.ingest.msaccucmp_layout import (
    FLAG_ROLES,
    FLOAT_NA,
    INTEGER_ROLES,
    SIDE_NA,
    STD_ROLE,
    TEXT_NA,
    ColumnArray,
    Layout,
)
from advisor.ingest.table import METRIC_COLUMNS, STAT_COLUMNS, na_array, na_column


def read_exact(path: Path, encoding: str, layout: Layout, n_fields: int) -> pd.DataFrame:
    """The canonical columns (plus the user columns) of the whole file."""
    check_first_row(path, encoding, n_fields)
    chunks = ColumnChunks()
    last_line = 0
    for raw, lines in parse_rows(path, encoding, layout):
        chunks.append(canonical_columns(raw, lines, layout, path))
        last_line = int(lines[-1])
    if not last_line:
        raise InputFormatError("no rows: the file has a header but no comparison rows", path=path)
    check_last_row_complete(path, encoding, n_fields, last_line)
    return chunks.frame(layout.columns)


# --- parsing ---------------------------------------------------------------------------------------

# Rows per read_csv chunk. Each chunk is turned into canonical columns before the next is read,
# so the raw text of only one chunk (StandardDeviation strings, parser buffers) is alive at a
# time: peak memory stays near the size of the final table.
CHUNK_ROWS = 200_000


def _read_options(layout: Layout) -> dict[str, object]:
    dtypes: dict[str, object] = {r: "float64" for r in layout.float_roles}
    na_values: dict[str, list[str]] = {r: FLOAT_NA for r in layout.float_roles}
    for role in layout.text_roles:
        dtypes[role] = object
        na_values[role] = SIDE_NA if role in ("op_name", "golden_ops") else TEXT_NA
    for role in layout.names:
        dtypes.setdefault(role, object)  # skipped columns: read (see parse_rows), then dropped
    return dict(engine="c", header=0, names=layout.names, index_col=False, dtype=dtypes,
                keep_default_na=False, na_values=na_values, chunksize=CHUNK_ROWS,
                skip_blank_lines=False)  # keeps row i on line i + 2; blank rows are dropped below


def parse_rows(path: Path, encoding: str,
               layout: Layout) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """Chunks of raw rows (blank lines dropped) with the physical line of each row."""
    next_line = 2
    for raw in _raw_chunks(path, encoding, layout):
        lines, next_line = _physical_lines(raw, next_line)
        keep = ~_blank_rows(raw)
        if not keep.all():
            raw, lines = raw.loc[keep].reset_index(drop=True), lines[keep]
        if len(raw):
            yield raw, lines


def _raw_chunks(path: Path, encoding: str, layout: Layout) -> Iterator[pd.DataFrame]:
    """pandas' chunks as they come, with its errors turned into InputFormatErrors."""
    try:
        # No usecols: with it the C parser silently drops the extra fields of a too-long row.
        with pd.read_csv(path, encoding=encoding, **_read_options(layout)) as chunks:
            yield from chunks
    except UnicodeDecodeError:
        raise  # read_comparison retries as GBK
    except pd.errors.EmptyDataError:
        raise InputFormatError("no rows: the file has a header but no comparison rows",
                               path=path) from None
    except pd.errors.ParserError as err:
        raise parser_error(err, path) from None
    except ValueError:  # a number column held text: only now look for where
        raise _locate_bad_number(path, encoding, layout) from None
    except csv.Error as err:  # the C parser's own messages come as ParserError; this is a safety net
        raise InputFormatError(f"not a readable CSV: {err}", path=path) from None


def _physical_lines(raw: pd.DataFrame, first: int) -> tuple[np.ndarray, int]:
    lines = np.arange(first, first + len(raw), dtype=np.int64)
    extra = 0
    if "compare_fail_reason" in raw:
        # The one free-text field: a quoted newline in it shifts every later line number.
        reason = raw["compare_fail_reason"]
        if reason.str.contains("\n", regex=False, na=False).any():
            per_row = reason.str.count("\n").fillna(0).to_numpy(np.int64)
            lines[1:] += np.cumsum(per_row)[:-1]
            extra = int(per_row[-1])
    return lines, int(lines[-1]) + 1 + extra if len(lines) else first


def _blank_rows(raw: pd.DataFrame) -> np.ndarray:
    # A blank line is a row with every field NA; Index is a float column, so test it first.
    blank = np.isnan(raw["op_index"].to_numpy())
    if blank.any():
        for role in ("op_name", "golden_ops", "tensor_id"):
            if role in raw:
                blank &= raw[role].isna().to_numpy()
    return blank


def _locate_bad_number(path: Path, encoding: str, layout: Layout) -> InputFormatError:
    """Re-read the number columns as text, chunk by chunk, up to the first cell that is no number."""
    float_roles = layout.float_roles
    usecols = float_roles + [r for r in ("compare_fail_reason",) if r in layout.headers]
    options = _read_options(layout) | {"dtype": object}
    next_line = 2
    with pd.read_csv(path, encoding=encoding, usecols=usecols, **options) as chunks:
        for text in chunks:
            lines, next_line = _physical_lines(text, next_line)
            first: tuple[int, str] | None = None
            for role in float_roles:
                column = text[role]
                bad = np.flatnonzero(pd.to_numeric(column, errors="coerce").isna().to_numpy()
                                     & column.notna().to_numpy())
                if bad.size and (first is None or bad[0] < first[0]):
                    first = (int(bad[0]), role)
            if first is not None:
                row, role = first
                return InputFormatError(
                    f"bad number {shown(text[role].iat[row])} in column {layout.headers[role]}",
                    path=path, line=int(lines[row]))
    return InputFormatError("a number column holds a value that is not a number", path=path)


# --- canonical frame -----------------------------------------------------------------------------

def canonical_columns(raw: pd.DataFrame, lines: np.ndarray, layout: Layout,
                      path: Path) -> dict[str, ColumnArray]:
    """The canonical columns (plus user metrics) for one chunk of raw rows."""
    n = len(raw)
    columns: dict[str, ColumnArray] = {}
    for role in INTEGER_ROLES:
        columns[role] = (integers(raw[role].to_numpy(), layout.headers[role], path, lines) if role in raw
                         else na_array("Int64", n))
    op_name = raw["op_name"] if "op_name" in raw else pd.Series(np.nan, index=raw.index, dtype=object)
    golden = raw["golden_ops"] if "golden_ops" in raw else pd.Series(np.nan, index=raw.index, dtype=object)
    # numpy's == on the object arrays: ten times faster than pandas' on a Series
    names = op_name.to_numpy(dtype=object)
    golden_only = names == "*"
    npu_only = golden.to_numpy(dtype=object) == "*"
    op_type = _text(raw, "op_type", n)
    is_output = op_type.isna()
    if is_output.any():  # only the rows without an op type can be the Node_Output row
        is_output[is_output] = names[is_output] == "Node_Output"
    io_col, slot = split_tensor_ids(raw["tensor_id"]) if "tensor_id" in raw else (_na_text(n), na_array("Int64", n))
    columns.update(
        op_type=op_type,
        op_name=op_name.mask(golden_only).astype("string").array,
        golden_ops=golden.mask(npu_only).astype("string").array,
        tensor_id=_text(raw, "tensor_id", n),
        io=io_col,
        slot=slot,
        npu_dtype=normalise_dtypes(raw["npu_dtype"]) if "npu_dtype" in raw else _na_text(n),
        golden_dtype=normalise_dtypes(raw["golden_dtype"]) if "golden_dtype" in raw else _na_text(n),
        npu_address=_text(raw, "npu_address", n),
        golden_address=_text(raw, "golden_address", n),
        shape=_text(raw, "shape", n),
        # an absent flag column is made NA once, at full length, by ColumnChunks.frame
        **{role: yes_no_flags(raw[role]) for role in FLAG_ROLES if role in raw},
        is_network_output=pd.array(is_output, dtype="boolean"),
        npu_only=pd.array(npu_only, dtype="boolean"),
        golden_only=pd.array(golden_only, dtype="boolean"),
    )
    # Copies, not views: a view would keep the chunk's whole float block alive until the end.
    for metric in METRIC_COLUMNS:
        columns[metric] = raw[metric].to_numpy(copy=True) if metric in raw else np.full(n, np.nan)
    if STD_ROLE in raw:
        columns.update(split_standard_deviation(raw[STD_ROLE], lines, path,
                                                layout.headers[STD_ROLE]))
    else:
        columns.update({name: np.full(n, np.nan) for name in STAT_COLUMNS})
    columns["compare_fail_reason"] = _text(raw, "compare_fail_reason", n)
    columns["source_line"] = lines
    for role in layout.user_roles:
        columns[role] = raw[role].to_numpy(copy=True)
    return columns


class ColumnChunks:
    """Canonical columns collected chunk by chunk, joined column by column at the end so only
    one column is ever held twice."""

    def __init__(self) -> None:
        self._parts: dict[str, list[ColumnArray]] = {}

    def append(self, columns: dict[str, ColumnArray]) -> None:
        for name, values in columns.items():
            self._parts.setdefault(name, []).append(values)

    def frame(self, order: Sequence[str]) -> pd.DataFrame:
        """The columns in ``order``; canonical columns this format never fills are made NA once,
        at full length, not chunk by chunk."""
        rows = sum(len(part) for part in self._parts["source_line"])
        data = {name: _concat(self._parts.pop(name)) if name in self._parts else na_column(name, rows)
                for name in order}
        return pd.DataFrame(data, copy=False)  # copy=False: no second copy of each float column


def _concat(parts: list[ColumnArray]) -> ColumnArray:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return pd.concat([pd.Series(p, copy=False) for p in parts], ignore_index=True).array


def _text(raw: pd.DataFrame, role: str, n: int) -> pd.api.extensions.ExtensionArray:
    return raw[role].astype("string").array if role in raw else _na_text(n)


def _na_text(n: int) -> pd.api.extensions.ExtensionArray:
    return na_array("string", n)
