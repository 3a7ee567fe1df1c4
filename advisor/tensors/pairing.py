"""Pair target dumps with golden dumps: the rows of the comparison, before any metric.

For Ascend target dumps (``npu`` naming) against TF-style golden dumps, each target op becomes:

- one row per input slot, compared with the golden tensor that feeds the op: the golden tensor
  of the target op that *produced* the input (found by :mod:`lineage`), carried through
  target-only ops (Cast, TransData: GroundTruth ``*``, no metrics of their own);
- one row per output slot, compared with the output of the last golden op of its group
  (:mod:`fusion`);
- after the last op, one ``Node_Output`` row per network output: each target output no op reads,
  compared with the golden tensor it stands for.

Target and golden dumps with the same naming (two NPU runs, or msprobe against msprobe) pair by
name: the same op, direction and slot. Indexes number the target ops in execution order.

Row dtypes: the target's GE name from the array (``DT_FLOAT16``...), except that bfloat16 tensors
are stored as float32, so a float32 tensor holding only bfloat16 values is labelled ``DT_BF16``
when the network computes in bfloat16 there: a Cast from float32, or an op reading a bfloat16
input (or only integers). A Data op's output is what the user fed: ``DT_FLOAT``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalogs import load_catalog
from .dtypes import ge_dtype_name
from .dump_names import DumpName
from .fusion import FusionMap, fuse_by_names
from .inventory import DumpFile, DumpFolder
from .lineage import TensorPrint
from .op_map import OpMap, pairing_keys

# Op types that stand for a network input (knowledge/ops/network_input.yaml).
INPUT_OP_TYPES = frozenset(load_catalog("network_input"))


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

    def pairs(self) -> dict[tuple, PlannedRow]:
        """The distinct comparisons to compute: pair key -> the first row that needs it."""
        unique: dict[tuple, PlannedRow] = {}
        for row in self.rows:
            if row.pair_key is not None:
                unique.setdefault(row.pair_key, row)
        return unique


@dataclass
class _TargetOp:
    name: str
    op_type: str | None
    inputs: list[DumpFile]
    outputs: list[DumpFile]


def target_ops(folder: DumpFolder) -> list[_TargetOp]:
    """The target ops in execution order with their input and output dumps (first dump of each)."""
    ops: dict[str, _TargetOp] = {}
    seen: set[tuple[str, str, str]] = set()
    for dump in folder.files:
        if dump.name.tensor_key in seen:
            continue
        seen.add(dump.name.tensor_key)
        op = ops.setdefault(dump.name.op, _TargetOp(dump.name.op, dump.name.op_type, [], []))
        (op.inputs if dump.name.io == "input" else op.outputs).append(dump)
    return list(ops.values())


def target_shapes(ops: list[_TargetOp]) -> dict[str, tuple[int, ...]]:
    """Each target op's first output shape (ops without outputs count as shapeless)."""
    return {op.name: op.outputs[0].shape if op.outputs else () for op in ops}


def golden_shapes(folder: DumpFolder) -> dict[str, tuple[int, ...]]:
    """Each golden op's first output shape."""
    shapes: dict[str, tuple[int, ...]] = {}
    for dump in folder.files:
        if dump.name.slot == "0" or dump.name.op not in shapes:
            shapes[dump.name.op] = dump.shape
    return shapes


def plan_rows(golden: DumpFolder, target: DumpFolder, prints: dict[str, TensorPrint],
              fusion: FusionMap | None = None, op_map: OpMap | None = None) -> Plan:
    """Every row of the comparison. ``prints``: fingerprints of the target files by path;
    ``op_map``: the golden names of the target's ops and arguments (pairing by names)."""
    ops = target_ops(target)
    if target.naming == "npu" and golden.naming == "golden":
        return _LineagePlanner(golden, ops, prints, fusion).plan()
    return _plan_by_names(golden, target, ops, prints, op_map)


def _partners_by_name(golden: DumpFolder, target: DumpFolder, op_map: OpMap | None) -> dict[str, DumpFile]:
    """Target path -> golden file with the same pairing key (op_map.pairing_keys)."""
    golden_keys = pairing_keys([f.name for f in golden.files], None)
    by_key: dict[tuple, DumpFile] = {}
    for key, dump in zip(golden_keys, golden.files, strict=True):
        by_key.setdefault(key, dump)
    target_keys = pairing_keys([f.name for f in target.files], op_map)
    partners = {}
    seen: set[tuple[str, str, str]] = set()      # an op dumped several times: its first dump (target_ops)
    for key, dump in zip(target_keys, target.files, strict=True):
        other = by_key.get(key)
        if other is not None and dump.name.tensor_key not in seen:
            partners[str(dump.path)] = other
        seen.add(dump.name.tensor_key)
    return partners


