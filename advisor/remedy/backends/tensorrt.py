"""TensorRT: trtexec's per-layer precision flags and the same through the Python builder API.

- ``trtexec.sh``: ``--precisionConstraints=obey --layerPrecisions=name:fp32,... --layerOutputTypes=
  name:fp32,...``. A spec is ``name:precision`` pairs joined by commas, with ``*`` as a wildcard,
  so a name holding ``,``, ``:`` or ``*`` cannot be written there; the Python file keeps those.
- ``tensorrt_remedy.py``: ``layer.precision`` and ``layer.set_output_type`` on the float outputs,
  with ``BuilderFlag.OBEY_PRECISION_CONSTRAINTS``; for calibration, the built-in calibrator class to
  subclass (``IInt8MinMaxCalibrator``, ``IInt8EntropyCalibrator2``).

TensorRT quantises int8 symmetrically only (zero point 0), and takes per-channel weight scales from
the Q/DQ nodes of an explicitly quantised ONNX model rather than from a builder switch: the Python
file says so where a setting asks for either.
"""

from __future__ import annotations

from ..model import BuildContext, RemedyStep, activation_calibration, known_setting
from ..quoting import plain_line, py_dict, shell_word
from .common import golden_precisions, header, unexpressed

COMMAND = "trtexec.sh"
SCRIPT = "tensorrt_remedy.py"
TRTEXEC_PRECISION = {"float32": "fp32", "float16": "fp16"}
CALIBRATORS = {"minmax": "IInt8MinMaxCalibrator", "kl": "IInt8EntropyCalibrator2"}


def files(step: RemedyStep, context: BuildContext) -> dict[str, str]:
    out: dict[str, str] = {}
    precisions = golden_precisions(step)
    trtexec = command(step, precisions)
    if trtexec:
        out[COMMAND] = trtexec
    notes, calibrator = _settings(step.settings)
    if precisions or notes or calibrator:
        out[SCRIPT] = script(step, precisions, notes, calibrator)
    return out


def trtexec_name(name: str) -> bool:
    return plain_line(name) and not any(ch in name for ch in ",:*")


def command(step: RemedyStep, precisions: dict[str, str]) -> str | None:
    """The trtexec options, or None when no kept name can be written in a layer spec."""
    written = {name: TRTEXEC_PRECISION[p] for name, p in precisions.items() if trtexec_name(name)}
    if not written:
        return None
    spec = ",".join(f"{name}:{precision}" for name, precision in written.items())
    lines = ["#!/bin/sh", *header(step, "TensorRT trtexec"),
             "# Run it with your own trtexec options, for example:",
             "#   sh trtexec.sh --onnx=model.onnx --fp16 --saveEngine=model.engine",
             "# Layer names are the ONNX node names the parser gives its layers (see --dumpLayerInfo).",
             "# --layerOutputTypes gives one type: a layer with several outputs needs name:fp32+fp32."]
    if len(written) < len(precisions):
        lines.append(f"# {len(precisions) - len(written)} name(s) hold ',', ':' or '*' and cannot be written in a "
                     f"layer spec: {SCRIPT} keeps them.")
    lines.append(" ".join(["exec trtexec \"$@\" --precisionConstraints=obey",
                           shell_word(f"--layerPrecisions={spec}"), shell_word(f"--layerOutputTypes={spec}")]))
    return "\n".join(lines) + "\n"


def _settings(settings: dict) -> tuple[list[str], str | None]:
    """Comment lines about the settings, and the calibrator class to subclass (or None)."""
    notes: list[str] = []
    expressed: list[str] = []
    if known_setting(settings, "activation_quant_algo") == "asymmetric":
        notes += ["# activation_quant_algo=asymmetric: TensorRT quantises int8 symmetrically only (zero point 0),",
                  "# so this cannot be expressed; keep the ops it hurts in float (the keep lists) instead."]
        expressed.append("activation_quant_algo")
    elif known_setting(settings, "activation_quant_algo") == "symmetric":
        notes.append("# activation_quant_algo=symmetric: what TensorRT always does.")
        expressed.append("activation_quant_algo")
    symmetric_weights = known_setting(settings, "weight_quant_symmetric")
    if symmetric_weights is not None:
        notes.append("# weight_quant_symmetric=true: what TensorRT always does." if symmetric_weights else
                     "# weight_quant_symmetric=false: TensorRT weights are symmetric only; this cannot be expressed.")
        expressed.append("weight_quant_symmetric")
    granularity = known_setting(settings, "weight_quant_granularity")
    if granularity:
        notes += [f"# weight_quant_granularity={granularity}: TensorRT reads weight scales from the Q/DQ nodes of an",
                  "# explicitly quantised ONNX model (one scale per channel or per tensor); there is no builder",
                  "# switch. Quantise the ONNX model that way (onnxruntime.quantization.quantize_static in QDQ",
                  "# format with symmetric activations does) and build that model."]
        expressed.append("weight_quant_granularity")
    calibration = activation_calibration(settings)
    calibrator = CALIBRATORS.get(calibration) if calibration else None
    if calibrator:
        notes.append(f"# activation_calibration={calibration}: subclass CALIBRATOR_BASE (trt.{calibrator}).")
        expressed.append("activation_calibration")
    notes += unexpressed(settings, tuple(expressed), "built-in TensorRT calibrator or builder")
    return notes, calibrator


def script(step: RemedyStep, precisions: dict[str, str], notes: list[str], calibrator: str | None) -> str:
    parts = ['"""' + f"advisor remedy, step {step.step}, for TensorRT.",
             "",
             "apply_remedy(network, config) keeps the listed layers in their precision: call it after the ONNX",
             "parser filled the network and before building the engine.",
             '"""',
             *header(step, "TensorRT"),
             *notes,
             "import tensorrt as trt", "",
             "# Layer name -> precision. The ONNX parser names layers after the ONNX nodes; a node it splits",
             "# into several layers gets other names: apply_remedy returns the names it did not find.",
             f"KEEP = {py_dict(precisions)}"]
    if calibrator:
        parts += ["", f"CALIBRATOR_BASE = trt.{calibrator}"]
    parts += ["", "", _APPLY_FUNCTION]
    return "\n".join(parts) + "\n"


_APPLY_FUNCTION = '''def apply_remedy(network, config):
    """Constrain the precision of the layers in KEEP; returns the names of KEEP not found."""
    precisions = {"float32": trt.float32, "float16": trt.float16}
    floats = (trt.float32, trt.float16)
    config.set_flag(trt.BuilderFlag.OBEY_PRECISION_CONSTRAINTS)
    found = set()
    for index in range(network.num_layers):
        layer = network.get_layer(index)
        if layer.name not in KEEP:
            continue
        found.add(layer.name)
        dtype = precisions[KEEP[layer.name]]
        layer.precision = dtype
        for output in range(layer.num_outputs):
            if layer.get_output(output).dtype in floats:
                layer.set_output_type(output, dtype)
    return sorted(set(KEEP) - found)'''
