"""What a remedy is: steps of settings changes and ops kept in higher precision, and the generic
vocabulary findings use to ask for them.

Rules do not know which toolchain the user builds with, so findings speak one generic vocabulary
(``KNOBS``) and the backend writers (``advisor/remedy/backends/``) translate it into each tool's own
syntax. A finding asks for a fix through its ``values``:

- ``fix_keep``: comma-joined target op names (as in the comparison) to run in higher precision, most
  important first;
- ``fix_keep_golden``: the original-model (golden / ONNX) names of those ops, which is what ATC
  keep_dtype lists, ONNX Runtime's nodes_to_exclude and TensorRT layer names use. With as many names
  as ``fix_keep`` they pair one to one; with another count (a fused target op made of several
  original ops) every kept op carries the whole list. Absent: the target names are used;
- ``fix_keep_types``: comma-joined op types of those ops, same order as ``fix_keep`` (optional);
- ``fix_precision``: ``float16`` or ``float32`` (default ``float32``);
- ``fix_settings``: ``knob=value;knob=value`` in the vocabulary of ``KNOBS``.

The FP16 overflow findings' ``keep_fp32`` / ``keep_fp32_all`` (golden names, kept in float32) mean
the same as ``fix_keep_golden`` with ``fix_precision: float32``; ``keep_fp32_all`` wins when both are
present, since fixing one overflow of many only moves the failure to the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

BACKEND_NAMES: tuple[str, ...] = ("ascend", "magicmind", "tensorrt", "onnxruntime", "pytorch")
PRECISIONS: tuple[str, ...] = ("float16", "float32")
DEFAULT_PRECISION = "float32"
MAX_STEPS = 4

# knob -> (allowed values, or None for a number; meaning). Values are normalised for report.json:
# true/false become booleans, activation_percentile a number, the rest stay strings.
KNOBS: dict[str, tuple[tuple[str, ...] | None, str]] = {
    "weight_quant_granularity": (("per_tensor", "per_channel"),
                                 "one weight scale per tensor, or one per output channel"),
    "weight_quant_symmetric": (("true", "false"),
                               "weights quantised around zero (no zero point), or with a zero point"),
    "activation_quant_algo": (("symmetric", "asymmetric"),
                              "activations quantised around zero, or with a zero point (MagicMind's knob "
                              "name and values)"),
    "activation_calibration": (("minmax", "percentile", "kl", "mse"),
                               "how the activation ranges are calibrated: observed min/max, a percentile of "
                               "|x|, the KL-divergence optimum, or the least-squares optimum"),
    "activation_percentile": (None, "the percentile the activation range clips at with percentile calibration, "
                                    "e.g. 99.99 (a number in (0, 100])"),
}


@dataclass(frozen=True)
class KeptOp:
    """One op to run in higher precision."""

    op: str                          # the target op name (the golden name when only that is known)
    golden: tuple[str, ...]          # its original-model names: what the tools' keep lists name
    op_type: str | None
    precision: str                   # float16 | float32
    finding: str                     # id of the finding that asked for it


@dataclass(frozen=True)
class RemedyStep:
    """One step of the remedy: everything of the steps before it, plus one more group of ops."""

    step: int                                    # 1, 2, ...
    settings: dict[str, Any]                     # generic knob -> value
    keep: tuple[KeptOp, ...]
    findings: tuple[str, ...]                    # ids of the findings this step answers, rank order
    summary: dict[str, str]                      # language -> one line
    files: dict[str, dict[str, str]] = field(default_factory=dict)   # backend -> file name -> text


@dataclass(frozen=True)
class Remedy:
    """The fix, written out for the chosen backends, smallest step first."""

    backends: tuple[str, ...]
    steps: tuple[RemedyStep, ...]
    quantised: bool                  # the target is an int8 build (settings and keep lists mean AMCT/QDQ)


@dataclass(frozen=True)
class BuildContext:
    """What the backend writers need to know about the target build besides the step itself."""

    quantised: bool
    tool: str | None = None          # the build config's tool (atc, magicmind), when --config was given
    precision_mode: str | None = None
    weight_only: bool = False        # the build quantises weights only (activations stay in float)

    def weight_only_note(self, tool: str) -> list[str]:
        """A comment for a static int8 script when the build being fixed is weight-only int8."""
        if not self.weight_only:
            return []
        return [f"# The build this fixes quantises weights only; {tool} below quantises activations too.",
                "# Compare the result with that in mind, or quantise weights only with your tool's own option."]


def parse_settings(text: str, source: str) -> tuple[dict[str, Any], list[str]]:
    """``knob=value;knob=value`` -> (settings, warnings). Nothing here raises: a finding that asks for
    something this version does not know is still reported, its wish kept as written."""
    settings: dict[str, Any] = {}
    warnings: list[str] = []
    for part in str(text).split(";"):
        if not part.strip():
            continue
        knob, sep, value = part.partition("=")
        knob, value = knob.strip(), value.strip()
        if not sep or not knob or not value:
            warnings.append(f"{source}: fix_settings entry {part.strip()!r} is not knob=value; ignored")
            continue
        normalised, problem = normalise_setting(knob, value)
        if problem:
            warnings.append(f"{source}: {problem}; kept as written")
        settings[knob] = normalised
    return settings, warnings


def normalise_setting(knob: str, value: str) -> tuple[Any, str | None]:
    """(the value as report.json carries it, a problem or None)."""
    if knob not in KNOBS:
        return value, f"unknown fix_settings knob {knob!r} (known: {', '.join(KNOBS)})"
    allowed, _ = KNOBS[knob]
    if allowed is None:
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not 0 < number <= 100:
            return value, f"{knob} must be a number in (0, 100], not {value!r}"
        return number, None
    lowered = value.lower()
    if lowered not in allowed:
        return value, f"{knob} must be one of {', '.join(allowed)}, not {value!r}"
    if allowed == ("true", "false"):
        return lowered == "true", None
    return lowered, None


def setting_text(value: Any) -> str:
    """A setting's value as written in the generic vocabulary (true, 99.99, per_channel)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def known_setting(settings: dict[str, Any], knob: str) -> Any:
    """The value of ``knob`` when it is one of the vocabulary's values, else None (writers skip it)."""
    if knob not in settings:
        return None
    value, problem = normalise_setting(knob, setting_text(settings[knob]))
    return None if problem else value


def activation_calibration(settings: dict[str, Any]) -> str | None:
    """The calibration a step asks for; a percentile alone implies percentile calibration."""
    calibration = known_setting(settings, "activation_calibration")
    if calibration is None and known_setting(settings, "activation_percentile") is not None:
        return "percentile"
    return calibration
