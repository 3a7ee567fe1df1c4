"""What the checks need, gathered once, and one line for each thing that is missing.

Replays need the ONNX model and the dumps; the emulation also needs the golden network inputs, the
golden outputs and a model that reproduces them (else it is not the model the dumps came from).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..graph.weights import channel_axes
from ..tensors.metrics import cosine_similarity
from .checks import CpuChecks, first_line
from .emulate import Emulator
from .model import Verification
from .numerics import target_numerics
from .onnxgraph import OnnxModel, groups_of
from .qdq import QuantPlan

if TYPE_CHECKING:
    from . import VerifyInputs

EVERYTHING = "the diagnosis on the CPU (replay, emulation, remedy steps)"


def prepare(inputs: VerifyInputs, verification: Verification) -> CpuChecks | None:
    """The checks of one run, or None (with the reason said) when nothing can be checked."""
    if inputs.model is None or inputs.graph is None or inputs.graph.format != "onnx":
        given = f"{inputs.graph.format} graph" if inputs.graph is not None else "no graph"
        verification.skip(EVERYTHING, f"--verify needs --graph model.onnx, the float model the golden run used "
                                      f"({given} given)")
        return None
    if inputs.dumps is None:
        verification.skip(EVERYTHING, "--verify needs --dumps GOLDEN_DIR:TARGET_DIR (the tensors to replay and "
                                      "the golden inputs to emulate from)")
        return None
    try:
        import onnxruntime  # noqa: F401 - a dependency; its absence is said, not raised
    except ImportError:
        verification.skip(EVERYTHING, "onnxruntime is not installed (pip install onnxruntime)")
        return None
    try:
        model = OnnxModel.load(inputs.model)
    except Exception as exc:  # noqa: BLE001 - onnx raises many kinds on a model it cannot load
        verification.skip(EVERYTHING, f"{inputs.model} cannot be loaded by onnx ({exc})")
        return None
    groups = groups_of(model, inputs.facts.ops)
    emulator, golden = _emulator(model, groups, inputs, verification)
    numerics = target_numerics(inputs.settings, inputs.facts.network,
                               bool(inputs.thresholds.knob("verify", "fp16_accumulation")))
    return CpuChecks(model, groups, emulator, numerics, golden, inputs.table, inputs.dumps, inputs.thresholds,
                     inputs.facts.network)


def _emulator(model: OnnxModel, groups: list, inputs: VerifyInputs,
              verification: Verification) -> tuple[Emulator | None, dict[str, np.ndarray]]:
    """The emulator on the golden network inputs, and the golden outputs it is scored against; (None, {})
    with the reason said when the target cannot be emulated."""
    what = "the emulation (fidelity, residual, remedy steps)"
    feeds = {}
    types = model.input_types()
    for name in model.inputs:
        value = inputs.dumps.golden_output(name)
        if value is None:
            verification.skip(what, f"no golden dump of the network input {name}")
            return None, {}
        feeds[name] = np.ascontiguousarray(value, dtype=types.get(name))
    emulator: Emulator | None = None
    plan = QuantPlan(model, channel_axes(inputs.graph.nodes), lambda: emulator.float_run() if emulator else {},
                     inputs.thresholds.knob("quant", "percentile"))
    emulator = Emulator(model, groups, feeds, plan)
    try:
        float_run = emulator.float_run()
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime names the op it has no CPU kernel for
        verification.skip(what, f"ONNX Runtime cannot run {model.path.name} on the CPU ({first_line(exc)})")
        return None, {}
    golden = {}
    for output in model.outputs:
        producer = model.producer.get(output)
        key = model.keys[producer] if producer is not None else output
        slot = list(model.nodes[producer].output).index(output) if producer is not None else 0
        dumped = inputs.dumps.golden_output(key, slot)
        golden[output] = np.asarray(dumped if dumped is not None else float_run[output], dtype=np.float64)
        agreement = cosine_similarity(float_run[output], golden[output])
        if not agreement >= inputs.thresholds.knob("verify", "model_cosine"):
            verification.skip(what, f"{model.path.name} on the CPU does not reproduce the golden output {output} "
                                    f"(cosine {agreement:.6g}): it is not the model the golden dumps came from")
            return None, {}
    return emulator, golden

