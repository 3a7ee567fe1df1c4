"""A detections file's text, read once and checked: the one reader the COCO results, the annotations and
the mapped CSVs share."""

from __future__ import annotations

from pathlib import Path

from ..inputfiles import read_input_text

MAX_BYTES = 512 * 1024 * 1024        # a results file larger than this is not a detector's output


def read_text(path: Path, what: str) -> str:
    """The file's UTF-8 text (a BOM allowed), or one line naming the file and what is wrong."""
    return read_input_text(path, encoding="utf-8-sig", max_bytes=MAX_BYTES, what=what.removeprefix("a "))
