"""The rows of a comparison before any metric: their labels, the files they compare, the plan.

:mod:`pairing` decides which golden tensor each target tensor is compared with; these are the types
it hands to ``advisor compare`` (:mod:`advisor.compare`), which computes the metrics and writes the CSV.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .inventory import DumpFile, DumpFolder
from .lineage import TensorPrint

#: ``paired_by`` of the rows of a target-only op (GroundTruth ``*``): no golden side by design.
TARGET_ONLY = "target-only"


@dataclass(frozen=True)
class RowLabels:
    """Everything of a result row except the metrics: which op and tensor, dtypes, shape, flag."""

    index: int
    op_type: str | None               # None -> NaN (Node_Output rows)
    npu_op: str
    golden_ops: str
    tensor_index: str
    npu_dtype: str | None
    golden_dtype: str | None
    shape: tuple[int, ...] | None
    overflow: str = "NaN"             # YES / NO / NaN, see overflow_flag
    address: str | None = None
    fail_reason: str = ""
    has_npu: bool = True
    has_golden: bool = True
    paired_by: str = ""               # how the golden tensor was found ("": not compared)


@dataclass(frozen=True)
class PlannedRow:
    """One row of the comparison: its labels, and the files to compare (None: that side is absent)."""

    labels: RowLabels
    target: DumpFile | None
    golden: DumpFile | None
    pair_key: tuple | None = None      # rows with equal keys compare equal bytes: computed once


@dataclass
class Plan:
    rows: list[PlannedRow]
    pairing: str                        # how rows were paired (for the summary)
    notes: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> Counter[str]:
        """Rows by how they were paired (``""``: not compared; ``target-only``: GroundTruth ``*``)."""
        return Counter(row.labels.paired_by for row in self.rows)

    def pairs(self) -> dict[tuple, PlannedRow]:
        """The distinct comparisons to compute: pair key -> the first row that needs it."""
        unique: dict[tuple, PlannedRow] = {}
        for row in self.rows:
            if row.pair_key is not None:
                unique.setdefault(row.pair_key, row)
        return unique


@dataclass
class TargetOp:
    name: str
    op_type: str | None
    inputs: list[DumpFile]
    outputs: list[DumpFile]


def target_ops(folder: DumpFolder) -> list[TargetOp]:
    """The target ops in execution order with their input and output dumps (first dump of each)."""
    ops: dict[str, TargetOp] = {}
    seen: set[tuple[str, str, str]] = set()
    for dump in folder.files:
        if dump.name.tensor_key in seen:
            continue
        seen.add(dump.name.tensor_key)
        op = ops.setdefault(dump.name.op, TargetOp(dump.name.op, dump.name.op_type, [], []))
        (op.inputs if dump.name.io == "input" else op.outputs).append(dump)
    return list(ops.values())


def target_shapes(ops: list[TargetOp]) -> dict[str, tuple[int, ...]]:
    """Each target op's first output shape (ops without outputs count as shapeless)."""
    return {op.name: op.outputs[0].shape if op.outputs else () for op in ops}


def golden_shapes(folder: DumpFolder) -> dict[str, tuple[int, ...]]:
    """Each golden op's first output shape."""
    shapes: dict[str, tuple[int, ...]] = {}
    for dump in folder.files:
        if dump.name.slot == "0" or dump.name.op not in shapes:
            shapes[dump.name.op] = dump.shape
    return shapes


def digest(dump: DumpFile, prints: dict[str, TensorPrint]) -> tuple:
    """What identifies a target tensor's bytes: dtype, shape and checksums."""
    mark = prints[str(dump.path)]
    return (dump.dtype, dump.shape, mark.crc32, mark.adler32)
