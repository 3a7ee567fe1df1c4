"""What a file is, judged from its first bytes, so a command handed the wrong file can say what it got
("a PNG image, not a tensor") instead of failing deep inside a parser with a message about pickles or
a UnicodeDecodeError. Only the head of the file is read; nothing here parses a whole file.

``sniff(path)`` returns a ``FileKind``: a short ``name`` to branch on and a ``description`` to put in
a message ("is {description}, not ..."). Recognised: NumPy ``.npy`` and ``.npz``, advisor's tensor
text export, comparison CSVs (every format advisor reads, by its header), JSON, ONNX models, Python
pickles, common images and archives, SQLite, executables; anything else is "a text file" or "a binary file".
"""

from __future__ import annotations

import codecs
import csv
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .inputfiles import open_input

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
TENSOR_TEXT_MARK = "# advisor tensor"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
#: ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}``: a raw Ascend device dump (GE writes the op
#: name's dots as ``_``); ``Opdebug.Node_OpDebug.*`` is a hardware overflow record.
RAW_DUMP_NAME = re.compile(r"^(?P<op_type>[A-Za-z0-9_-]+)\.(?P<op>[^.]+)\.(?P<task>\d+)\.(?P<stream>\d+)"
                           r"\.(?P<ts>\d{10,})$")
TFDBG_NAME = re.compile(r"_\d+_Debug[A-Za-z]+_\d+$")
MAX_DUMP_HEADER = 64 * 1024 ** 2      # first line of `advisor tensor --txt` (advisor/inspect/tensor_text.py)


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
    with open_input(path) as handle:
        head = handle.read(HEAD_BYTES)
        complete = len(head) < HEAD_BYTES or not handle.read(1)
    if not head.strip():
        return FileKind("empty", "an empty file")
    binary = binary_kind(head) or dump_kind(Path(path).name, head, Path(path).stat().st_size) \
        or model_kind(Path(path).name, head)
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


def model_kind(name: str, head: bytes) -> FileKind | None:
    """An ONNX model: named ``.onnx`` and starting with protobuf field 1 (``ir_version``, a varint)."""
    if name.lower().endswith(".onnx") and head[:1] == b"\x08":
        return FileKind("onnx", "an ONNX model")
    return None


def dump_kind(name: str, head: bytes, size: int) -> FileKind | None:
    """The dump files advisor reads as tensors or records, not as comparisons: PyTorch 1.5 ``.h5``
    dumps, raw Ascend device dumps, their overflow records, tfdbg dump files."""
    if head.startswith(HDF5_MAGIC):
        return FileKind("h5", "an HDF5 file (a PyTorch 1.5 .h5 dump of torch.utils.dumper)")
    if RAW_DUMP_NAME.match(name):
        if name.startswith("Opdebug."):
            return FileKind("overflow-record", "a hardware overflow record (Opdebug)")
        if looks_like_raw_dump(head, size):
            return FileKind("raw-dump", "a raw Ascend device dump")
    if TFDBG_NAME.search(name) and head[:1] in (b"\x09", b"\x10", b"\x2a"):
        return FileKind("tfdbg", "a tfdbg dump file (a serialized tensorflow Event)")
    return None


def looks_like_raw_dump(head: bytes, size: int) -> bool:
    """The first bytes are a header length that fits the file, followed by protobuf field 1 or 2
    (version or dump time) - or a whole-file ``DumpData`` starting with them."""
    if len(head) < 10:
        return False
    length = struct.unpack_from("<Q", head)[0]
    if 0 < length <= min(size - 8, MAX_DUMP_HEADER) and head[8] in (0x0A, 0x10, 0x1A, 0x22, 0x32):
        return True
    return head[0] in (0x0A, 0x10) and not head[:8].isascii()


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
