"""TensorFlow 1.x debugger (tfdbg) dump folders as golden dumps.

What ``tf_debug.DumpingDebugWrapperSession`` / ``--debug_urls=file://...`` (and precision_tool's
``tf_dump`` before it converts them) leave behind (facts: tensorflow/python/debug/lib/debug_data.py
and debug_graphs.py of the public TensorFlow repository):

- a dump root with one ``_tfdbg_device_<device>`` folder per device; under it the op name's ``/``
  become folders and each dumped tensor is a file ``{node_basename}_{output_slot}_{debug_op}_{timestamp_us}``
  (``DebugIdentity`` holds the tensor itself; ``DebugNumericSummary`` and others hold statistics
  and are not read); ``_tfdbg_graph_*`` and ``_tfdbg_core_metadata_*`` files describe the run;
- each dump file is one serialized ``tensorflow.Event`` (not a TFRecord): ``summary.value[0]``
  has ``node_name`` ``"{node}:{slot}:{debug_op}"`` and the tensor as a ``TensorProto``.

Each ``DebugIdentity`` tensor becomes a TF-style golden dump, ``{op}.{slot}.{timestamp}.npy`` with
the op name's ``/`` written as ``_`` (the name precision_tool gives the same tensor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import InputFormatError
from ..inputfiles import read_input
from .dump_names import safe_name
from .proto_schema import FIELD as _F
from .proto_schema import message_class

DEBUG_OP = "DebugIdentity"
FILE_NAME = re.compile(r"^(?P<base>.+)_(?P<slot>\d+)_(?P<op>Debug[A-Za-z]+)_(?P<ts>\d+)$")
DEVICE_DIR = "_tfdbg_device_"
# tensorflow DataType -> numpy (DT_BFLOAT16 is read as its 16 bits and widened to float32).
DATA_TYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 9: "int64", 10: "bool",
              14: "bfloat16", 17: "uint16", 19: "float16", 22: "uint32", 23: "uint64"}
# tensorflow/core/framework/{tensor,tensor_shape}.proto, core/framework/summary.proto, core/util/event.proto
_MESSAGES = (
    ("Dim", (("size", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, ""),)),
    ("TensorShapeProto", (("dim", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Dim"),)),
    ("TensorProto", (("dtype", 1, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
                     ("tensor_shape", 2, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "TensorShapeProto"),
                     ("tensor_content", 4, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, ""),
                     ("float_val", 5, _F.TYPE_FLOAT, _F.LABEL_REPEATED, ""),
                     ("double_val", 6, _F.TYPE_DOUBLE, _F.LABEL_REPEATED, ""),
                     ("int_val", 7, _F.TYPE_INT32, _F.LABEL_REPEATED, ""),
                     ("int64_val", 10, _F.TYPE_INT64, _F.LABEL_REPEATED, ""),
                     ("bool_val", 11, _F.TYPE_BOOL, _F.LABEL_REPEATED, ""),
                     ("half_val", 13, _F.TYPE_INT32, _F.LABEL_REPEATED, ""))),
    ("Value", (("tag", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
               ("node_name", 7, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
               ("tensor", 8, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "TensorProto"))),
    ("Summary", (("value", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "Value"),)),
    ("Event", (("wall_time", 1, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, ""),
               ("step", 2, _F.TYPE_INT64, _F.LABEL_OPTIONAL, ""),
               ("summary", 5, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Summary"))),
)


@dataclass(frozen=True)
class TfdbgTensor:
    node: str                # full node name, "dense/MatMul"
    slot: int
    timestamp: int
    values: np.ndarray

    @property
    def file_name(self) -> str:
        return f"{safe_name(self.node)}.{self.slot}.{self.timestamp}.npy"


@cache
def _event_class() -> type:
    return message_class("advisor.tfdbg", _MESSAGES, "Event")


def is_dump_file(path: Path) -> bool:
    match = FILE_NAME.match(path.name)
    return match is not None and match["op"] == DEBUG_OP and any(p.startswith(DEVICE_DIR) for p in path.parts)


def read_tfdbg_file(path: Path) -> TfdbgTensor:
    event = _event_class()()
    try:
        event.ParseFromString(read_input(path, what="dump"))
    except (DecodeError, OSError) as exc:
        raise InputFormatError(f"not a tfdbg dump (a serialized tensorflow Event): {exc}", path=path) from None
    values = event.summary.value
    if len(values) != 1 or not values[0].node_name.count(":") >= 2:
        raise InputFormatError("a tfdbg dump holds one summary value named <node>:<slot>:<debug op>", path=path)
    node, slot, _ = values[0].node_name.rsplit(":", 2)
    match = FILE_NAME.match(path.name)
    timestamp = int(match["ts"]) if match else int(event.wall_time * 1e6)
    return TfdbgTensor(node, int(slot), timestamp, _array(values[0].tensor, path))


def _array(tensor, path: Path) -> np.ndarray:
    dtype = DATA_TYPES.get(tensor.dtype)
    if dtype is None:
        raise InputFormatError(f"tensor dtype {tensor.dtype} (tensorflow DataType) is not numeric", path=path)
    shape = tuple(int(d.size) for d in tensor.tensor_shape.dim)
    stored = np.dtype("uint16") if dtype == "bfloat16" else np.dtype(dtype)
    if tensor.tensor_content:
        values = np.frombuffer(tensor.tensor_content, stored)
    else:
        repeated = {"float32": tensor.float_val, "float64": tensor.double_val, "int64": tensor.int64_val,
                    "bool": tensor.bool_val, "float16": tensor.half_val, "bfloat16": tensor.half_val}
        source = repeated.get(dtype, tensor.int_val)
        values = np.asarray(list(source)).astype(np.uint16 if dtype in ("float16", "bfloat16") else stored)
        if dtype == "float16":
            values = values.view(np.float16)
        size = int(np.prod(shape)) if shape else 1
        if values.size == 1 and size > 1:     # TensorProto stores a constant tensor as one value
            values = np.full(size, values[0], values.dtype)
    if dtype == "bfloat16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    try:
        return values.reshape(shape)
    except ValueError:
        raise InputFormatError(f"{values.size} values do not fill the shape {list(shape)}", path=path) from None
