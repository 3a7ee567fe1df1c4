"""Cambricon MagicMind: the build config's ``precision_config`` and a Python snippet for per-node
precision and the calibration algorithm.

- ``build_config.json``: ``{"precision_config": {precision_mode, weight_quant_granularity,
  activation_quant_algo}}``, as ``mm.BuilderConfig.parse_from_string`` takes it. MagicMind spells
  per-channel weights ``per_axis``. The precision mode is the one of the user's build config (when
  ``--config`` named a MagicMind one); advisor never guesses it.
- ``magicmind_remedy.py``: node precision through ``network.get_all_nodes_in_network()``,
  ``node.set_precision(i, dtype)`` and ``node.set_output_type(i, dtype)`` on the float inputs and
  outputs; the calibration algorithm through ``calibrator.set_quantization_algorithm``
  (``LINEAR_ALGORITHM``: min/max, ``EQM_ALGORITHM``: least quantisation noise).
"""

from __future__ import annotations

import textwrap
from typing import Any

from ..model import BuildContext, RemedyStep, activation_calibration, known_setting
from ..quoting import json_text, py_dict
from .common import golden_precisions, header, unexpressed

CONFIG = "build_config.json"
SCRIPT = "magicmind_remedy.py"
GRANULARITY = {"per_channel": "per_axis", "per_tensor": "per_tensor"}
ALGORITHMS = {"minmax": "LINEAR_ALGORITHM", "mse": "EQM_ALGORITHM"}


def spelling(knob: str, value: Any) -> tuple[str, str] | None:
    """A quantisation setting as build_config.json writes it (the report's summary says the same)."""
    if knob == "weight_quant_granularity" and value in GRANULARITY:
        return knob, GRANULARITY[value]
    if knob == "activation_quant_algo":
        return knob, str(value)
    return None


def files(step: RemedyStep, context: BuildContext) -> dict[str, str]:
    out: dict[str, str] = {}
    expressed: list[str] = []
    precision_config = _precision_config(step.settings, context, expressed)
    if precision_config:
        out[CONFIG] = json_text({"precision_config": precision_config})
    calibration = activation_calibration(step.settings)
    algorithm = ALGORITHMS.get(calibration) if calibration else None
    if algorithm:
        expressed.append("activation_calibration")
    if step.keep or precision_config or algorithm:
        out[SCRIPT] = script(step, CONFIG in out, algorithm, unexpressed(step.settings, tuple(expressed), "MagicMind"))
    return out


def _precision_config(settings: dict[str, Any], context: BuildContext, expressed: list[str]) -> dict[str, str]:
    config: dict[str, str] = {}
    if context.tool == "magicmind" and context.precision_mode:
        config["precision_mode"] = context.precision_mode
    for knob in ("weight_quant_granularity", "activation_quant_algo"):
        value = known_setting(settings, knob)
        spelt = spelling(knob, value) if value else None
        if spelt:
            config[spelt[0]] = spelt[1]
            expressed.append(knob)
    return config


def script(step: RemedyStep, has_config: bool, algorithm: str | None, notes: list[str]) -> str:
    uses = ([("keep_in_higher_precision(network) sets the kept nodes' precision: call it after parsing the "
              "model and before building.")] if step.keep else [])
    uses += ["configure(config) loads build_config.json into your mm.BuilderConfig."] if has_config else []
    uses += ["set_calibration(calibrator) picks the calibration algorithm."] if algorithm else []
    parts = ['"""' + f"advisor remedy, step {step.step}, for Cambricon MagicMind.", "",
             *textwrap.wrap(" ".join(uses), 100), '"""',
             *header(step, "Cambricon MagicMind"), *notes]
    parts += ["from pathlib import Path", ""] if has_config else []
    parts.append("import magicmind.python.runtime as mm")
    if step.keep:
        parts += ["",
                  "# Node name -> precision to keep it in. The ONNX parser names nodes after the original model's",
                  "# nodes; a name missing from your network is returned by keep_in_higher_precision.",
                  f"KEEP = {py_dict(golden_precisions(step))}",
                  "", "", _KEEP_FUNCTION]
    if has_config:
        parts += ["", "", _CONFIGURE_FUNCTION]
    if algorithm:
        parts += ["", "", _CALIBRATION_FUNCTION.replace("__ALGORITHM__", algorithm)]
    return "\n".join(parts) + "\n"


_KEEP_FUNCTION = '''def keep_in_higher_precision(network):
    """Set the float inputs and outputs of the kept nodes to their precision; returns the names of
    KEEP not found (print node.get_node_name() for network.get_all_nodes_in_network() to match them)."""
    precisions = {"float32": mm.DataType.FLOAT32, "float16": mm.DataType.FLOAT16}
    floats = (mm.DataType.FLOAT16, mm.DataType.FLOAT32)
    found = set()
    for node in network.get_all_nodes_in_network():
        name = node.get_node_name()
        if name not in KEEP:
            continue
        found.add(name)
        dtype = precisions[KEEP[name]]
        for index in range(node.get_input_count()):
            if node.get_input(index).get_data_type() in floats:
                node.set_precision(index, dtype)
        for index in range(node.get_output_count()):
            if node.get_output(index).get_data_type() in floats:
                node.set_output_type(index, dtype)
    return sorted(set(KEEP) - found)'''

_CONFIGURE_FUNCTION = '''def configure(config):
    """Apply build_config.json (beside this file) to an mm.BuilderConfig."""
    text = Path(__file__).with_name("build_config.json").read_text(encoding="utf-8")
    if not config.parse_from_string(text).ok():
        raise RuntimeError("MagicMind did not accept build_config.json")'''

_CALIBRATION_FUNCTION = '''def set_calibration(calibrator):
    """Use the calibration algorithm of this step on an mm.Calibrator."""
    if not calibrator.set_quantization_algorithm(mm.QuantizationAlgorithm.__ALGORITHM__).ok():
        raise RuntimeError("MagicMind did not accept the calibration algorithm")'''
