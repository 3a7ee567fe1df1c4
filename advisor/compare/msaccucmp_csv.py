"""Write an msaccucmp vector-compare result CSV from compared tensor pairs (docs/formats.md).

The layout written is the common one, with a single ``Address`` (the target's device address) and
the ``OverFlow`` column::

    Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,
    CosineSimilarity,...,MeanRelativeError,CompareFailReason

- One row per target tensor; all tensors of one target op share its ``Index``; rows are sorted by it
  (stably, so an op's inputs stay before its outputs).
- Numbers carry 6 decimals, ``StandardDeviation``'s ``(mean;std),(mean;std)`` 3 (msaccucmp's ``%.3f``);
  missing values are the literal ``NaN``; ``inf`` is kept; ``CompareFailReason`` is empty when there
  is no reason (msaccucmp writes the comma-joined reasons). Checked against msaccucmp 26.2.0 run on
  the CPU (see benchmarks/scenarios/msaccucmp_run.py).
- ``OverFlow`` is ``YES``/``NO`` for float16 target tensors (``YES`` when max|x| >= 65504, an infinity
  included) and ``NaN`` for any other dtype.
- A row whose target op exists only on the target side has ``GroundTruth`` ``*`` and no metrics; a
  row with only a golden tensor has ``NPUDump`` ``*``.
- The network-output rows (``NPUDump`` ``Node_Output``, ``OpType`` NaN, ``Shape`` ``[]``) are written
  like any other row: give them the largest ``Index`` so they come last.

Two ways in: :func:`write_result_csv` takes :class:`ComparedTensor` (arrays in memory) and computes
everything; a streaming comparer computes :func:`pair_metrics` in workers (only the
formatted cells travel back), labels each row with :class:`RowLabels`, and writes the
:func:`format_row` cells with :func:`write_result_rows`. Both produce the same bytes.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from ..dtypes import ge_dtype_name
from ..ownfiles import writing
from ..tensors.metrics import METRIC_NAMES, TensorComparison, compare_tensors, format_number, format_standard_deviation
from ..tensors.overflow import overflow_flag
from ..tensors.pairing import RowLabels

HEADER: tuple[str, ...] = (
    "Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex",
    "Shape", "OverFlow", *METRIC_NAMES, "CompareFailReason",
)

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
        return None if self.npu is None else ge_dtype_name(str(self.npu.dtype))

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


@dataclass(frozen=True)
class PairMetrics:
    """The metric cells of one compared pair, as msaccucmp prints them, and why any failed.

    Small and picklable: what a worker sends back instead of the tensors."""

    cells: tuple[str, ...]          # one cell per METRIC_NAMES entry
    reasons: tuple[str, ...] = ()


#: The metric cells of a row that has only one side.
MISSING_METRICS: tuple[str, ...] = ("NaN",) * len(METRIC_NAMES)


#: msaccucmp prints the StandardDeviation cell with 3 decimals (``%.3f``), every other metric with 6,
#: and writes a mean or std below STD_ZERO in magnitude as 0 (never ``-0.000``).
STD_DECIMALS = 3
STD_ZERO = 1e-3


def _stat(pair: tuple[float, float]) -> tuple[float, float]:
    return tuple(0.0 if abs(v) < STD_ZERO else v for v in pair)


def pair_metrics(npu: np.ndarray, golden: np.ndarray, compiled: bool | None = None) -> PairMetrics:
    """Every metric of one target/golden pair, formatted as msaccucmp 26 does (6 decimals, ``NaN``,
    ``inf``; ``StandardDeviation`` with 3; KL on floored distributions); ``compiled``: the pass
    (None: tensors/kernel.use_for)."""
    return cells_of(compare_tensors(npu, golden, compiled=compiled))


def cells_of(comparison: TensorComparison) -> PairMetrics:
    """The formatted cells of one pair's metrics (see :func:`pair_metrics`)."""
    std = format_standard_deviation(_stat(comparison.npu_stats), _stat(comparison.golden_stats), STD_DECIMALS)
    cells = tuple(std if name == "StandardDeviation" else format_number(cell)
                  for name, cell in comparison.as_dict().items())
    return PairMetrics(cells, tuple(comparison.fail_reasons))


def format_row(labels: RowLabels, metrics: PairMetrics | None) -> list[str]:
    """The CSV cells of one row; ``metrics`` is None when a side is missing (no metrics)."""
    reasons = [labels.fail_reason] if labels.fail_reason else []
    if metrics is not None:
        reasons.extend(metrics.reasons)
        cells = list(metrics.cells)
    else:
        if not reasons:
            reasons.append("no golden data" if not labels.has_golden else "no NPU data")
        cells = list(MISSING_METRICS)
    return [
        str(int(labels.index)),
        labels.op_type if labels.op_type else "NaN",
        labels.npu_op,
        labels.npu_dtype or "NaN",
        labels.address or "NaN",
        labels.golden_ops,
        labels.golden_dtype or "NaN",
        labels.tensor_index,
        format_shape(labels.shape),
        labels.overflow,
        *cells,
        ",".join(reasons),         # msaccucmp joins the reasons: an empty cell when there is none
    ]


def result_row(tensor: ComparedTensor) -> list[str]:
    """The CSV cells of one compared tensor (metrics computed here)."""
    npu_dtype = tensor.resolved_npu_dtype()
    labels = RowLabels(
        index=tensor.index, op_type=tensor.op_type, npu_op=tensor.npu_op, golden_ops=tensor.golden_ops,
        tensor_index=tensor.tensor_index, npu_dtype=npu_dtype, golden_dtype=tensor.resolved_golden_dtype(),
        shape=tensor.resolved_shape(), overflow=overflow_flag(tensor.npu, npu_dtype), address=tensor.address,
        fail_reason=tensor.fail_reason, has_npu=tensor.npu is not None, has_golden=tensor.golden is not None)
    both = tensor.npu is not None and tensor.golden is not None
    return format_row(labels, pair_metrics(tensor.npu, tensor.golden) if both else None)


def write_result_rows(rows: Iterable[list[str]], path: str | Path) -> Path:
    """Write already formatted rows (in the order given) under the msaccucmp header.

    Written to a new temporary file beside ``path`` (never through a link planted there) and renamed,
    so a reader never sees half a CSV; what a killed run left is collected (advisor/ownfiles.py)."""
    path = Path(path)
    with writing(path) as raw:
        handle = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows)
        handle.flush()
        handle.detach()
    return path


def write_result_csv(tensors: Iterable[ComparedTensor], path: str | Path) -> Path:
    """Compute every row and write the CSV to ``path`` (rows sorted by ``Index``, stably)."""
    ordered = sorted(tensors, key=lambda t: t.index)
    return write_result_rows((result_row(tensor) for tensor in ordered), path)


def result_file_name(when: datetime) -> str:
    """``result_<YYYYmmddHHMMSS>.csv`` for the compare time ``when``."""
    return f"result_{when:%Y%m%d%H%M%S}.csv"
