"""The first sheet of an Excel workbook as rows of cells, with its geometry checked before anything
expands it (msprobe ``compare --xlsx`` writes its result this way; msprobe_sheets.py reads it).

A workbook is a zip of XML parts, and a small one can describe a huge table: one cell at XFD1048576 in a
2 KB file made pandas build ~17 billion cells, a 0.4 MB file held one 400 MB cell, and XML can declare
entities (a "billion laughs" bomb, or an external entity that reads a local file). So, before openpyxl
parses a part:

1. every XML part is streamed once (:func:`_check_part`): at most ``MAX_PART_BYTES`` once
   decompressed, no DTD (``<!DOCTYPE``: Excel and openpyxl never write one; refusing it refuses every
   entity declaration, internal or external, whatever XML parser reads the part next), and no run of
   text longer than ``MAX_RUN_BYTES`` between two tags (a cell holds at most 32,767 characters in Excel);
2. the first sheet's declared dimension (``<dimension ref>``) must fit ``MAX_ROWS`` x ``MAX_COLUMNS``
   and ``MAX_CELLS``;
3. the rows are read with openpyxl's read-only mode, streaming, and stopped at the first row, column
   or cell count beyond the bounds (a declared dimension may lie; pandas ignores it).

Any other failure of the zip or the XML is the workbook's one-line error (exit 2). The rows come back
as pandas would have made them (numbers that are whole as ints, errors as NaN, trailing empty cells and
rows dropped, rows padded to the widest), so the frame is the one ``pd.read_excel`` built before.

Why not ``defusedxml``: openpyxl uses it when it is installed, but it only guards the parsers openpyxl
calls, and a workbook never needs a DTD; refusing DTDs in step 1 covers every part and every parser
without another dependency.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import InputFormatError
from advisor.ingest.csv_cells import MAX_COLUMNS
from advisor.inputfiles import open_input

MAX_ROWS = 1_048_576                # Excel's own limit
# rows x columns once padded: every msprobe compare layout (at most 28 columns) at Excel's row limit.
# Measured: 1M rows of the 28-column summary layout run in 4.2 GB peak (openpyxl's streaming read: ~8 min).
MAX_CELLS = 1 << 25
MAX_PART_BYTES = 2 * 2**30          # one XML part, decompressed
MAX_RUN_BYTES = 1 << 20             # text between two tags: Excel's 32,767 characters, escaped, fit easily
PROLOG_BYTES = 1 << 16              # where a DTD could be: before the root element
_CHUNK = 1 << 20


def read_first_sheet(path: Path, max_bytes: int) -> list[list[Any]]:
    """The first sheet's rows (see the module docstring); InputFormatError names what is refused."""
    with open_input(path, max_bytes=max_bytes, what="workbook") as handle:
        try:
            with zipfile.ZipFile(handle) as archive:
                for item in archive.infolist():
                    if item.filename.endswith((".xml", ".rels", ".vml")):
                        _check_part(archive, item, path)
                return _rows(handle, path)
        except InputFormatError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, OSError, ValueError, NotImplementedError,
                RuntimeError) as err:       # a damaged zip: offsets out of the file, unknown methods, encryption
            raise InputFormatError(f"not a readable Excel workbook ({type(err).__name__}: {str(err)[:200]})",
                                   path=path) from None


def _check_part(archive: zipfile.ZipFile, item: zipfile.ZipInfo, path: Path) -> None:
    if item.file_size > MAX_PART_BYTES:
        raise _too_large(item.filename, item.file_size, path)
    size, longest, run, prolog = 0, 0, 0, b""
    with archive.open(item) as part:
        while chunk := part.read(_CHUNK):
            size += len(chunk)
            if size > MAX_PART_BYTES:                   # the zip's header understated it
                raise _too_large(item.filename, size, path)
            if len(prolog) < PROLOG_BYTES:
                prolog += chunk[:PROLOG_BYTES - len(prolog)]
            pieces = chunk.split(b"<")
            run += len(pieces[0])
            longest = max(longest, run, *(len(p) for p in pieces[1:-1]))
            run = len(pieces[-1]) if len(pieces) > 1 else run
            if max(longest, run) > MAX_RUN_BYTES:
                raise InputFormatError(f"part {item.filename} holds a cell (or text) longer than "
                                       f"{MAX_RUN_BYTES // 2**20} MiB: not a workbook msprobe writes", path=path)
    if b"<!DOCTYPE" in _before_root(prolog).upper():
        raise InputFormatError(f"part {item.filename} declares a DTD (entities): refused, a workbook never needs "
                               "one (it could expand to gigabytes or read other files)", path=path)


