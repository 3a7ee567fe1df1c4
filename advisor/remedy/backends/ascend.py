"""Ascend (CANN): ATC's ``--keep_dtype`` list and ``--modify_mixlist`` block list, an AMCT simplified
quantisation config for int8 builds, and the atc options that use them.

- ``keep_dtype.cfg``: one original-model op name per line (``OpType::Name`` lines would name types);
  ATC keeps those ops in the model's original precision. The file has no quoting or comment syntax,
  so only names that stand alone on a line go in.
- ``ops_info.json``: ``{"black-list": {"to-add": [types]}}`` for ``--modify_mixlist``: under mixed
  precision every op of those (Ascend IR) types stays in float32, a coarser alternative.
- ``amct_quant.cfg``: AMCT's simplified config in protobuf text format: ``activation_offset`` (with
  offset = asymmetric activations), ``skip_layers`` (left in float), and ``common_config`` with
  ``arq_quantize { channel_wise }`` for weights and ``ifmr_quantize`` (percentile search) or
  ``hfmg_quantize`` (histogram search) for activations.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import BuildContext, RemedyStep, activation_calibration, known_setting
from ..quoting import json_text, plain_line, proto_str, shell_word
from .common import golden_names, header, unexpressed

KEEP_DTYPE = "keep_dtype.cfg"
MIXLIST = "ops_info.json"
AMCT_CONFIG = "amct_quant.cfg"
COMMAND = "atc_command.sh"
_IR_TYPE = re.compile(r"[A-Z][A-Za-z0-9]*")   # Ascend IR op types are PascalCase


def files(step: RemedyStep, context: BuildContext) -> dict[str, str]:
    out: dict[str, str] = {}
    if context.quantised:
        amct = amct_config(step)
        if amct:
            out[AMCT_CONFIG] = amct
    # In an int8 build the skipped layers stay float, and ATC still lowers float to float16 unless
    # keep_dtype says otherwise; so only the float32 ones go on the list there.
    names = golden_names(step, "float32" if context.quantised else None)
    listed = [name for name in names if plain_line(name) and "::" not in name]
    if listed:
        out[KEEP_DTYPE] = "".join(f"{name}\n" for name in listed)
    types = [] if context.quantised else mixlist_types(step)
    if types:
        out[MIXLIST] = json_text({"black-list": {"to-add": types}})
    if listed or types:
        out[COMMAND] = command(step, context, bool(listed), bool(types), len(names) - len(listed))
    return out


def mixlist_types(step: RemedyStep) -> list[str]:
    return list(dict.fromkeys(op.op_type for op in step.keep
                              if op.precision == "float32" and op.op_type and _IR_TYPE.fullmatch(op.op_type)))


def command(step: RemedyStep, context: BuildContext, keep_dtype: bool, mixlist: bool, left_out: int) -> str:
    lines = ["#!/bin/sh", *header(step, "Ascend ATC"),
             "# Run it with your own atc options, for example:",
             "#   sh atc_command.sh --model=model.onnx --framework=5 --output=model_fixed --soc_version=...",
             ]
    if context.quantised:
        lines.append("# --model is the deploy model AMCT wrote with amct_quant.cfg.")
    if left_out:
        lines.append(f"# {left_out} op name(s) cannot be written to keep_dtype.cfg (it has no quoting): "
                     "keep them by hand.")
    mode = context.precision_mode if context.tool == "atc" else None
    mode_option = [shell_word(f"--precision_mode={mode}")] if mode and mode != "must_keep_origin_dtype" else []
    lines.append('here=$(dirname "$0")')
    if keep_dtype:
        lines.append(" ".join(["exec atc \"$@\"", *mode_option, f'--keep_dtype="$here/{KEEP_DTYPE}"']))
        if mixlist:
            lines += ["# Coarser alternative under mixed precision: every op of the kept ops' types in float32:",
                      f'#   atc "$@" --precision_mode=allow_mix_precision --modify_mixlist="$here/{MIXLIST}"']
    else:
        lines += ["# Under mixed precision, every op of the kept ops' types stays in float32:",
                  f'exec atc "$@" --precision_mode=allow_mix_precision --modify_mixlist="$here/{MIXLIST}"']
    return "\n".join(lines) + "\n"


def spelling(knob: str, value: Any) -> tuple[str, str] | None:
    """A quantisation setting as the AMCT simplified config writes it (the report's summary says the same)."""
    if knob == "weight_quant_granularity":
        return "channel_wise", str(value == "per_channel").lower()
    if knob == "activation_quant_algo":
        return "activation_offset", str(value == "asymmetric").lower()
    return None


def amct_config(step: RemedyStep) -> str | None:
    """The AMCT simplified config, or None when it would set nothing."""
    settings = step.settings
    body: list[str] = []
    expressed: list[str] = []
    algo = known_setting(settings, "activation_quant_algo")
    if algo:
        body.append("{} : {}".format(*spelling("activation_quant_algo", algo)))
        expressed.append("activation_quant_algo")
    body += [f"skip_layers : {proto_str(name)}" for name in golden_names(step)]
    common: list[str] = []
    granularity = known_setting(settings, "weight_quant_granularity")
    if granularity:
        common += ["    arq_quantize : {",
                   "        {} : {}".format(*spelling("weight_quant_granularity", granularity)),
                   "    }"]
        expressed.append("weight_quant_granularity")
    common += _activation_algorithm(settings, expressed)
    if common:
        body += ["common_config : {", *common, "}"]
    if not body:
        return None
    notes = unexpressed(settings, tuple(expressed), "AMCT simplified config")
    return "\n".join([*header(step, "Ascend AMCT"),
                      "# Give it to AMCT as config_defination, e.g. amct_onnx.create_quant_config(config_file,",
                      "#     model_file, config_defination='amct_quant.cfg'); the other AMCT front ends take it too.",
                      *notes, *body]) + "\n"


def _activation_algorithm(settings: dict, expressed: list[str]) -> list[str]:
    calibration = activation_calibration(settings)
    percentile = known_setting(settings, "activation_percentile")
    if calibration in ("kl", "mse"):
        expressed.append("activation_calibration")
        return ["    # HFMG searches the clipping bounds on a histogram of the activations: AMCT's closest",
                f"    # match for {calibration} calibration.",
                "    hfmg_quantize : {", "    }"]
    if calibration == "minmax":
        expressed.append("activation_calibration")
        return ["    # IFMR at the 100th percentile: the observed min/max (IFMR still searches a scale around it,",
                "    # see search_range_start / search_range_end).",
                "    ifmr_quantize : {", "        max_percentile : 1.0", "        min_percentile : 1.0", "    }"]
    if calibration == "percentile":
        expressed.append("activation_calibration")
        lines = ["    ifmr_quantize : {"]
        if percentile is not None:
            expressed.append("activation_percentile")
            fraction = f"{percentile / 100:.10g}"
            lines += [f"        max_percentile : {fraction}", f"        min_percentile : {fraction}"]
        return lines + ["    }"]
    return []

