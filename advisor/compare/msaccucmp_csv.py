"""Write an msaccucmp vector-compare result CSV from compared tensor pairs (FORMATS.md §1).

The layout written is the common one, with a single ``Address`` (the target's device address) and
the ``OverFlow`` column::

    Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,
    CosineSimilarity,...,MeanRelativeError,CompareFailReason

- One row per target tensor; all tensors of one target op share its ``Index``; rows are sorted by it
  (stably, so an op's inputs stay before its outputs).
- Numbers carry 6 decimals; missing values are the literal ``NaN``; ``inf`` is kept.
- ``OverFlow`` is ``YES``/``NO`` for float16 target tensors (``YES`` when max|x| >= 65504, an infinity
  included) and ``NaN`` for any other dtype.
- A row whose target op exists only on the target side has ``GroundTruth`` ``*`` and no metrics; a
  row with only a golden tensor has ``NPUDump`` ``*``.
- The network-output rows (``NPUDump`` ``Node_Output``, ``OpType`` NaN, ``Shape`` ``[]``) are written
  like any other row: give them the largest ``Index`` so they come last.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from advisor.evidence.metrics import METRIC_NAMES, compare_tensors, format_number

HEADER: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex",
    "Shape", "OverFlow", *METRIC_NAMES, "CompareFailReason",
)

#: Largest finite float16 value: a float16 tensor reaching it has overflowed.
FP16_MAX: float = 65504.0

_NUMPY_TO_GE_DTYPE = {
    "float16": "DT_FLOAT16", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "bfloat16": "DT_BF16",
    "int8": "DT_INT8", "uint8": "DT_UINT8", "int16": "DT_INT16", "int32": "DT_INT32",
    "int64": "DT_INT64", "bool": "DT_BOOL",
}


@dataclass
class ComparedTensor:
    """One target tensor, the golden tensor it is compared with, and how to label the row.

    ``npu``/``golden`` may be None for a side that does not exist (``*``). ``npu_dtype`` defaults to
    the GE name of the target array's dtype (``DT_FLOAT16``...), ``golden_dtype`` to the numpy name
    of the golden array's dtype; pass them explicitly when the array dtype differs from the device
    dtype (bfloat16 dumps are usually stored as float32).
    """

    index: int
    op_type: str | None               # None -> NaN (Node_Output rows)
    npu_op: str                       # NPUDump
    golden_ops: str                   # GroundTruth: golden op names comma-joined, or "*"
    tensor_index: str                 # "<npu op>:<input|output>:<n>"
    npu: np.ndarray | None
    golden: np.ndarray | None
    npu_dtype: str | None = None
    golden_dtype: str | None = None
    address: str | None = None
    shape: tuple[int, ...] | None = None   # default: the target (else golden) array's shape
    fail_reason: str = ""

    def resolved_npu_dtype(self) -> str | None:
        if self.npu_dtype is not None:
            return self.npu_dtype
        if self.npu is None:
            return None
        name = str(self.npu.dtype)
        return _NUMPY_TO_GE_DTYPE.get(name, f"DT_{name.upper()}")

    def resolved_golden_dtype(self) -> str | None:
        if self.golden_dtype is not None:
            return self.golden_dtype
        return None if self.golden is None else str(self.golden.dtype)

    def resolved_shape(self) -> tuple[int, ...] | None:
        if self.shape is not None:
            return tuple(self.shape)
        source = self.npu if self.npu is not None else self.golden
        return None if source is None else tuple(source.shape)


def format_shape(shape: tuple[int, ...] | None) -> str:
    """``[1,3,224,224]``; ``[]`` for a scalar or a Node_Output row; ``NaN`` when unknown."""
    if shape is None:
        return "NaN"
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def overflow_flag(npu: np.ndarray | None, npu_dtype: str | None) -> str:
    """``YES``/``NO`` for a float16 target tensor, ``NaN`` otherwise."""
    if npu is None or npu_dtype != "DT_FLOAT16":
        return "NaN"
    magnitude = np.abs(np.asarray(npu, dtype=np.float64))
    finite_or_inf = magnitude[~np.isnan(magnitude)]
    return "YES" if finite_or_inf.size and float(finite_or_inf.max()) >= FP16_MAX else "NO"


def result_row(tensor: ComparedTensor) -> list[str]:
    """The CSV cells of one compared tensor (metrics computed here)."""
    npu_dtype = tensor.resolved_npu_dtype()
    golden_dtype = tensor.resolved_golden_dtype()
    reasons = [tensor.fail_reason] if tensor.fail_reason else []
    if tensor.npu is not None and tensor.golden is not None:
        comparison = compare_tensors(tensor.npu, tensor.golden)
        reasons.extend(comparison.fail_reasons)
        metrics = [cell if name == "StandardDeviation" else format_number(cell)
                   for name, cell in comparison.as_dict().items()]
    else:
        if not reasons:
            reasons.append("no golden data" if tensor.golden is None else "no NPU data")
        metrics = ["NaN"] * len(METRIC_NAMES)
    return [
        str(int(tensor.index)),
        tensor.op_type if tensor.op_type else "NaN",
        tensor.npu_op,
        npu_dtype or "NaN",
        tensor.address or "NaN",
        tensor.golden_ops,
        golden_dtype or "NaN",
        tensor.tensor_index,
        format_shape(tensor.resolved_shape()),
        overflow_flag(tensor.npu, npu_dtype),
        *metrics,
        ",".join(reasons) if reasons else "NaN",
    ]


def write_result_csv(tensors: Iterable[ComparedTensor], path: str | Path) -> Path:
    """Compute every row and write the CSV to ``path`` (rows sorted by ``Index``, stably)."""
    ordered = sorted(tensors, key=lambda t: t.index)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(HEADER)
        for tensor in ordered:
            writer.writerow(result_row(tensor))
    return path


def result_file_name(when: datetime) -> str:
    """``result_<YYYYmmddHHMMSS>.csv`` for the compare time ``when``."""
    return f"result_{when:%Y%m%d%H%M%S}.csv"