def _before_root(prolog: bytes) -> bytes:
    """The XML before its root element (declaration, comments, a DTD if any)."""
    at = 0
    while (at := prolog.find(b"<", at)) != -1 and prolog[at + 1:at + 2] in (b"?", b"!"):
        at += 1
    return prolog if at == -1 else prolog[:at]


def _too_large(name: str, size: int, path: Path) -> InputFormatError:
    return InputFormatError(f"part {name} is {size / 2**20:,.0f} MiB once decompressed, more than the "
                            f"{MAX_PART_BYTES // 2**20:,} MiB advisor reads", path=path)


def _rows(handle: Any, path: Path) -> list[list[Any]]:
    try:
        import openpyxl
    except ImportError:
        raise InputFormatError("reading .xlsx needs the openpyxl package (pip install openpyxl)", path=path) from None
    handle.seek(0)
    try:
        book = openpyxl.load_workbook(handle, read_only=True, data_only=True, keep_links=False)
        try:
            if not book.worksheets:
                raise InputFormatError("the workbook has no sheet", path=path)
            sheet = book.worksheets[0]
            _check_declared(sheet.max_row, sheet.max_column, path)
            sheet.reset_dimensions()                # the extent is what the rows hold, checked as they come
            return _bounded_rows(sheet, path)
        finally:
            book.close()
    except InputFormatError:
        raise
    except Exception as err:  # noqa: BLE001 - XML and zip errors of every kind: the workbook is damaged
        raise InputFormatError(f"not a readable Excel workbook ({type(err).__name__}: {str(err)[:200]})",
                               path=path) from None


def _check_declared(rows: int | None, columns: int | None, path: Path) -> None:
    if rows is None or columns is None:
        return
    if rows > MAX_ROWS or columns > MAX_COLUMNS or rows * columns > MAX_CELLS:
        raise InputFormatError(f"the first sheet declares {rows:,} rows x {columns:,} columns, more than the "
                               f"{MAX_COLUMNS:,} columns and {MAX_CELLS:,} cells advisor reads", path=path)


def _bounded_rows(sheet: Any, path: Path) -> list[list[Any]]:
    data: list[list[Any]] = []
    last, width = -1, 0
    for number, row in enumerate(sheet.rows):
        if number >= MAX_ROWS:
            raise InputFormatError(f"the first sheet has rows beyond row {MAX_ROWS:,}", path=path)
        if len(row) > MAX_COLUMNS:
            raise InputFormatError(f"row {number + 1} of the first sheet has a cell in column {len(row):,}, beyond "
                                   f"the {MAX_COLUMNS:,} columns advisor reads", path=path)
        cells = [_value(cell) for cell in row]
        while cells and cells[-1] == "":
            cells.pop()
        if cells:
            last, width = number, max(width, len(cells))
            if (last + 1) * width > MAX_CELLS:
                raise InputFormatError(f"the first sheet holds more than {MAX_CELLS:,} cells", path=path)
        data.append(cells)
    data = data[:last + 1]
    return [cells + [""] * (width - len(cells)) for cells in data]


def _value(cell: Any) -> Any:
    """A cell as pandas' openpyxl reader gives it: empty as "", an error as NaN, a whole number as int."""
    value = cell.value
    if value is None:
        return ""
    if cell.data_type == "e":
        return np.nan
    if cell.data_type == "n" and not isinstance(value, bool):
        whole = int(value)
        return whole if whole == value else float(value)
    return value
