"""What every backend writer shares: the kept ops by precision and the header comment."""

from __future__ import annotations

from ..model import RemedyStep, setting_text
from ..quoting import comment_text


def golden_names(step: RemedyStep, precision: str | None = None) -> list[str]:
    """Original-model names of the kept ops (of one precision), in keep order, without repeats."""
    return list(dict.fromkeys(name for op in step.keep if precision in (None, op.precision) for name in op.golden))


def golden_precisions(step: RemedyStep) -> dict[str, str]:
    """Original-model name -> precision to keep it in (the first op naming it decides)."""
    precisions: dict[str, str] = {}
    for op in step.keep:
        for name in op.golden:
            precisions.setdefault(name, op.precision)
    return precisions


def header(step: RemedyStep, tool: str, prefix: str = "#") -> list[str]:
    """Comment lines that say what made this file; no op name ever goes into a comment."""
    return [f"{prefix} advisor remedy, step {step.step}, for {tool}.",
            f"{prefix} It answers the findings {comment_text(', '.join(step.findings))} of the advisor report;",
            f"{prefix} every step includes the steps before it (see remedy/README.md)."]


def unexpressed(settings: dict, handled: tuple[str, ...], tool: str, prefix: str = "#") -> list[str]:
    """Comment lines for settings this writer has no way to express."""
    return [f"{prefix} {comment_text(knob)}={comment_text(setting_text(value))}: "
            f"advisor knows no {tool} setting for this; not applied."
            for knob, value in settings.items() if knob not in handled]
