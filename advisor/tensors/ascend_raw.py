"""Raw Ascend device dumps read without CANN: ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}``.

What msaccucmp's ``convert`` turns into ``...{timestamp}.{input|output}.{n}.npy`` files, read here
directly (docs/formats.md, "Raw Ascend dumps"). Two file layouts, told apart by their first bytes:

- current (the data dumper of CANN 5 and later): an unsigned 64-bit little-endian header length
  ``L``, then ``L`` bytes of a ``DumpData`` message (advisor/tensors/ascend_proto.py) whose tensors
  carry their ``size`` but no ``data``, then the tensors' bytes: every input in order, then every
  output (then buffers and workspaces, which are not read);
- older: the whole file is one ``DumpData`` message with each tensor's bytes in its ``data`` field.

Each tensor comes back in the framework's layout where its format allows (device_formats.py), in
numpy's dtype for its code (bfloat16 widened to float32, its low 16 bits zero, as msaccucmp writes it).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import InputFormatError
from ..filekind import MAX_DUMP_HEADER, RAW_DUMP_NAME
from ..inputfiles import read_input
from .ascend_proto import DATA_TYPES, dump_data_class, format_name, numpy_dtype
from .device_formats import to_original


@dataclass(frozen=True)
class RawName:
    op_type: str
    op: str
    task_id: int
    stream_id: int
    timestamp: int

    @property
    def is_overflow_record(self) -> bool:
        return self.op_type == "Opdebug"


def parse_raw_name(name: str) -> RawName | None:
    match = RAW_DUMP_NAME.match(name)
    if match is None:
        return None
    return RawName(match["op_type"], match["op"], int(match["task"]), int(match["stream"]), int(match["ts"]))


@dataclass(frozen=True)
class RawTensor:
    io: str                      # input | output
    slot: int
    values: np.ndarray           # in the original layout when it could be restored
    dtype: str                   # vendor name: DT_FLOAT16...
    stored_format: str
    note: str = ""               # why the stored layout was kept, or what else the reader saw


@dataclass(frozen=True)
class RawDump:
    op_name: str                 # the op's full name as the device wrote it (may hold / and .)
    version: str
    tensors: tuple[RawTensor, ...]


def read_raw_dump(path: Path) -> RawDump:
    """Every input and output tensor of one raw dump file (raises InputFormatError naming it)."""
    data = read_input(path, what="dump")
    message, blobs_at = _header(data, path)
    tensors = []
    offset = blobs_at
    for io, entries in (("input", message.input), ("output", message.output)):
        for slot, entry in enumerate(entries):
            raw, offset = _tensor_bytes(entry, data, offset, blobs_at is not None, path)
            tensors.append(_tensor(io, slot, entry, raw, path))
    return RawDump(message.op_name, message.version, tuple(tensors))


def output_bytes(path: Path, slot: int = 0) -> bytes:
    """The raw bytes of one output, uninterpreted (the overflow record is an output of uint8s)."""
    data = read_input(path, what="dump")
    message, blobs_at = _header(data, path)
    offset = blobs_at
    for entry in message.input:
        _, offset = _tensor_bytes(entry, data, offset, blobs_at is not None, path)
    for index, entry in enumerate(message.output):
        raw, offset = _tensor_bytes(entry, data, offset, blobs_at is not None, path)
        if index == slot:
            return raw
    raise InputFormatError(f"the dump has no output {slot}", path=path)


def _header(data: bytes, path: Path):
    message_class = dump_data_class()
    if len(data) >= 8:
        length = struct.unpack_from("<Q", data)[0]
        if 0 < length <= min(len(data) - 8, MAX_DUMP_HEADER):
            message = message_class()
            try:
                message.ParseFromString(data[8:8 + length])
            except DecodeError:
                message = None
            if message is not None and _plausible(message, len(data) - 8 - length, False):
                return message, 8 + length
            if message is not None and _plausible(message, len(data), False):
                announced = sum(e.size for e in [*message.input, *message.output])
                raise InputFormatError(f"cut short: the header announces {announced:,} bytes of tensors, the file "
                                       f"holds {len(data) - 8 - length:,} after it", path=path)
    message = message_class()
    try:
        message.ParseFromString(data)
    except DecodeError:
        message = None
    if message is not None and _plausible(message, 0, True):
        return message, None
    raise InputFormatError("not an Ascend device dump: neither a header length and DumpData header nor a "
                           "DumpData message (docs/formats.md, raw Ascend dumps)", path=path)


def _plausible(message, data_bytes: int, inline: bool) -> bool:
    entries = [*message.input, *message.output]
    if not entries or not all(e.data_type in DATA_TYPES or e.data_type == 0 for e in entries):
        return False
    if inline:
        return all(len(e.data) == e.size or (not e.size and e.data) for e in entries)
    return sum(e.size for e in entries) <= data_bytes


def _tensor_bytes(entry, data: bytes, offset: int | None, separate: bool, path: Path) -> tuple[bytes, int | None]:
    if not separate:
        return entry.data, offset
    end = offset + entry.size
    if end > len(data):
        raise InputFormatError(f"cut short: the header announces {end - offset} more bytes than the file holds",
                               path=path)
    return data[offset:end], end


def _tensor(io: str, slot: int, entry, raw: bytes, path: Path) -> RawTensor:
    dtype = numpy_dtype(entry.data_type)
    vendor = DATA_TYPES.get(entry.data_type, ("", f"data type {entry.data_type}"))[1]
    stored_format = format_name(entry.format)
    if dtype is None:
        note = f"{vendor} cannot be read as numbers"
        return RawTensor(io, slot, np.frombuffer(raw, np.uint8), vendor, stored_format, note)
    if len(raw) % dtype.itemsize:
        raise InputFormatError(f"{io} {slot}: {len(raw)} bytes is no whole number of {dtype.name} values",
                               path=path)
    values = np.frombuffer(raw, dtype)
    if vendor == "DT_BF16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    stored = tuple(int(d) for d in entry.shape.dim)
    original = tuple(int(d) for d in entry.original_shape.dim)
    if stored and math.prod(stored) != values.size:
        raise InputFormatError(f"{io} {slot}: shape {list(stored)} does not hold {values.size} values", path=path)
    array, note = to_original(values, stored_format, stored, original)
    return RawTensor(io, slot, np.ascontiguousarray(array), vendor, stored_format, note)