def name_partners(golden: DumpFolder, target: DumpFolder, fusion: FusionMap | None = None,
                  op_map: OpMap | None = None) -> dict[str, DumpFile]:
    """The golden tensor each target dump is compared with, where names alone say it (no
    fingerprints): an op's outputs when the target is Ascend against TF-style golden dumps, every
    tensor when both sides use the same naming. Target path -> golden file; :func:`plan_rows` pairs
    these the same way, so their comparisons can be made while the target dump is first read."""
    ops = target_ops(target)
    partners: dict[str, DumpFile] = {}
    if target.naming == "npu" and golden.naming == "golden":
        planner = _LineagePlanner(golden, ops, {}, fusion)
        for op in ops:
            members = planner.members(op.name)
            for slot, dump in enumerate(op.outputs):
                other = planner.golden_output(members, slot)
                if other is not None:
                    partners[str(dump.path)] = other
        return partners
    return _partners_by_name(golden, target, op_map)


def _digest(dump: DumpFile, prints: dict[str, TensorPrint]) -> tuple:
    mark = prints[str(dump.path)]
    return (dump.dtype, dump.shape, mark.crc32, mark.adler32)


class _LineagePlanner:
    """Ascend target dumps against TF-style golden dumps (module docstring)."""

    def __init__(self, golden: DumpFolder, ops: list[_TargetOp], prints: dict[str, TensorPrint],
                 fusion: FusionMap | None) -> None:
        self.ops, self.prints = ops, prints
        self.golden_files = golden.by_key()
        self.golden_order = list(dict.fromkeys(f.name.op for f in golden.files))
        self.golden_rank = {name: i for i, name in enumerate(self.golden_order)}
        if fusion is None:
            shapes = golden_shapes(golden)
            fusion = fuse_by_names([(n, shapes[n]) for n in self.golden_order], target_shapes(ops))
        self.fusion = fusion
        self.notes: list[str] = []

    def members(self, op: str) -> list[str]:
        if op in self.fusion.groups:
            return self.fusion.groups[op]
        return [op] if op in self.golden_rank else []

    def golden_output(self, members: list[str], slot: int) -> DumpFile | None:
        return self.golden_files.get((members[-1], "output", str(slot))) if members else None

    def plan(self) -> Plan:
        rows: list[PlannedRow] = []
        producer: dict[tuple, tuple[str, int]] = {}        # digest -> latest (op, slot) writing it
        stands_for: dict[tuple[str, int], DumpFile | None] = {}   # target output -> golden tensor
        dtype_of: dict[tuple[str, int], str] = {}
        consumed: set[tuple[str, int]] = set()
        sinks: list[tuple[str, int, DumpFile]] = []
        for index, op in enumerate(self.ops):
            members = self.members(op.name)
            ground_truth = ",".join(members) if members else "*"
            fed: list[DumpFile | None] = []
            in_dtypes: list[str] = []
            for slot, dump in enumerate(op.inputs):
                source = producer.get(_digest(dump, self.prints))
                if source is not None:
                    consumed.add(source)
                    golden = stands_for[source]
                    dtype = dtype_of[source]
                else:
                    golden = self._unresolved_input(op.name, members, slot, dump)
                    dtype = self._dtype(dump, op, [])
                fed.append(golden)
                in_dtypes.append(dtype)
                rows.append(self._row(index, op, ground_truth, dump, golden if members else None, dtype))
            for slot, dump in enumerate(op.outputs):
                if members:
                    golden = self.golden_output(members, slot)
                else:  # a target-only op passes its input's meaning on
                    golden = fed[slot] if slot < len(fed) else (fed[0] if fed else None)
                dtype = self._dtype(dump, op, in_dtypes)
                key = (op.name, slot)
                stands_for[key], dtype_of[key] = golden, dtype
                producer[_digest(dump, self.prints)] = key
                sinks.append((op.name, slot, dump))
                rows.append(self._row(index, op, ground_truth, dump, golden if members else None, dtype))
        rows.extend(self._network_outputs(len(self.ops), sinks, consumed, stands_for, dtype_of))
        return Plan(rows, f"lineage + fusion from {self.fusion.source}", self.notes)

    def _unresolved_input(self, op: str, members: list[str], slot: int, dump: DumpFile) -> DumpFile | None:
        """An input no dumped op produced (the network input when no Data op was dumped): the
        graph's edge when there is one, else the latest golden tensor of the same shape that was
        dumped before the op's first golden op."""
        if not members:
            return None
        edges = self.fusion.inputs.get(op)
        if edges and slot < len(edges):
            source, out = edges[slot]
            return self.golden_files.get((source, "output", str(out)))
        first = min(self.golden_rank.get(m, len(self.golden_rank)) for m in members)
        for name in reversed(self.golden_order[:first]):
            candidate = self.golden_files.get((name, "output", "0"))
            if candidate is not None and candidate.shape == dump.shape:
                self.notes.append(f"{op}:input:{slot}: no dumped op produced it; compared with {name}, the "
                                  "latest earlier golden tensor of its shape (give --graph to be sure)")
                return candidate
        return None

    def _dtype(self, dump: DumpFile, op: _TargetOp, in_dtypes: list[str]) -> str:
        name = ge_dtype_name(dump.dtype)
        if dump.dtype != "float32" or not self.prints[str(dump.path)].bf16_values:
            return name
        op_type = (op.op_type or "").lower()
        if op_type in INPUT_OP_TYPES:
            return name
        if op_type == "cast":
            return "DT_BF16" if "DT_FLOAT" in in_dtypes else name
        floats = [d for d in in_dtypes if d in ("DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_DOUBLE")]
        return "DT_BF16" if not floats or "DT_BF16" in floats else name

    def _row(self, index: int, op: _TargetOp, ground_truth: str, dump: DumpFile, golden: DumpFile | None,
             dtype: str, *, npu_op: str | None = None, tensor_index: str | None = None,
             shape: tuple[int, ...] | None = None) -> PlannedRow:
        name: DumpName = dump.name
        mark = self.prints[str(dump.path)]
        labels = RowLabels(
            index=index, op_type=op.op_type if npu_op is None else None, npu_op=npu_op or op.name,
            golden_ops=ground_truth, tensor_index=tensor_index or f"{op.name}:{name.io}:{name.slot}",
            npu_dtype=dtype, golden_dtype=golden.dtype if golden is not None else None,
            shape=dump.shape if shape is None else shape,
            overflow=mark.overflow if dtype == "DT_FLOAT16" else "NaN", has_golden=golden is not None)
        key = (*_digest(dump, self.prints), str(golden.path)) if golden is not None else None
        return PlannedRow(labels, dump, golden, key)

    def _network_outputs(self, index: int, sinks: list[tuple[str, int, DumpFile]], consumed: set,
                         stands_for: dict, dtype_of: dict) -> list[PlannedRow]:
        """``Node_Output`` rows: target outputs no op reads, in the graph's output order if known."""
        finals = [(op, slot, dump) for op, slot, dump in sinks
                  if (op, slot) not in consumed and stands_for.get((op, slot)) is not None]
        if self.fusion.outputs:
            order = {(name, str(out)): i for i, (name, out) in enumerate(self.fusion.outputs)}

            def rank(item: tuple[str, int, DumpFile]) -> int:
                golden = stands_for[(item[0], item[1])].name
                return order.get((golden.op, golden.slot), len(order))

            finals = sorted(finals, key=rank)
        by_op = {op.name: op for op in self.ops}
        rows = []
        for k, (op, slot, dump) in enumerate(finals):
            golden = stands_for[(op, slot)]
            rows.append(self._row(index, by_op[op], golden.path.name, dump, golden, dtype_of[(op, slot)],
                                  npu_op="Node_Output", tensor_index=f"Node_Output:output:{k}", shape=()))
        return rows


