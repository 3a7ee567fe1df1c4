"""Raw Ascend device dump files for the tests, written with the protobuf runtime.

The ``DumpData`` messages are built and serialised by ``google.protobuf`` from a schema declared here,
apart from advisor's (advisor/tensors/ascend_proto.py), with the field numbers of the published
``dump_data.proto`` (Ascend/msprobe ``resource/dump_data.proto``): a wrong number on either side
fails the tests. ``wire_header`` spells one header byte by byte from the same table, without protobuf.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from pathlib import Path

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
# The published numbers: OpOutput data_type=1 format=2 shape=3 original_op=4 data=5 size=6 original_shape=7;
# OpInput data_type=1 format=2 shape=3 data=4 size=5 original_shape=6; DumpData version=1 dump_time=2
# output=3 input=4 buffer=5 op_name=6 attr=7 space=8; Shape dim=1 (repeated uint64).
PUBLISHED = {
    "Shape": [("dim", 1, F.TYPE_UINT64, F.LABEL_REPEATED, "")],
    "OpOutput": [("data_type", 1, F.TYPE_ENUM, 0, "DT"), ("format", 2, F.TYPE_ENUM, 0, "FMT"),
                 ("shape", 3, F.TYPE_MESSAGE, 0, "Shape"), ("data", 5, F.TYPE_BYTES, 0, ""),
                 ("size", 6, F.TYPE_UINT64, 0, ""), ("original_shape", 7, F.TYPE_MESSAGE, 0, "Shape"),
                 ("address", 9, F.TYPE_UINT64, 0, "")],
    "OpInput": [("data_type", 1, F.TYPE_ENUM, 0, "DT"), ("format", 2, F.TYPE_ENUM, 0, "FMT"),
                ("shape", 3, F.TYPE_MESSAGE, 0, "Shape"), ("data", 4, F.TYPE_BYTES, 0, ""),
                ("size", 5, F.TYPE_UINT64, 0, ""), ("original_shape", 6, F.TYPE_MESSAGE, 0, "Shape"),
                ("address", 8, F.TYPE_UINT64, 0, "")],
    "OpAttr": [("name", 1, F.TYPE_STRING, 0, ""), ("value", 2, F.TYPE_STRING, 0, "")],
    "DumpData": [("version", 1, F.TYPE_STRING, 0, ""), ("dump_time", 2, F.TYPE_UINT64, 0, ""),
                 ("output", 3, F.TYPE_MESSAGE, F.LABEL_REPEATED, "OpOutput"),
                 ("input", 4, F.TYPE_MESSAGE, F.LABEL_REPEATED, "OpInput"),
                 ("op_name", 6, F.TYPE_STRING, 0, ""), ("attr", 7, F.TYPE_MESSAGE, F.LABEL_REPEATED, "OpAttr")],
}
DT = {"float32": 1, "float16": 2, "int8": 3, "uint8": 4, "int32": 7, "int64": 8, "bool": 11, "float64": 12}
FMT = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "FRACTAL_NZ": 29, "NDC1HWC0": 32}


def _dump_data():
    file = descriptor_pb2.FileDescriptorProto(name="test_dump_data.proto", package="toolkit.dumpdata",
                                              syntax="proto3")
    for enum, values in (("DT", DT), ("FMT", FMT)):
        kind = file.enum_type.add(name=enum)
        if 0 not in values.values():          # proto3: an enum's first value is 0
            kind.value.add(name=f"{enum}_UNDEFINED", number=0)
        for name, number in values.items():
            kind.value.add(name=f"{enum}_{name}", number=number)
    for message, fields in PUBLISHED.items():
        entry = file.message_type.add(name=message)
        for name, number, kind, label, type_name in fields:
            field = entry.field.add(name=name, number=number, type=kind, label=label or F.LABEL_OPTIONAL)
            if type_name:
                field.type_name = f".toolkit.dumpdata.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("toolkit.dumpdata.DumpData"))


DumpData = _dump_data()


def write_raw_dump(path: Path, op_name: str, inputs: list[np.ndarray], outputs: list[np.ndarray], *,
                   formats: dict[tuple[str, int], tuple[str, np.ndarray]] | None = None, inline: bool = False) -> Path:
    """One raw dump file. ``formats[(io, slot)] = (format, stored array)`` stores that tensor in a
    device layout (its original shape is recorded); ``inline``: the older layout, data in the message."""
    message = DumpData(version="2.0", dump_time=1714987410000641, op_name=op_name)
    message.attr.add(name="op_type", value="test")
    blobs = []
    for io, arrays, repeated in (("input", inputs, message.input), ("output", outputs, message.output)):
        for slot, array in enumerate(arrays):
            entry = repeated.add()
            fmt, stored = (formats or {}).get((io, slot), ("NCHW" if array.ndim == 4 else "ND", array))
            entry.data_type = DT[str(array.dtype)]
            entry.format = FMT[fmt]
            entry.shape.dim.extend(stored.shape)
            entry.original_shape.dim.extend(array.shape)
            raw = np.ascontiguousarray(stored).tobytes()
            entry.size = len(raw)
            entry.address = 0x124000000000 + 512 * slot
            if inline:
                entry.data = raw
            else:
                blobs.append(raw)
    header = message.SerializeToString()
    path.write_bytes(header if inline else struct.pack("<Q", len(header)) + header + b"".join(blobs))
    return path


def raw_folder_from_npy(npy_folder: Path, out: Path, **kw) -> Path:
    """The raw dump files the ``{op_type}.{op}.{task}.{stream}.{ts}.{io}.{n}.npy`` dumps were converted from."""
    groups: dict[str, dict[str, dict[int, np.ndarray]]] = defaultdict(lambda: {"input": {}, "output": {}})
    for path in sorted(npy_folder.glob("*.npy")):
        stem, io, slot, _ = path.name.rsplit(".", 3)
        groups[stem][io][int(slot)] = np.load(path)
    out.mkdir(parents=True, exist_ok=True)
    for stem, tensors in groups.items():
        op_name = stem.split(".")[1]
        inputs = [tensors["input"][i] for i in sorted(tensors["input"])]
        outputs = [tensors["output"][i] for i in sorted(tensors["output"])]
        write_raw_dump(out / stem, op_name, inputs, outputs, **kw)
    return out


def to_nc1hwc0(array: np.ndarray, c0: int = 16) -> np.ndarray:
    n, c, h, w = array.shape
    c1 = -(-c // c0)
    padded = np.zeros((n, c1 * c0, h, w), array.dtype)
    padded[:, :c] = array
    return padded.reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2).copy()


def wire_header(op_name: str, dtype: int, shape: tuple[int, ...], size: int) -> bytes:
    """A DumpData header with one output, encoded by hand (protobuf wire format, field numbers above)."""
    def varint(value: int) -> bytes:
        out = b""
        while True:
            byte, value = value & 0x7F, value >> 7
            out += bytes([byte | (0x80 if value else 0)])
            if not value:
                return out

    def field(number: int, payload: bytes) -> bytes:       # length-delimited
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    shape_bytes = field(1, b"".join(varint(d) for d in shape))          # packed repeated uint64
    output = varint(1 << 3) + varint(dtype) + varint(2 << 3) + varint(2) + field(3, shape_bytes) \
        + varint(6 << 3) + varint(size)
    return field(1, b"2.0") + field(3, output) + field(6, op_name.encode())
