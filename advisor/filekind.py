"""What a file is, judged from its first bytes, so a command handed the wrong file can say what it got
("a PNG image, not a tensor") instead of failing deep inside a parser with a message about pickles or
a UnicodeDecodeError. Only the head of the file is read; nothing here parses a whole file.

``sniff(path)`` returns a ``FileKind``: a short ``name`` to branch on and a ``description`` to put in
a message ("is {description}, not ..."). Recognised: NumPy ``.npy`` and ``.npz``, advisor's tensor
text export, comparison CSVs (every format advisor reads, by its header), JSON, Python pickles, common
images and archives, SQLite, executables; anything else is "a text file" or "a binary file".
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HEAD_BYTES = 4096

# Leading bytes -> (name, description). Checked in order; the first that matches wins.
MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"\x93NUMPY", "npy", "a NumPy .npy array"),
    (b"\x89PNG\r\n\x1a\n", "image", "a PNG image"),
    (b"\xff\xd8\xff", "image", "a JPEG image"),
    (b"GIF87a", "image", "a GIF image"),
    (b"GIF89a", "image", "a GIF image"),
    (b"%PDF-", "document", "a PDF document"),
    (b"SQLite format 3\x00", "sqlite", "an SQLite database"),
    (b"\x1f\x8b", "archive", "a gzip-compressed file"),
    (b"\x7fELF", "executable", "an executable (ELF)"),
)
TENSOR_TEXT_MARK = "# advisor tensor"      # first line of `advisor tensor --txt` (advisor/inspect/tensor.py)


@dataclass(frozen=True)
class FileKind:
    name: str           # npy | npz | zip | tensor-text | comparison | json | pickle | image | ... | text | binary
    description: str    # "a PNG image": reads after "is"

    def is_a(self, *names: str) -> bool:
        return self.name in names


def sniff(path: str | Path, formats: Callable[[list[str]], str | None] | None = None) -> FileKind:
    """The kind of the file at ``path`` from its first few KiB (it must exist and be readable).

    ``formats`` names the comparison format of a CSV header (``advisor.ingest.detect_format``), so a
    comparison is told from another table; this module sits below the readers and does not import them."""
    with open(path, "rb") as handle:
        head = handle.read(HEAD_BYTES)
        complete = len(head) < HEAD_BYTES or not handle.read(1)
    if not head.strip():
        return FileKind("empty", "an empty file")
    binary = binary_kind(head)
    if binary is not None:
        return binary
    text = _as_text(head, complete)
    if text is None:
        return FileKind("binary", "a binary file of no kind advisor knows")
    return _text_kind(text, formats)


def binary_kind(head: bytes) -> FileKind | None:
    """The kind a file's leading bytes name (NumPy, ZIP, pickle, images...), or None for anything else.
    The comparison reader's refusals (advisor/ingest/known_files.py) use the same recognition."""
    for magic, name, description in MAGIC:
        if head.startswith(magic):
            return FileKind(name, description)
    if head.startswith(b"PK\x03\x04"):
        if b".npy" in head[:200]:
            return FileKind("npz", "a NumPy .npz archive of several arrays (save the one you mean with numpy.save)")
        return FileKind("zip", "a ZIP archive")
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return FileKind("pickle", "a Python pickle")
    return None


def _as_text(head: bytes, complete: bool) -> str | None:
    if b"\x00" in head:
        return None
    for encoding in ("utf-8-sig", "gbk"):
        try:
            return codecs.getincrementaldecoder(encoding)().decode(head, final=complete)
        except UnicodeDecodeError:
            continue
    return None


def _text_kind(text: str, formats: Callable[[list[str]], str | None] | None) -> FileKind:
    stripped = text.lstrip()
    if stripped.startswith(TENSOR_TEXT_MARK):
        return FileKind("tensor-text", "a tensor text export")
    if stripped[:1] in ("{", "["):
        return FileKind("json", "a JSON file")
    first = stripped.splitlines()[0] if stripped else ""
    fields = [field.strip() for field in next(csv.reader([first]), [])]
    if len(fields) > 1:
        name = formats(fields) if formats is not None else None
        if name is not None:
            return FileKind("comparison", f"a comparison CSV ({name})")
        return FileKind("csv", "a CSV table")
    return FileKind("text", "a text file")