def _plan_by_names(golden: DumpFolder, target: DumpFolder, ops: list[_TargetOp],
                   prints: dict[str, TensorPrint], op_map: OpMap | None) -> Plan:
    """Same naming on both sides: the same (op, direction, slot) is the same tensor - after the
    op map, and for ``aten`` dumps the k-th execution of an op is its k-th execution on the other side."""
    partners = _partners_by_name(golden, target, op_map)
    rows = []
    for index, op in enumerate(ops):
        tensors = [*op.inputs, *op.outputs]
        ground_truth = next((partners[str(d.path)].name.op for d in tensors if str(d.path) in partners), "*")
        for dump in tensors:
            other = partners.get(str(dump.path))
            dtype = ge_dtype_name(dump.dtype)
            labels = RowLabels(
                index=index, op_type=op.op_type, npu_op=op.name, golden_ops=ground_truth,
                tensor_index=f"{op.name}:{dump.name.io}:{dump.name.slot}", npu_dtype=dtype,
                golden_dtype=other.dtype if other is not None else None, shape=dump.shape,
                overflow=prints[str(dump.path)].overflow if dtype == "DT_FLOAT16" else "NaN",
                has_golden=other is not None)
            key = (*_digest(dump, prints), str(other.path)) if other is not None else None
            rows.append(PlannedRow(labels, dump, other, key))
    mapped = " and the op map" if op_map is not None else ""
    return Plan(rows, f"by name{mapped} ({target.naming} target against {golden.naming} golden dumps)")
