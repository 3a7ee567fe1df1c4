"""What the emulated build writes besides the dumps: its graph and its fusion report.

- ``ge_proto_00000001_graph_1_Build.txt``: the target graph as GE dumps it after the build
  (``DUMP_GE_GRAPH``), protobuf text: one ``op`` per target op with its inputs as ``"src:slot"``,
  ``_datadump_original_op_names`` (the golden ops it computes; an empty list for an op the compiler
  inserted), a ``Const`` op per weight a fused op reads as an input, and the ``NetOutput``.
- ``fusion_result.json``: the fusion passes that rewrote the graph, in ATC's current layout (a list
  of sessions with ``graph_fusion`` / ``ub_fusion`` maps of pass -> match and effect counts).
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.graph_load import op_text, write_dump
from benchmarks.scenarios.emulation import TargetPlan

GRAPH_FILE = "ge_proto_00000001_graph_1_Build.txt"
FUSION_FILE = "fusion_result.json"
#: The ATC pass behind each fusion of ``emulation.FUSIONS``.
PASSES = {"LayerNorm": "LayerNormONNXFusionPass"}


def write_target_graph(directory: Path, plan: TargetPlan, name: str) -> Path:
    """The target graph of ``plan`` as a Build-stage GE dump; returns its path."""
    producer: dict[str, str] = {}
    blocks = []
    for op in plan.ops:
        for weight in op.weights:
            if weight not in producer:
                producer[weight] = weight
                blocks.append(op_text(weight, "Const", op_id=len(blocks)))
        inputs = [f"{producer[t]}:0" for t in op.inputs] + [f"{producer[w]}:0" for w in op.weights]
        blocks.append(op_text(op.name, op.op_type, inputs, op.golden_ops, PASSES.get(op.op_type, ""),
                              op_id=len(blocks), inserted=not op.golden_ops))
        producer[op.output] = op.name
    blocks.append(op_text("Node_Output", "NetOutput", [f"{producer[t]}:0" for t in plan.outputs], op_id=len(blocks)))
    path = directory / GRAPH_FILE
    write_dump(path, blocks, name)
    return path


def write_fusion_result(directory: Path, plan: TargetPlan) -> Path:
    """How often each fusion pass matched and rewrote the graph."""
    counts: dict[str, int] = {}
    for op in plan.ops:
        if op.op_type in PASSES:
            counts[PASSES[op.op_type]] = counts.get(PASSES[op.op_type], 0) + 1
    session = {"session_and_graph_id": "0_1",
               "graph_fusion": {p: {"match_times": str(n), "effect_times": str(n)} for p, n in counts.items()},
               "ub_fusion": {}}
    path = directory / FUSION_FILE
    path.write_text(json.dumps([session], indent=4) + "\n", encoding="utf-8")
    return path
