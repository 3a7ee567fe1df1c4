"""Pair target dumps with golden dumps: the rows of the comparison, before any metric.

Nothing is paired by guess. Every row says how its golden tensor was found (``RowLabels.paired_by``,
counted in :attr:`Plan.coverage`), or it is *not compared*: a one-sided row, as the vendor writes
one, with the reason in ``CompareFailReason``. How rows pair, for Ascend target dumps (``npu``
naming) against TF-style golden dumps (:mod:`lineage_plan`):

- an output slot of a target op pairs with the golden tensor :mod:`fusion` links it to (the final
  output of the golden group or pattern the op computes): ``name``, ``graph``, ``pattern``,
  ``fusion-info``, ``map`` or ``order``;
- an input slot holds the bytes its producer wrote (:mod:`lineage`), so it pairs with whatever that
  output pairs with (``lineage``), carried through ops a compiler inserts that keep their input's
  meaning (knowledge/ops/pass_through.yaml: Cast, TransData... GroundTruth ``*``); an input no
  dumped op produced pairs with the golden tensor the graph says the op reads (``graph``; a weight
  has no golden dump: not compared);
- with ``pair_by_shape`` (opt-in, ``advisor compare --pair-by-shape``) an input nothing else pairs
  takes the latest earlier golden tensor of its shape (``shape``, labelled in the row);
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

from ..dtypes import ge_dtype_name
from .fusion import FusionMap, TargetOpInfo, build_fusion_map
from .fusion_sources import FusionSources
from .inventory import DumpFile, DumpFolder
from .lineage import TensorPrint
from .lineage_plan import LineagePlanner
from .op_map import OpMap, pairing_keys
from .plan import TARGET_ONLY, Plan, PlannedRow, RowLabels, TargetOp, digest, golden_shapes, target_ops, target_shapes

__all__ = ["TARGET_ONLY", "Plan", "PlannedRow", "RowLabels", "TargetOp", "fusion_map", "golden_order",
           "golden_shapes", "name_partners", "plan_rows", "target_infos", "target_ops", "target_shapes"]

def target_infos(ops: list[TargetOp]) -> list[TargetOpInfo]:
    """What fusion needs of each target op: name, type, first output shape."""
    return [TargetOpInfo(op.name, op.op_type, op.outputs[0].shape if op.outputs else ()) for op in ops]


def golden_order(folder: DumpFolder) -> list[tuple[str, tuple[int, ...]]]:
    """(golden op, first output shape) in dump order."""
    shapes = golden_shapes(folder)
    return [(name, shapes[name]) for name in dict.fromkeys(f.name.op for f in folder.files)]


def fusion_map(golden: DumpFolder, target: DumpFolder, sources: FusionSources | None = None) -> FusionMap:
    """The fusion map of two dump folders (:mod:`fusion`), from ``sources`` or names alone."""
    return build_fusion_map(sources or FusionSources(), target_infos(target_ops(target)), golden_order(golden))


def plan_rows(golden: DumpFolder, target: DumpFolder, prints: dict[str, TensorPrint],
              fusion: FusionMap | None = None, pair_by_shape: bool = False, op_map: OpMap | None = None) -> Plan:
    """Every row of the comparison. ``prints``: fingerprints of the target files by path;
    ``op_map``: the golden names of the target's ops and arguments (pairing by names)."""
    ops = target_ops(target)
    if target.naming == "npu" and golden.naming == "golden":
        fusion = fusion or fusion_map(golden, target)
        return LineagePlanner(golden, ops, prints, fusion, pair_by_shape).plan()
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
        planner = LineagePlanner(golden, ops, {}, fusion or fusion_map(golden, target))
        for op in ops:
            for slot, dump in enumerate(op.outputs):
                other, _, _ = planner.golden_output(op, slot)
                if other is not None:
                    partners[str(dump.path)] = other
        return partners
    return _partners_by_name(golden, target, op_map)


def _plan_by_names(golden: DumpFolder, target: DumpFolder, ops: list[TargetOp],
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
                has_golden=other is not None, paired_by="name" if other is not None else "",
                fail_reason="not compared: no golden tensor of that name" if other is None and ground_truth != "*"
                else "")
            key = (*digest(dump, prints), str(other.path)) if other is not None else None
            rows.append(PlannedRow(labels, dump, other, key))
    mapped = " and the op map" if op_map is not None else ""
    return Plan(rows, f"by name{mapped} ({target.naming} target against {golden.naming} golden dumps)")

