"""msprobe results that are not CSV text: the ``--xlsx`` workbook and the first-difference JSON.

Both hold the same table as the compare CSV, so both end in the msprobe reader's canonical table
(advisor/ingest/msprobe_csv.py) after the table is rebuilt as text cells:

- ``msprobe compare --xlsx`` writes ``compare_result_*.xlsx``: the first sheet holds the CSV's
  header and rows (read with pandas and openpyxl, every cell as text). ``source_line`` is the
  sheet's row number (the header is row 1).
- ``msprobe compare -da`` writes ``compare_result_*.json`` (first-difference analysis):
  ``{call: {"is_same": bool, "op_items": [{<header>: <cell>, ...}, ...]}}``, the compare table's
  rows grouped by call. The rows are read in file order; ``source_line`` is the row's position
  (1-based, counting every op item of every call); ``is_same`` is kept as the boolean
  ``user_is_same`` of each row of its call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pandas.io.parsers import TextParser

from advisor.errors import InputFormatError
from advisor.ingest.csv_cells import check_column_count, header_names
from advisor.ingest.msprobe_csv import READERS, MsprobeReader
from advisor.ingest.table import ComparisonTable
from advisor.ingest.xlsx import read_first_sheet
from advisor.inputfiles import read_input_text
from advisor.nesting import loads_json

# A workbook or JSON of this size is already far beyond any compare result msprobe writes as one
# file; reading one means holding all of it in memory.
MAX_BYTES = 512 * 2**20


def read_xlsx(path: Path, format_name: str | None) -> ComparisonTable:
    rows = read_first_sheet(path, MAX_BYTES)        # geometry and XML checked first (ingest/xlsx.py)
    # The cells to text as pandas' read_excel turns them (its NA words, every cell as str).
    sheet = TextParser(rows, header=None, dtype=str, skip_blank_lines=False).read() if rows else pd.DataFrame()
    if sheet.empty:
        raise InputFormatError("the workbook's first sheet is empty", path=path)
    fields = ["" if pd.isna(v) else str(v).strip() for v in sheet.iloc[0]]
    check_column_count(len(fields), path)
    cells = sheet.iloc[1:].reset_index(drop=True)
    cells.columns = header_names(fields)
    lines = np.arange(2, 2 + len(cells), dtype=np.int64)
    blank = cells.isna().all(axis=1).to_numpy()
    cells, lines = cells.loc[~blank].reset_index(drop=True), lines[~blank]
    reader = _reader_for(path, fields, format_name, "an Excel workbook whose first sheet is not an msprobe "
                                                    "compare result")
    return reader.read_cells(cells, lines, path)


def read_first_diff_json(path: Path, format_name: str | None) -> ComparisonTable:
    _check_size(path)
    document = loads_json(read_input_text(path, max_bytes=MAX_BYTES, what="first-difference JSON"), path,
                          InputFormatError)
    if not isinstance(document, dict):
        raise InputFormatError("expected msprobe's first-difference JSON: {call: {is_same, op_items}}", path=path)
    rows: list[dict[str, Any]] = []
    for call, entry in document.items():
        items = entry.get("op_items") if isinstance(entry, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InputFormatError("expected a list of rows in 'op_items'", path=path, field=f"{call}.op_items")
        same = entry.get("is_same")
        rows.extend({**item, "is_same": same} for item in items)
    if not rows:
        raise InputFormatError("no rows: the first-difference JSON lists no op items", path=path)
    fields = list(dict.fromkeys(key for row in rows for key in row))
    check_column_count(len(fields), path)
    cells = pd.DataFrame({key: [_cell(row.get(key)) for row in rows] for key in fields}, dtype=object)
    cells.columns = header_names([str(f).strip() for f in fields])
    lines = np.arange(1, 1 + len(cells), dtype=np.int64)
    reader = _reader_for(path, list(cells.columns), format_name, "a JSON whose rows are not an msprobe compare "
                                                                  "result")
    return reader.read_cells(cells, lines, path)


def _cell(value: Any) -> Any:
    """A JSON value as the CSV would print it: text; None stays NA."""
    if value is None:
        return np.nan
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value != value:
        return "nan"
    return value if isinstance(value, str) else json.dumps(value) if isinstance(value, list | dict) else str(value)


def _reader_for(path: Path, fields: Sequence[str], format_name: str | None, what: str) -> MsprobeReader:
    readers = {r.name: r for r in READERS}
    if format_name is not None:
        if format_name not in readers:
            raise InputFormatError(f"format {format_name!r} is not an msprobe table; this file holds one",
                                   path=path)
        return readers[format_name]
    for reader in READERS:
        if reader.matches(fields):
            return reader
    shown = ",".join(fields)
    raise InputFormatError(f"{path.name} is {what} (header '{shown[:77]}"
                           f"{'...' if len(shown) > 77 else ''}'), not a comparison result", path=path)


def _check_size(path: Path) -> None:
    if path.stat().st_size > MAX_BYTES:
        raise InputFormatError(f"larger than {MAX_BYTES // 2**20} MiB: export the comparison as CSV instead",
                               path=path)
