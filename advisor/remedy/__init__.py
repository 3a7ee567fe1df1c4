"""The fix, written out: findings' fix requests -> cumulative steps -> files in each backend's syntax.

``remedy_for`` is the one entry point (the pipeline calls it); the report stage renders and writes
the result (``OUTDIR/remedy/step<N>/<backend>/<file>``). docs/remedy.md describes the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..diagnosis import Finding
from .backends import WRITERS, parse_backends, resolve_backends, spelt_settings, step_files
from .collect import contributing_findings, finding_fix, plan_steps
from .model import BACKEND_NAMES, KNOBS, BuildContext, KeptOp, Remedy, RemedyStep, setting_text

__all__ = ["BACKEND_NAMES", "KNOBS", "WRITERS", "BuildContext", "KeptOp", "Remedy", "RemedyStep",
           "parse_backends", "remedy_for", "resolve_backends"]

INT_DTYPES = ("int4", "int8", "uint8", "int16")
BACKEND_LABELS = {"ascend": "AMCT", "magicmind": "MagicMind", "onnxruntime": "ONNX Runtime"}


def remedy_for(root: Finding | None, findings: Sequence[Finding], backends: tuple[str, ...] = (),
               network: dict[str, Any] | None = None,
               config: dict[str, Any] | None = None) -> tuple[Remedy | None, list[str]]:
    """The remedy of a diagnosis (None when no active root cause asks for a fix) and warnings about
    the fix requests. ``config`` is the build config fact (``--config``): its tool picks the backend
    when none is chosen, its precision mode goes into the files that name one."""
    warnings: list[str] = []
    fixes = []
    for finding in contributing_findings(root, findings):
        fix, problems = finding_fix(finding)
        warnings += problems
        if fix is not None:
            fixes.append(fix)
    if not fixes:
        return None, warnings
    steps = plan_steps(fixes, warnings)
    config = config or {}
    context = BuildContext(quantised=_quantised(steps, network or {}, config), tool=config.get("tool"),
                           precision_mode=config.get("precision_mode"), weight_only=bool(config.get("weight_only")))
    chosen = resolve_backends(backends, context.tool)
    steps = [replace(step, files=step_files(step, context, chosen), summary=_spelt_summary(step, chosen))
             for step in steps]
    return Remedy(backends=chosen, steps=tuple(steps), quantised=context.quantised), warnings


def _spelt_summary(step: RemedyStep, backends: tuple[str, ...]) -> dict[str, str]:
    """A settings step's summary in the key names of the files beside it: one backend's own spelling, or
    with several the generic one followed by each backend's where it differs."""
    if step.keep or not step.settings:
        return step.summary
    spelt = spelt_settings(step.settings, backends)
    generic = {knob: f"{knob}={setting_text(value)}" for knob, value in step.settings.items()}
    if len(backends) == 1:
        knobs = ", ".join(spelt.get(backends[0], {}).get(knob, text) for knob, text in generic.items())
        return {"en": f"Change the quantisation settings: {knobs}.", "zh": f"修改量化设置：{knobs}。"}
    differing = {b: texts for b, texts in spelt.items() if any(generic[k] != t for k, t in texts.items())}
    if not differing:
        return step.summary
    listed = "; ".join(f"{BACKEND_LABELS.get(b, b)}: {', '.join(texts.values())}" for b, texts in differing.items())
    return {lang: f"{text.rstrip('.。')} ({listed})" + ("." if lang == "en" else "。")
            for lang, text in step.summary.items()}


def _quantised(steps: Sequence[RemedyStep], network: dict[str, Any], config: dict[str, Any]) -> bool:
    """An int8 build: quantisation settings are asked for, ops are kept in float16 (only an integer
    build has something below float16), the network computes in an integer type, or the build
    config's precision mode quantises."""
    if any(step.settings for step in steps) or any(op.precision == "float16" for s in steps for op in s.keep):
        return True
    if str(network.get("compute_dtype") or network.get("dtype") or "") in INT_DTYPES:
        return True
    mode = str(config.get("precision_mode") or "").lower()
    return "int8" in mode or mode.startswith("qint")
