"""Ingest: turn comparison results into the canonical ComparisonTable (advisor/ingest/table.py).

``read_comparison(path, format=None, mapping=None)`` checks the file, sniffs its text encoding from
the first chunk, reads the header line and hands the file to the first registered reader whose
``matches`` accepts that header (``format`` skips detection; ``mapping``, the path of a YAML column
mapping, reads any CSV with the ``generic`` reader). ``read_dump_pair(bench, target)`` compares two
msprobe ``dump.json`` files by their statistics.

A reader is anything with a ``name``, an ``expected_header`` (a short description used in the
"unknown header" message), ``matches(header_fields)`` and ``read(path, encoding)``; new formats plug
in with ``register_reader``. Formats (docs/formats.md): msaccucmp, msaccucmp-legacy, msprobe,
msprobe-summary, msprobe-md5, msprobe-legacy, generic (never detected: needs a mapping) and
msprobe-dump (two files: ``read_dump_pair``). Before the header is read, the first bytes say whether
the file is an msprobe ``--xlsx`` workbook or first-difference JSON (read: msprobe_sheets.py) or a
known file that is no comparison (refused by name: known_files.py).
"""

from __future__ import annotations

import codecs
import csv
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from advisor.errors import InputFormatError, UsageError
from advisor.ingest import known_files, msaccucmp, msprobe_csv
from advisor.ingest.csv_cells import check_column_count
from advisor.ingest.generic_csv import GenericCsvReader, load_mapping
from advisor.ingest.msprobe_dump import DumpPairEntry, read_dump_pair
from advisor.ingest.msprobe_sheets import read_first_diff_json, read_xlsx
from advisor.ingest.table import ComparisonTable
from advisor.inputfiles import open_input

__all__ = ["ComparisonTable", "Reader", "detect_format", "known_formats", "load_mapping", "read_comparison",
           "read_dump_pair", "register_reader"]

SNIFF_BYTES = 64 * 1024
MSPROBE_FORMATS = frozenset(r.name for r in msprobe_csv.READERS)


class Reader(Protocol):
    name: str
    expected_header: str

    def matches(self, header_fields: Sequence[str]) -> bool: ...

    def read(self, path: Path, encoding: str) -> ComparisonTable: ...


_READERS: dict[str, Reader] = {}


def register_reader(reader: Reader) -> None:
    """Add a reader; detection tries readers in registration order."""
    _READERS[reader.name] = reader


def known_formats() -> list[str]:
    return list(_READERS)


for _reader in (*msaccucmp.READERS, *msprobe_csv.READERS, GenericCsvReader(), DumpPairEntry()):
    register_reader(_reader)


def read_comparison(path: str | Path, format: str | None = None,
                    mapping: str | Path | None = None) -> ComparisonTable:
    """Read a comparison result; ``format`` (a name from ``known_formats()``) skips detection;
    ``mapping`` (a YAML column mapping file) reads the file with the ``generic`` reader."""
    path = Path(path)
    if mapping is not None and format not in (None, "generic"):
        raise UsageError(f"a column mapping is for the generic format, not {format!r}")
    reader = GenericCsvReader(load_mapping(mapping)) if mapping is not None else None
    if reader is None and format:
        reader = _reader_named(format)
    head, size = _read_head(path)
    if reader is None or reader.name in MSPROBE_FORMATS:  # a workbook or JSON may hold an msprobe table
        kind = known_files.kind_of(path, head)
        if kind == known_files.XLSX:
            return read_xlsx(path, format)
        if kind == known_files.FIRST_DIFF_JSON:
            return read_first_diff_json(path, format)
    encoding = sniff_encoding(path, head, complete=len(head) == size)
    fields = _header_fields(path, head, encoding, size)
    reader = reader or _detect(path, fields)
    try:
        return reader.read(path, encoding)
    except UnicodeDecodeError:
        # The first chunk was valid UTF-8 but a later byte is not: Chinese Windows tools write GBK.
        if encoding != "utf-8":
            raise _not_text(path) from None
    try:
        return reader.read(path, "gbk")
    except UnicodeDecodeError:
        raise _not_text(path) from None


def _read_head(path: Path) -> tuple[bytes, int]:
    if not path.exists():
        raise InputFormatError("file not found", path=path)
    if path.is_dir():
        raise InputFormatError("is a directory, expected a comparison CSV file", path=path)
    try:
        with open_input(path) as handle:
            head = handle.read(SNIFF_BYTES)
            size = handle.seek(0, 2)
    except OSError as err:
        raise InputFormatError(f"cannot read the file: {err.strerror or err}", path=path) from None
    if not head.strip():
        raise InputFormatError("empty file", path=path)
    return head, size


def sniff_encoding(path: Path, head: bytes, complete: bool) -> str:
    """``utf-8-sig``, ``utf-8`` or ``gbk``, judged on the first chunk only."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _not_text(path, "it is UTF-16: save it as UTF-8")
    if b"\x00" in head:
        raise _not_text(path, "it holds binary data")
    for encoding in ("utf-8", "gbk"):
        try:
            # final=False: the chunk may end in the middle of a multi-byte character
            codecs.getincrementaldecoder(encoding)().decode(head, final=complete)
        except UnicodeDecodeError:
            continue
        return encoding
    raise _not_text(path)


def _not_text(path: Path, why: str = "") -> InputFormatError:
    return InputFormatError("not UTF-8 or GBK text" + (f" ({why})" if why else ""), path=path)


def _header_fields(path: Path, head: bytes, encoding: str, size: int) -> list[str]:
    end = head.find(b"\n")
    first_bytes = head if end < 0 else head[:end]
    if re.search(rb"\r[^\r]", first_bytes):
        # pandas would split the lines and Python's csv module would not: read neither way.
        raise InputFormatError("lines end in a bare CR (old Mac line endings): save the file with LF or CRLF "
                               "line endings", path=path, line=1)
    if end < 0 and size > len(head):
        raise InputFormatError(f"the first line is longer than {SNIFF_BYTES // 1024} KiB: "
                               "not a comparison CSV", path=path, line=1)
    first = first_bytes.decode(encoding, errors="replace").strip()
    if not first:
        raise InputFormatError("the first line is empty, expected a header", path=path, line=1)
    try:
        fields = next(csv.reader([first]), [])
    except csv.Error as err:
        raise InputFormatError(f"not a readable CSV header: {err}", path=path, line=1) from None
    check_column_count(len(fields), path)
    return [field.strip() for field in fields]


def detect_format(header_fields: Sequence[str]) -> str | None:
    """The name of the comparison format whose header this is, or None (see advisor/filekind.py)."""
    return next((reader.name for reader in _READERS.values() if reader.matches(header_fields)), None)


def _reader_named(name: str) -> Reader:
    if name not in _READERS:
        raise UsageError(f"unknown format {name!r}; known formats: {', '.join(_READERS)}")
    return _READERS[name]


def _detect(path: Path, fields: list[str]) -> Reader:
    name = detect_format(fields)
    if name is not None:
        return _READERS[name]
    known_files.refuse_known_header(path, fields)
    shown = ",".join(fields)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    expected = "; ".join(f"{r.name} ({r.expected_header})" for r in _READERS.values())
    raise InputFormatError(f"unknown header '{shown}'; expected one of: {expected}", path=path, line=1)
