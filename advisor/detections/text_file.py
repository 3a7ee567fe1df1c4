"""A detections file's text, read once and checked: the one reader the COCO results, the annotations and
the mapped CSVs share."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputFormatError
from ..inputfiles import check_input

MAX_BYTES = 512 * 1024 * 1024        # a results file larger than this is not a detector's output


def read_text(path: Path, what: str) -> str:
    """The file's UTF-8 text (a BOM allowed), or one line naming the file and what is wrong."""
    check_input(path, InputFormatError)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputFormatError(f"larger than {MAX_BYTES >> 20} MiB: not {what}", path=path)
        return path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InputFormatError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputFormatError(f"is a folder, expected {what}", path=path) from None
    except UnicodeDecodeError:
        raise InputFormatError("not UTF-8 text", path=path) from None
    except OSError as exc:
        raise InputFormatError(f"cannot read: {exc.strerror or exc}", path=path) from None
