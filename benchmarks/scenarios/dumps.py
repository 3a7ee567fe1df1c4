"""Write golden and target dumps with the vendor file names (FORMATS.md §1).

- Target (NPU), after conversion to numpy:
  ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{n}.npy``
- Golden (TF-style npy): ``{op_name}.{output_index}.{timestamp}.npy``

``.``, ``/``, ``\\`` and spaces in op names become ``_``. Timestamps are microseconds derived from the
scenario clock, so names are deterministic. Device addresses are assigned per tensor in production
order (an op's input has the address of the tensor it reads).
"""

from __future__ import annotations

import calendar
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import torch

from benchmarks.scenarios.emulation import TargetPlan, TargetRun
from benchmarks.scenarios.graph import GoldenGraph

_UNSAFE = re.compile(r"[./\\ ]")
_ADDRESS_BASE = 0x12C0C0000000
_STREAM_ID = 0
_FIRST_TASK_ID = 2


def safe_name(op_name: str) -> str:
    """An op name as it appears in a dump file name."""
    return _UNSAFE.sub("_", op_name)


def npu_dump_name(op_type: str, op_name: str, task_id: int, stream_id: int, timestamp: int,
                  io: str, slot: int) -> str:
    return f"{op_type}.{safe_name(op_name)}.{task_id}.{stream_id}.{timestamp}.{io}.{slot}.npy"


def golden_dump_name(op_name: str, output_index: int, timestamp: int) -> str:
    return f"{safe_name(op_name)}.{output_index}.{timestamp}.npy"


@dataclass(frozen=True)
class ScenarioClock:
    """Deterministic times for a scenario: when the runs happened and when they were compared."""

    seed: int
    name: str

    @property
    def compare_time(self) -> datetime:
        offset = zlib.crc32(self.name.encode("utf-8")) % 86400
        return datetime(2024, 5, 6, 0, 0, 0) + timedelta(days=self.seed % 300, seconds=offset)

    def run_micros(self, side: str) -> int:
        """Start of the golden or target run, in microseconds since the epoch (UTC)."""
        start = self.compare_time - timedelta(minutes=12 if side == "golden" else 7)
        return calendar.timegm(start.timetuple()) * 1_000_000 + (zlib.crc32(side.encode()) % 997)


@dataclass
class DumpManifest:
    """Where every dumped tensor went."""

    golden: dict[str, Path] = field(default_factory=dict)                   # tensor -> file
    target: dict[tuple[str, str, int], Path] = field(default_factory=dict)  # (op, io, n) -> file
    addresses: dict[tuple[str, str, int], str] = field(default_factory=dict)


def write_golden(directory: Path, graph: GoldenGraph, golden: dict[str, torch.Tensor],
                 clock: ScenarioClock) -> dict[str, Path]:
    """One file per golden tensor (graph inputs first, then every op output)."""
    directory.mkdir(parents=True, exist_ok=True)
    start = clock.run_micros("golden")
    files: dict[str, Path] = {}
    for step, tensor in enumerate([*graph.inputs, *(op.name for op in graph.ops)]):
        path = directory / golden_dump_name(tensor, 0, start + 41 * step)
        np.save(path, golden[tensor].detach().cpu().numpy())
        files[tensor] = path
    return files


def write_target(directory: Path, plan: TargetPlan, run: TargetRun, clock: ScenarioClock,
                 manifest: DumpManifest) -> None:
    """Every target op's inputs and outputs, with device addresses."""
    directory.mkdir(parents=True, exist_ok=True)
    start = clock.run_micros("target")
    tensor_address: dict[str, int] = {}
    next_free = _ADDRESS_BASE
    for op in plan.ops:
        timestamp = start + 97 * op.index
        task_id = _FIRST_TASK_ID + op.index
        for io, records in (("input", run.inputs[op.name]), ("output", run.outputs[op.name])):
            for slot, record in enumerate(records):
                if io == "output":
                    tensor_address[record.tensor] = next_free
                    next_free += -(-record.value.nbytes // 512) * 512 + 512
                path = directory / npu_dump_name(op.op_type, op.name, task_id, _STREAM_ID, timestamp,
                                                 io, slot)
                np.save(path, record.value)
                manifest.target[(op.name, io, slot)] = path
                manifest.addresses[(op.name, io, slot)] = hex(tensor_address.get(record.tensor, 0))
