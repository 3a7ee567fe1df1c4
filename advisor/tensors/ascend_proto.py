"""The message schema of Ascend device dump files, declared for the protobuf runtime.

A raw device dump (``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}``, docs/formats.md) is a
``DumpData`` message of package ``toolkit.dumpdata``. The field numbers and types below are the
published ones (``resource/dump_data.proto`` of the public Ascend/msprobe repository; the older
``proto/dump_task.proto`` of Ascend/metadef has the same numbers for the fields it has). Only what a
reader needs is declared: version, dump time, op name, and each input's and output's dtype,
format, shapes, size and data. Unknown fields (workspace, buffers, attributes, address, dim ranges)
are skipped by the runtime.

The dtype and format codes are the ``OutputDataType`` and ``OutputFormat`` enums of that file; they
are read as plain integers, so a code from a newer CANN is reported by number instead of failing.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .proto_schema import FIELD as _F
from .proto_schema import message_class

PACKAGE = "toolkit.dumpdata"

# (message, ((field, number, type, label, message type name or ""), ...))
_MESSAGES: tuple[tuple[str, tuple[tuple[str, int, int, int, str], ...]], ...] = (
    ("Shape", (("dim", 1, _F.TYPE_UINT64, _F.LABEL_REPEATED, ""),)),
    ("OriginalOp", (("name", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
                    ("output_index", 2, _F.TYPE_UINT32, _F.LABEL_OPTIONAL, ""),
                    ("data_type", 3, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
                    ("format", 4, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""))),
    ("OpOutput", (("data_type", 1, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
                  ("format", 2, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
                  ("shape", 3, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Shape"),
                  ("original_op", 4, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "OriginalOp"),
                  ("data", 5, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, ""),
                  ("size", 6, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, ""),
                  ("original_shape", 7, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Shape"),
                  ("sub_format", 8, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""))),
    ("OpInput", (("data_type", 1, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
                 ("format", 2, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""),
                 ("shape", 3, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Shape"),
                 ("data", 4, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, ""),
                 ("size", 5, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, ""),
                 ("original_shape", 6, _F.TYPE_MESSAGE, _F.LABEL_OPTIONAL, "Shape"),
                 ("sub_format", 7, _F.TYPE_INT32, _F.LABEL_OPTIONAL, ""))),
    ("DumpData", (("version", 1, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""),
                  ("dump_time", 2, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, ""),
                  ("output", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "OpOutput"),
                  ("input", 4, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, "OpInput"),
                  ("op_name", 6, _F.TYPE_STRING, _F.LABEL_OPTIONAL, ""))),
)

#: OutputDataType code -> (numpy dtype, vendor name). bfloat16 is read as its 16 bits and widened.
DATA_TYPES: dict[int, tuple[str, str]] = {
    1: ("float32", "DT_FLOAT"), 2: ("float16", "DT_FLOAT16"), 3: ("int8", "DT_INT8"), 4: ("uint8", "DT_UINT8"),
    5: ("int16", "DT_INT16"), 6: ("uint16", "DT_UINT16"), 7: ("int32", "DT_INT32"), 8: ("int64", "DT_INT64"),
    9: ("uint32", "DT_UINT32"), 10: ("uint64", "DT_UINT64"), 11: ("bool", "DT_BOOL"), 12: ("float64", "DT_DOUBLE"),
    27: ("bfloat16", "DT_BF16"),
}
#: OutputFormat code -> name (the codes advisor converts or names in a note).
FORMATS: dict[int, str] = {
    0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 5: "NC1C0HWPAD", 6: "NHWC1C0", 9: "C1HWNC0",
    12: "NC1HWC0_C04", 13: "FRACTAL_Z_C04", 14: "CHWN", 16: "HWCN", 27: "NDHWC", 28: "FRACTAL_ZZ",
    29: "FRACTAL_NZ", 30: "NCDHW", 31: "DHWCN", 32: "NDC1HWC0", 33: "FRACTAL_Z_3D", 34: "CN", 35: "NC",
    40: "RESERVED",
}


@cache
def dump_data_class() -> type:
    """The ``DumpData`` message class (built once per process from the table above)."""
    return message_class(PACKAGE, _MESSAGES, "DumpData")


def numpy_dtype(code: int) -> np.dtype | None:
    """The numpy dtype bytes of this code are stored as (bfloat16: uint16, widened by the reader)."""
    entry = DATA_TYPES.get(code)
    if entry is None:
        return None
    return np.dtype(np.uint16) if entry[0] == "bfloat16" else np.dtype(entry[0])


def format_name(code: int) -> str:
    return FORMATS.get(code, f"format {code}")
