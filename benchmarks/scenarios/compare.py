"""Compare the dumps of one scenario the way msaccucmp does and write the result CSV.

Rows are built from the files on disk (not from memory), so the CSV is exactly what comparing the
dumped directories gives. Input rows are compared with the golden tensor that feeds the fused
op; output rows with the golden output of its last golden op; target-only ops (GroundTruth ``*``)
get no metrics, nor do weights a fused op reads as inputs (no golden dump holds them); the network
outputs are appended as ``Node_Output`` rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from advisor.compare import ComparedTensor, write_result_csv
from benchmarks.scenarios.dumps import DumpManifest
from benchmarks.scenarios.emulation import TargetPlan, TargetRun


def compared_tensors(plan: TargetPlan, run: TargetRun, manifest: DumpManifest) -> list[ComparedTensor]:
    rows: list[ComparedTensor] = []
    for op in plan.ops:
        for io, records in (("input", run.inputs[op.name]), ("output", run.outputs[op.name])):
            for slot, record in enumerate(records):
                # A weight read as an input (a fused LayerNorm's gamma) has no golden dump: one-sided row.
                source = manifest.golden.get(record.tensor) if op.golden_ops else None
                golden = np.load(source) if source is not None else None
                rows.append(ComparedTensor(
                    index=op.index, op_type=op.op_type, npu_op=op.name, golden_ops=op.ground_truth,
                    tensor_index=f"{op.name}:{io}:{slot}",
                    npu=np.load(manifest.target[(op.name, io, slot)]), golden=golden,
                    npu_dtype=record.ge_dtype, address=manifest.addresses[(op.name, io, slot)]))
    last_index = len(plan.ops)
    for slot, (tensor, record) in enumerate(run.final.items()):
        producer = next(op for op in reversed(plan.ops) if op.output == tensor)
        rows.append(ComparedTensor(
            index=last_index, op_type=None, npu_op="Node_Output",
            golden_ops=manifest.golden[tensor].name, tensor_index=f"Node_Output:output:{slot}",
            npu=np.load(manifest.target[(producer.name, "output", 0)]),
            golden=np.load(manifest.golden[tensor]), npu_dtype=record.ge_dtype, shape=(),
            address=manifest.addresses[(producer.name, "output", 0)]))
    return rows


def write_result(path: Path, plan: TargetPlan, run: TargetRun, manifest: DumpManifest) -> Path:
    return write_result_csv(compared_tensors(plan, run, manifest), path)
