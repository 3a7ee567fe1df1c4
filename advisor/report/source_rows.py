"""The comparison's own rows behind an op, embedded in the report (as coverage.py embeds source).

A report links each op and finding to the rows of the comparison file they came from. A ``file://``
link to ``result.csv#L58`` neither jumps to the line (browsers do not) nor survives the report being
shared, so the rows themselves go into the page: the header and, per op that matters, its rows as the
tool wrote them (each cut at MAX_CHARS: msprobe's stack column alone can be kilobytes).

The file is read once, in large blocks whose newlines are counted without decoding them, and only the
blocks holding a wanted line are split: a million-row comparison whose output op is at its end costs
one pass at memory speed, not a million Python strings.
"""

from __future__ import annotations

from pathlib import Path

from ..diagnosis import SourceRows
from ..ingest.table import ComparisonTable

BLOCK = 8 << 20               # bytes read at a time
MAX_CHARS = 400               # a row is cut here ("…")
MAX_LINES = 1500              # rows embedded in one report, in all
MAX_SOURCE_LINES = 50         # rows a finding names as its source (the first of its op)


def read_lines(path: Path, wanted: set[int]) -> dict[int, str]:
    """Lines ``wanted`` (1-based) of the text file at ``path``, decoded (UTF-8, else GBK) and cut at
    MAX_CHARS; lines past the end are left out."""
    if not wanted:
        return {}
    last = max(wanted)
    found: dict[int, str] = {}
    line = 1                                  # number of the line the next byte belongs to
    carry = b""                               # the unfinished last line of the previous block
    with open(path, "rb") as handle:
        while line <= last:
            block = handle.read(BLOCK)
            if not block:
                if carry and line in wanted:
                    found[line] = _text(carry)
                break
            ends = block.count(b"\n")
            if any(line <= n < line + ends for n in wanted):
                parts = (carry + block).split(b"\n")
                for k, part in enumerate(parts[:-1]):
                    if line + k in wanted:
                        found[line + k] = _text(part)
                carry = parts[-1]
            elif ends:
                carry = block[block.rfind(b"\n") + 1:]     # only the unfinished line is kept, not copied whole
            else:
                carry += block
            line += ends
    return found


def _text(raw: bytes) -> str:
    raw = raw.rstrip(b"\r")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("gbk", errors="replace")
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def readable(path: Path | None) -> bool:
    """A comparison whose rows are text lines (a CSV), not a workbook or a pair of dump.json files."""
    return path is not None and path.is_file() and path.suffix.lower() not in (".xlsx", ".xls", ".json")


def _lines_by_op(table: ComparisonTable, wanted: set[int]) -> dict[int, list[int]]:
    """Op index -> the source lines of its rows (the first MAX_SOURCE_LINES). One pass over the table
    for all of them: a noisy network can give a thousand findings, and a million-row column costs
    milliseconds per pass."""
    if not wanted:
        return {}
    frame = table.frame
    hits = frame.loc[frame["op_index"].isin(wanted).to_numpy(dtype=bool), ["op_index", "source_line"]]
    first = hits.groupby("op_index", sort=False).head(MAX_SOURCE_LINES)
    lines: dict[int, list[int]] = {}
    for index, line in zip(first["op_index"].tolist(), first["source_line"].tolist(), strict=True):
        lines.setdefault(int(index), []).append(int(line))
    return lines


def attach_source_lines(findings: list, table: ComparisonTable) -> None:
    """Every finding names the source rows it came from: all rows of its op (the first MAX_SOURCE_LINES)."""
    lines = _lines_by_op(table, {finding.index for finding in findings if finding.index is not None})
    for finding in findings:
        if finding.index is not None:
            finding.source_lines = lines.get(int(finding.index), [])


def source_rows_of(path: Path | None, table: ComparisonTable, ops: list[int]) -> SourceRows | None:
    """The comparison's rows of ``ops`` (most important first), as the file holds them, for the report
    to embed; None for a comparison that is no text file (a workbook, two dump.json files)."""
    if path is None or not readable(path):
        return None
    by_op = _lines_by_op(table, set(ops))
    chosen: dict[int, list[int]] = {}
    budget = MAX_LINES
    for index in dict.fromkeys(ops):
        lines = by_op.get(index, [])[:budget]
        if lines:
            chosen[index] = lines
            budget -= len(lines)
    texts = read_lines(path, {1, *(n for lines in chosen.values() for n in lines)})
    return SourceRows(file=str(path), header=texts.get(1, ""),
                      by_op={i: [(n, texts[n]) for n in lines if n in texts] for i, lines in chosen.items()})
