"""ONNX Runtime: static int8 quantisation with ``quantize_static`` for int8 builds, float16 conversion
with ``onnxconverter_common`` otherwise.

- ``ort_quantize.py``: ``quantize_static(..., per_channel=, nodes_to_exclude=[...],
  calibrate_method=CalibrationMethod.MinMax|Percentile|Entropy, extra_options={"ActivationSymmetric":
  ..., "WeightSymmetric": ..., "CalibPercentile": ...})``. Excluded nodes stay in float32: the
  quantiser has no way to keep one node in float16.
- ``ort_float16.py``: ``float16.convert_float_to_float16(model, keep_io_types=True,
  node_block_list=[...])`` leaves the listed nodes in float32.
"""

from __future__ import annotations

from typing import Any

from ..model import BuildContext, RemedyStep, activation_calibration, known_setting
from ..quoting import py_list
from .common import golden_names, header, unexpressed

QUANTIZE = "ort_quantize.py"
FLOAT16 = "ort_float16.py"
CALIBRATION = {"minmax": "MinMax", "percentile": "Percentile", "kl": "Entropy"}


def files(step: RemedyStep, context: BuildContext) -> dict[str, str]:
    if context.quantised:
        return {QUANTIZE: quantize_script(step, context)}
    if step.keep:
        return {FLOAT16: float16_script(step)}
    return {}


def spelling(knob: str, value: Any) -> tuple[str, str] | None:
    """A quantisation setting as ort_quantize.py writes it (the report's summary says the same)."""
    if knob == "weight_quant_granularity":
        return "per_channel", str(value == "per_channel")
    if knob == "activation_quant_algo":
        return '"ActivationSymmetric"', str(value == "symmetric")
    return None


def quantize_script(step: RemedyStep, context: BuildContext) -> str:
    settings = step.settings
    expressed: list[str] = []
    arguments = ["        model_input,", "        model_output,", "        calibration_data_reader,"]
    granularity = known_setting(settings, "weight_quant_granularity")
    if granularity:
        arguments.append("        {}={},".format(*spelling("weight_quant_granularity", granularity)))
        expressed.append("weight_quant_granularity")
    arguments.append("        nodes_to_exclude=NODES_TO_EXCLUDE,")
    calibration = activation_calibration(settings)
    notes: list[str] = []
    if calibration:
        method = CALIBRATION.get(calibration)
        if method is None:
            method = "Entropy"
            notes += [f"# activation_calibration={calibration}: ONNX Runtime has no such calibrator;",
                      "# Entropy (a clipping search) is the closest."]
        arguments.append(f"        calibrate_method=CalibrationMethod.{method},")
        expressed.append("activation_calibration")
    extra: list[str] = []
    algo = known_setting(settings, "activation_quant_algo")
    if algo:
        extra.append("            {}: {},".format(*spelling("activation_quant_algo", algo)))
        expressed.append("activation_quant_algo")
    symmetric_weights = known_setting(settings, "weight_quant_symmetric")
    if symmetric_weights is not None:
        extra.append(f'            "WeightSymmetric": {symmetric_weights},')
        expressed.append("weight_quant_symmetric")
    percentile = known_setting(settings, "activation_percentile")
    if percentile is not None:
        extra.append(f'            "CalibPercentile": {percentile!r},')
        expressed.append("activation_percentile")
    if extra:
        arguments += ["        extra_options={", *extra, "        },"]
    uses_method = any("CalibrationMethod" in line for line in arguments)
    return "\n".join([
        '"""' + f"advisor remedy, step {step.step}, for ONNX Runtime (static int8 quantisation).",
        "",
        "quantize(model_input, model_output, calibration_data_reader) quantises a float32 ONNX model with the",
        "settings of this step and leaves NODES_TO_EXCLUDE unquantised.",
        '"""',
        *header(step, "ONNX Runtime"), *context.weight_only_note("quantize_static"), *notes,
        *unexpressed(settings, tuple(expressed), "quantize_static"),
        f"from onnxruntime.quantization import {'CalibrationMethod, ' if uses_method else ''}quantize_static",
        "",
        "# ONNX node names to leave unquantised: they run in float32 (the quantiser cannot keep a node in",
        "# float16).",
        f"NODES_TO_EXCLUDE = {py_list(golden_names(step))}",
        "", "",
        "def quantize(model_input, model_output, calibration_data_reader):",
        "    quantize_static(",
        *arguments,
        "    )",
    ]) + "\n"


def float16_script(step: RemedyStep) -> str:
    return "\n".join([
        '"""' + f"advisor remedy, step {step.step}, for ONNX Runtime (float16 model).",
        "",
        "convert(model_input, model_output) converts a float32 ONNX model to float16 and keeps the nodes of",
        "NODE_BLOCK_LIST (and the model's inputs and outputs) in float32.",
        '"""',
        *header(step, "ONNX Runtime"),
        "import onnx",
        "from onnxconverter_common import float16",
        "",
        "# ONNX node names to keep in float32.",
        f"NODE_BLOCK_LIST = {py_list(golden_names(step))}",
        "", "",
        "def convert(model_input, model_output):",
        "    model = onnx.load(model_input)",
        "    model = float16.convert_float_to_float16(model, keep_io_types=True, node_block_list=NODE_BLOCK_LIST)",
        "    onnx.save(model, model_output)",
    ]) + "\n"
