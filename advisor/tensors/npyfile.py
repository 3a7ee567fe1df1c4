"""An ``.npy`` dump read in chunks into buffers that are reused: no memory map, no fresh pages.

A memory map costs a page fault per few pages on first touch, and numpy's ``np.load`` allocates the
whole tensor; reading chunk after chunk with ``readinto`` into the same buffers costs one copy from
the page cache (or the disk) and keeps memory at a few chunks whatever the tensor's size. Files
stored in Fortran order are left to :func:`advisor.tensors.lineage.load_dump` (their bytes are not
in the order the metrics pair elements).
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputFormatError
from ..inputfiles import open_input

_BUFFERS = threading.local()


@dataclass(frozen=True)
class NpyFile:
    path: Path
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran: bool
    offset: int                 # where the data starts

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @classmethod
    def open(cls, path: Path) -> NpyFile:
        """The header of ``path``; a file that is not numpy, holds objects or is cut short is an
        InputFormatError naming it."""
        try:
            with open_input(path) as handle:
                shape, fortran, dtype = read_header(handle)
                offset = handle.tell()
                length = os.fstat(handle.fileno()).st_size
        except (OSError, ValueError, EOFError) as exc:
            raise InputFormatError(f"cannot read the dump ({exc})", path=path) from None
        if dtype.hasobject:
            raise InputFormatError("cannot read the dump (it holds Python objects)", path=path)
        found = cls(Path(path), dtype, tuple(int(d) for d in shape), bool(fortran), offset)
        expected = offset + found.size * dtype.itemsize
        if length < expected:
            raise InputFormatError(f"cannot read the dump (cut short: {length} of {expected} bytes)", path=path)
        return found

    def read(self, role: str) -> np.ndarray:
        """The whole flat data, in the buffer reused for ``role`` (valid until its next read)."""
        return next(self.chunks(max(self.size, 1), role), np.empty(0, self.dtype))

    def chunks(self, chunk: int, role: str) -> Iterator[np.ndarray]:
        """The flat data, ``chunk`` elements at a time, in a buffer reused for ``role`` (each
        chunk is valid until the next one is read)."""
        buffer = _buffer(role, self.dtype, chunk)
        with open_input(self.path) as handle:
            handle.seek(self.offset)
            for start in range(0, self.size, chunk):
                piece = buffer[:min(chunk, self.size - start)]
                if handle.readinto(memoryview(piece).cast("B")) != piece.nbytes:
                    raise InputFormatError("cannot read the dump (cut short while reading)", path=self.path)
                yield piece


#: The header numpy writes (``np.save``), padding aside, for a plain dtype: parsed by a pattern, not
#: by ``ast.literal_eval`` (a tenth of the time). Anything else goes to numpy's own reader.
_PLAIN_HEADER = re.compile(r"\{'descr': '([<>|=]?[a-zA-Z]\d*)', 'fortran_order': (True|False), "
                           r"'shape': \(((?:\d+, ?)*\d*)\), \}")


def read_header(handle) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of the ``.npy`` file open in ``handle``, which is left at the
    start of the data; numpy's ValueError for a file that is not ``.npy``."""
    start = handle.tell()
    magic = handle.read(8)
    if len(magic) == 8 and magic[:6] == b"\x93NUMPY" and magic[6] in (1, 2, 3):
        width = 2 if magic[6] == 1 else 4
        length = int.from_bytes(handle.read(width), "little")
        text = handle.read(length)
        found = _PLAIN_HEADER.match(text.decode("latin1")) if len(text) == length else None
        if found is not None:
            dtype = np.dtype(found[1])
            if not dtype.hasobject and dtype.names is None and dtype.subdtype is None:
                return tuple(int(d) for d in found[3].split(",") if d.strip()), found[2] == "True", dtype
    handle.seek(start)
    version = np.lib.format.read_magic(handle)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return read(handle)


def _buffer(role: str, dtype: np.dtype, chunk: int) -> np.ndarray:
    table = getattr(_BUFFERS, "table", None)
    if table is None:
        table = _BUFFERS.table = {}
    key = (role, dtype.str)
    buffer = table.get(key)
    if buffer is None or buffer.size < chunk:
        buffer = table[key] = np.empty(chunk, dtype)
    return buffer
