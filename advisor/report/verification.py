"""The "Verified on CPU" panel: a Diagnosis' verification (advisor/verify) -> view, in the report language.

Words for people (every format) and the numbers report.json carries, computed once here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .text import fmt_value

if TYPE_CHECKING:
    from ..verify.model import Verification

#: bar length of a cosine: its "nines" (-log10(1 - cos)), up to this many
MAX_NINES = 6.0


@dataclass(frozen=True)
class CheckLine:
    text: str
    tone: str                     # ok | error | warning | info: the colour of its mark
    link: str | None = None       # a repro pack folder, relative to the report


@dataclass(frozen=True)
class StepBar:
    """One remedy step's before/after, with bar widths (percent of the chart)."""

    step: int
    label: str
    text: str                     # "0.101 → 0.99999"
    status: str                   # restores / does not restore, in words
    restores: bool
    before_width: float
    after_width: float


@dataclass(frozen=True)
class VerificationView:
    fidelity: tuple[CheckLine, ...]
    replays: tuple[CheckLine, ...]
    steps: tuple[StepBar, ...]
    steps_summary: str | None
    chart_legend: str
    threshold_width: float
    residual: tuple[CheckLine, ...]
    not_verified: tuple[str, ...]
    oneline: str                  # the txt report's line
    payload: dict[str, Any]       # report.json's ``verification``


def verification_view(verification: Verification | None, labels: Mapping[str, str],
                      threshold: float) -> VerificationView | None:
    """``threshold``: the network output's cosine threshold (the chart's marker)."""
    if verification is None:
        return None
    fidelity = _fidelity(verification, labels)
    replays = tuple(_replay(r, labels) for r in verification.replay)
    steps = tuple(StepBar(s.step, labels["verify.step_bar"].format(n=s.step),
                          labels["verify.before_after"].format(before=_num(s.output_cosine_before),
                                                               after=_num(s.output_cosine_after)),
                          labels["verify.restores" if s.restores else "verify.not_restores"], s.restores,
                          _width(s.output_cosine_before), _width(s.output_cosine_after))
                  for s in verification.remedy_steps)
    smallest = verification.smallest_restoring_step
    summary = None
    if steps:
        summary = labels["verify.smallest"].format(n=smallest) if smallest else labels["verify.none_restores"]
        if verification.fidelity is not None and not verification.fidelity.holds:
            summary += " " + labels["verify.unfaithful_steps"]
    residual = tuple(CheckLine(labels["verify.residual_line"].format(op=r.op, index=r.index), "error")
                     for r in verification.residual)
    if not residual and verification.residual_checked:
        residual = (CheckLine(labels["verify.residual_none"], "ok"),)
    return VerificationView(
        fidelity=fidelity, replays=replays, steps=steps, steps_summary=summary,
        chart_legend=labels["verify.chart_legend"].format(threshold=_num(threshold)),
        threshold_width=_width(threshold),
        residual=residual,
        not_verified=tuple(labels["verify.not_verified_line"].format(what=n.what, why=n.why)
                           for n in verification.not_verified),
        oneline=_oneline(verification, labels), payload=verification.to_dict())


def _fidelity(verification: Verification, labels: Mapping[str, str]) -> tuple[CheckLine, ...]:
    fidelity = verification.fidelity
    if fidelity is None:
        return ()
    emulation = fidelity.storage + (", int8" if fidelity.quantised else "")
    lines = [CheckLine(labels["verify.fidelity_line"].format(emulation=emulation,
                                                            emulated=_num(fidelity.emulated_output_cosine),
                                                            target=_num(fidelity.target_output_cosine)), "info"),
             CheckLine(labels["verify.holds" if fidelity.holds else "verify.fails"],
                       "ok" if fidelity.holds else "error")]
    if fidelity.mode == "saturation":
        lines.append(CheckLine(labels["verify.saturation"], "warning"))
    return tuple(lines)


def _replay(check: Any, labels: Mapping[str, str]) -> CheckLine:
    verdict = labels[f"verify.verdict.{check.verdict or 'none'}"]
    text = labels["verify.replay_line"].format(op=check.op, index=check.index, verdict=verdict,
                                               golden=_num(check.cpu_vs_golden_cosine),
                                               target=_num(check.cpu_vs_target_cosine),
                                               measured=_num(check.target_vs_golden_cosine))
    tone = {"op_wrong": "error", "inherited": "ok", "pairing": "warning"}.get(check.verdict or "", "info")
    return CheckLine(text, tone, check.pack or None)


def _oneline(verification: Verification, labels: Mapping[str, str]) -> str:
    parts = []
    fidelity = verification.fidelity
    if fidelity is not None:
        parts.append(labels["verify.txt_fidelity"].format(
            emulated=_num(fidelity.emulated_output_cosine), target=_num(fidelity.target_output_cosine),
            holds=labels["verify.txt_holds" if fidelity.holds else "verify.txt_fails"]))
    parts += [labels["verify.txt_replay"].format(op=r.op, verdict=labels[f"verify.verdict.{r.verdict or 'none'}"])
              for r in verification.replay]
    if verification.remedy_steps:
        smallest = verification.smallest_restoring_step
        parts.append(labels["verify.txt_step"].format(n=smallest) if smallest else labels["verify.txt_no_step"])
    if verification.residual:
        parts.append(labels["verify.txt_residual"].format(ops=", ".join(r.op for r in verification.residual)))
    if not parts:
        parts.append(labels["verify.txt_nothing"])
    return labels["verify.txt"].format(text=labels["verify.list_join"].join(parts))


def _num(value: float | None) -> str:
    return "n/a" if value is None else fmt_value(value)


def _width(cosine: float | None) -> float:
    """Percent of the chart: the cosine's nines, 0 for 0 or less, full at MAX_NINES."""
    if cosine is None or not math.isfinite(cosine) or cosine <= 0:
        return 0.0
    nines = MAX_NINES if cosine >= 1 else -math.log10(1.0 - cosine)
    return round(100.0 * min(max(nines, 0.0), MAX_NINES) / MAX_NINES, 1)
