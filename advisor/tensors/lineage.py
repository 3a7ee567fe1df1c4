"""Where a target op's input came from, found in the dumps themselves.

An op's input dump holds the very bytes its producer wrote (the same device buffer), so a
fingerprint of every target dump links each input to the op that produced it - through
target-only Cast/TransData ops, which the golden side never had. That link says which golden
tensor an input must be compared with, without a graph. A fingerprint is two checksums of the raw
bytes (CRC-32 and Adler-32) with dtype and shape; two different tensors of one shape and dtype
collide with odds of about 2^-64. zlib-ng computes them with the CPU's vector instructions (~57 and
~23 GB/s here, against ~2 GB/s each for the zlib Python ships with: the same values, a tenth of the
time of a compare run at the older speed).

While a dump is in memory anyway, the fingerprint pass also records what row labels need: whether
a float32 tensor holds bfloat16 values (low 16 bits all zero: bfloat16 dumps are stored as
float32) and the ``OverFlow`` flag of float16 tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from zlib_ng import zlib_ng

from ..errors import InputFormatError
from ..inputfiles import regular_file
from .overflow import fp16_overflows


@dataclass(frozen=True)
class TensorPrint:
    """What the fingerprint pass learned about one dump file."""

    crc32: int
    adler32: int
    bf16_values: bool      # float32 whose every element is a bfloat16 value (and not all zero)
    overflow: str          # overflow_flag() as if the tensor were DT_FLOAT16 ("NaN" otherwise)

    def as_list(self) -> list:
        return [self.crc32, self.adler32, self.bf16_values, self.overflow]

    @classmethod
    def from_list(cls, values: list) -> TensorPrint:
        return cls(int(values[0]), int(values[1]), bool(values[2]), str(values[3]))


def load_dump(path: Path) -> np.ndarray:
    """A dump as an array, memory-mapped where numpy can (empty files are read). A file cut short
    or not numpy at all is an InputFormatError naming it (also from a worker process)."""
    regular_file(path)                  # numpy maps it by name: never a FIFO or a device
    try:
        try:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError:
            return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputFormatError(f"cannot read the dump ({exc})", path=path) from None


def fingerprint(path: Path) -> TensorPrint:
    return fingerprint_array(load_dump(path))


#: Bytes per step of the fingerprint: the checksums and bit tests run over a memory map in pieces.
_STEP = 1 << 22


def fingerprint_array(array: np.ndarray) -> TensorPrint:
    """The checksums of the raw bytes, read in pieces (a memory-mapped dump of any size is
    fingerprinted in bounded memory), and what the row labels need (module docstring)."""
    flat = array.reshape(-1) if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(-1)
    printer = Fingerprinter(flat.dtype)
    step = max(1, _STEP // max(flat.itemsize, 1))
    for start in range(0, flat.size, step):
        printer.update(flat[start:start + step])
    return printer.result()


class Fingerprinter:
    """A fingerprint taken piece by piece, in the order of the bytes (C order)."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.crc, self.adler = zlib_ng.crc32(b""), zlib_ng.adler32(b"")
        self.low_bits = self.any_value = self.overflow = False

    def update(self, piece: np.ndarray) -> None:
        raw = piece.view(np.uint8)
        self.crc, self.adler = zlib_ng.crc32(raw, self.crc), zlib_ng.adler32(raw, self.adler)
        if self.dtype == np.float32 and not self.low_bits:
            bits = piece.view(np.uint32)
            self.low_bits = bool(np.any(bits & np.uint32(0xFFFF)))
            self.any_value = self.any_value or bool(np.any(bits & np.uint32(0x7FFFFFFF)))
        if self.dtype == np.float16 and not self.overflow:
            self.overflow = fp16_overflows(piece)

    def result(self) -> TensorPrint:
        flag = ("YES" if self.overflow else "NO") if self.dtype == np.float16 else "NaN"
        return TensorPrint(self.crc, self.adler, self.dtype == np.float32 and self.any_value and not self.low_bits,
                           flag)
