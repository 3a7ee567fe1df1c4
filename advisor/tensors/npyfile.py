"""An ``.npy`` dump read whole into reused buffers, or in pieces through memory maps of its data.

A file is opened once (:meth:`NpyFile.open`, through :func:`advisor.inputfiles.open_input_fd`) and
its header read from the same unbuffered file. A dump of up to ``running.WHOLE`` elements is read
whole (:meth:`NpyFile.read`) with ``readinto`` into this thread's buffer for its role, reused from
pair to pair: the copy lands in memory the CPU's caches keep, where the arithmetic reads it next. A
larger one is handed out in pieces (:meth:`NpyFile.chunks`) that are views of private maps of the
file (``mmap.ACCESS_COPY``: writable arrays, the type numba's compiled loops are built for, though
nothing writes to them), WINDOW bytes at a time: nothing is copied, a large pair scanned twice
(ranges first) faults its pages in once, and what stays mapped is a window or two whatever the
tensor's size. Measured with benchmarks/compare.py (CPU of advisor compare, alternating runs): on
its 1 MiB dumps, maps for every read cost 3-4% more than these buffers (the page faults and the
unmapping took more than the copy, more so on two threads); on its 64 MiB
dumps, maps instead of two copies took the run from 0.71 s to 0.55 s. A file that cannot be mapped
(a file system without ``mmap``) is read into fresh buffers instead. A dump cut short is refused
when it is opened; one another process truncates while its maps are read ends the process with
SIGBUS (as every memory map of it does, numpy's included).
Files stored in Fortran order are left to :func:`advisor.tensors.lineage.load_dump` (their bytes
are not in the order the metrics pair elements).
"""

from __future__ import annotations

import functools
import io
import math
import mmap
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import InputFormatError
from ..inputfiles import open_input_fd

_BUFFERS = threading.local()
#: Most bytes of a file mapped at once (a whole number of pages: the data is mapped from a page boundary).
WINDOW = 64 * 1024 ** 2
#: Bytes read first for the header: numpy writes 64-byte aligned headers, 128 bytes for most tensors.
_HEAD = 4096
#: More header bytes read for numpy's own reader, which refuses headers over 10,000 bytes anyway.
_MAX_HEADER = 1 << 16


class NpyFile:
    """An open ``.npy`` dump: its header, and its data read on demand (close it, or use ``with``)."""

    def __init__(self, path: Path, dtype: np.dtype, shape: tuple[int, ...], fortran: bool, offset: int,
                 file: io.FileIO) -> None:
        self.path, self.dtype, self.shape, self.fortran = path, dtype, shape, fortran
        self.offset = offset                        # where the data starts
        self._file = file

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @classmethod
    def open(cls, path: str | Path) -> NpyFile:
        """``path`` opened and its header read; a file that is not numpy, holds objects or is cut
        short is an InputFormatError naming it."""
        file = io.FileIO(open_input_fd(path), "rb")
        try:
            length = os.fstat(file.fileno()).st_size
            shape, fortran, dtype, offset = read_header_at(file)
            if dtype.hasobject:
                raise InputFormatError("cannot read the dump (it holds Python objects)", path=path)
            found = cls(Path(path), dtype, shape, fortran, offset, file)
            expected = offset + found.size * dtype.itemsize
            if length < expected:
                raise InputFormatError(f"cannot read the dump (cut short: {length} of {expected} bytes)", path=path)
        except (OSError, ValueError, EOFError) as exc:
            file.close()
            raise InputFormatError(f"cannot read the dump ({exc})", path=path) from None
        except BaseException:
            file.close()
            raise
        return found

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> NpyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, role: str) -> np.ndarray:
        """The whole flat data, read into this thread's buffer for ``role`` (valid until its next
        read): a dump read whole is small enough that a copy into a buffer the caches keep costs
        less than mapping it (module docstring)."""
        return self._read_span(self.offset, self.size, _buffer(role, self.dtype, self.size))

    def chunks(self, chunk: int) -> Iterator[np.ndarray]:
        """The flat data, ``chunk`` elements at a time (views of a map of the file, or of buffers
        read for them, each valid as long as it is referenced)."""
        itemsize = self.dtype.itemsize
        window = max(WINDOW // max(chunk * itemsize, 1), 1) * chunk      # elements: whole chunks
        for start in range(0, self.size, window):
            values = self._span(start, min(window, self.size - start))
            for first in range(0, values.size, chunk):
                yield values[first:first + chunk]

    def _span(self, start: int, count: int) -> np.ndarray:
        """``count`` elements from element ``start``, mapped (or read when the file cannot be)."""
        begin = self.offset + start * self.dtype.itemsize
        aligned = begin - begin % mmap.ALLOCATIONGRANULARITY
        length = begin - aligned + count * self.dtype.itemsize
        try:
            mapped = mmap.mmap(self._file.fileno(), length, access=mmap.ACCESS_COPY, offset=aligned)
        except (OSError, ValueError):
            return self._read_span(begin, count)
        return np.frombuffer(mapped, self.dtype, count, begin - aligned)

    def _read_span(self, begin: int, count: int, values: np.ndarray | None = None) -> np.ndarray:
        """``count`` elements from byte ``begin`` read into ``values`` (default: a new array)."""
        values = np.empty(count, self.dtype) if values is None else values
        self._file.seek(begin)
        if _read_into(self._file, memoryview(values).cast("B")) != values.nbytes:
            raise InputFormatError("cannot read the dump (cut short while reading)", path=self.path)
        return values


def _read_into(file: io.FileIO, target: memoryview) -> int:
    """Fill ``target`` (a read may return less than asked: go on until the end of the file); the
    bytes read."""
    done = 0
    while done < len(target):
        count = file.readinto(target[done:])
        if not count:
            break
        done += count
    return done


#: The header numpy writes (``np.save``), padding aside, for a plain dtype: parsed by a pattern, not
#: by ``ast.literal_eval`` (a tenth of the time). Anything else goes to numpy's own reader.
_PLAIN_HEADER = re.compile(r"\{'descr': '([<>|=]?[a-zA-Z]\d*)', 'fortran_order': (True|False), "
                           r"'shape': \(((?:\d+, ?)*\d*)\), \}")


def read_header_at(file: io.RawIOBase) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran order, dtype, offset of the data) of the ``.npy`` file open unbuffered as
    ``file`` and standing at its start (just opened), read in one call for the usual header;
    numpy's ValueError for a file that is not ``.npy``."""
    head = file.read(_HEAD) or b""
    if len(head) >= 10 and head[:6] == b"\x93NUMPY" and head[6] in (1, 2, 3):
        width = 2 if head[6] == 1 else 4
        offset = 8 + width + int.from_bytes(head[8:8 + width], "little")
        if offset > len(head) == _HEAD:
            head += file.read(offset - len(head)) or b""
        plain = _plain_header(head[8 + width:offset]) if len(head) >= offset else None
        if plain is not None:
            return (*plain, offset)
    if len(head) == _HEAD:
        head += file.read(_MAX_HEADER) or b""
    handle = io.BytesIO(head)
    shape, fortran, dtype = read_header(handle)
    return tuple(int(d) for d in shape), bool(fortran), dtype, handle.tell()


@functools.lru_cache(maxsize=1024)
def _plain_header(text: bytes) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """The header numpy writes, parsed; remembered, as a folder of dumps repeats a few shapes."""
    found = _PLAIN_HEADER.match(text.decode("latin1"))
    if found is None:
        return None
    dtype = np.dtype(found[1])
    if dtype.hasobject or dtype.names is not None or dtype.subdtype is not None:
        return None
    return tuple(int(d) for d in found[3].split(",") if d.strip()), found[2] == "True", dtype


def read_header(handle) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of the ``.npy`` file open in ``handle``, which is left at the
    start of the data; numpy's ValueError for a file that is not ``.npy``."""
    start = handle.tell()
    magic = handle.read(8)
    if len(magic) == 8 and magic[:6] == b"\x93NUMPY" and magic[6] in (1, 2, 3):
        width = 2 if magic[6] == 1 else 4
        length = int.from_bytes(handle.read(width), "little")
        text = handle.read(length)
        plain = _plain_header(text) if len(text) == length else None
        if plain is not None:
            return plain
    handle.seek(start)
    version = np.lib.format.read_magic(handle)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return read(handle)


@functools.lru_cache(maxsize=256)
def dtype_name(dtype: np.dtype) -> str:
    """``dtype.name`` (``float16``...), remembered: numpy works it out again on every call, in
    microseconds, and a scan asks it once per dump."""
    return dtype.name


def _buffer(role: str, dtype: np.dtype, size: int) -> np.ndarray:
    """This thread's buffer of ``dtype`` for ``role``, ``size`` elements long (a view of a reused one)."""
    table = getattr(_BUFFERS, "table", None)
    if table is None:
        table = _BUFFERS.table = {}
    key = (role, dtype.str)
    buffer = table.get(key)
    if buffer is None or buffer.size < size:
        buffer = table[key] = np.empty(size, dtype)
    return buffer[:size]
