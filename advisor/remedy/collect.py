"""Findings -> remedy steps (what to change, not yet how each tool spells it).

Only active root causes contribute (a symptom's fix is its cause's fix), in diagnosis rank order, so
the step that answers the root cause comes first. Steps are cumulative and smallest first: a user
applies step 1, rebuilds, compares again, and goes on only while the comparison still deviates.
Settings come first because they change no op's precision and cost no speed; then one step per
finding's group of ops, since every kept op costs throughput.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..diagnosis import Finding
from .model import DEFAULT_PRECISION, MAX_STEPS, PRECISIONS, KeptOp, RemedyStep, parse_settings, setting_text

MAX_NAMES_IN_SUMMARY = 4


@dataclass(frozen=True)
class FindingFix:
    """What one finding asks for: the ops to keep (by name; see ``new_ops``) and the settings."""

    finding: str
    targets: tuple[str, ...]          # the ops to keep, target names
    golden: tuple[str, ...]           # their original-model names: one per target, or all of them for every target
    types: tuple[str, ...]            # one op type per target, or none
    precision: str
    settings: dict[str, Any]

    def new_ops(self, seen: Collection[str]) -> tuple[KeptOp, ...]:
        """The kept ops whose target name is not in ``seen``: the FP16 overflow findings of a large
        network each name the same few hundred ops, and only the first finding's are new."""
        paired = len(self.golden) == len(self.targets)
        return tuple(KeptOp(op=target,
                            golden=(self.golden[i],) if paired else self.golden or (target,),
                            op_type=self.types[i] if self.types else None,
                            precision=self.precision, finding=self.finding)
                     for i, target in enumerate(self.targets) if target not in seen)


def contributing_findings(root: Finding | None, findings: Sequence[Finding]) -> list[Finding]:
    """Active root-cause findings, root cause first, then in rank order."""
    ranked = [root] if root is not None else []
    ranked += [f for f in findings if root is None or f.id != root.id]
    return [f for f in ranked if f.root_cause and f.explained_by is None]


def finding_fix(finding: Finding) -> tuple[FindingFix | None, list[str]]:
    """The fix ``finding`` asks for (None when it asks for none), and warnings about how it asked."""
    values = finding.values
    warnings: list[str] = []
    settings: dict[str, Any] = {}
    if values.get("fix_settings"):
        settings, warnings = parse_settings(values["fix_settings"], f"finding {finding.id}")
    targets, golden, types, precision = _kept_names(finding, warnings)
    if not targets and not settings:
        return None, warnings
    return FindingFix(finding.id, targets, golden, types, precision, settings), warnings


def _kept_names(finding: Finding, warnings: list[str]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str]:
    """(targets, golden names, op types, precision) of the ops ``finding`` asks to keep."""
    values = finding.values
    targets = _names(values.get("fix_keep"))
    golden = _names(values.get("fix_keep_golden"))
    types = _names(values.get("fix_keep_types"))
    precision = str(values.get("fix_precision") or DEFAULT_PRECISION).strip().lower()
    if precision not in PRECISIONS:
        warnings.append(f"finding {finding.id}: fix_precision {values.get('fix_precision')!r} is not one of "
                        f"{', '.join(PRECISIONS)}; using {DEFAULT_PRECISION}")
        precision = DEFAULT_PRECISION
    if not targets and not golden:
        # The FP16 overflow findings' own spelling: golden names, kept in float32.
        golden = _names(values.get("keep_fp32_all") or values.get("keep_fp32"))
        precision, types = "float32", ()
    if not targets:
        targets = golden
    if types and len(types) != len(targets):
        warnings.append(f"finding {finding.id}: fix_keep_types has {len(types)} types for {len(targets)} ops; "
                        f"types ignored")
        types = ()
    return targets, golden, types, precision


def _names(value: Any) -> tuple[str, ...]:
    """A comma-joined list of names, stripped, without empties or repeats."""
    return () if value is None else _split_names(str(value))


@lru_cache(maxsize=1024)
def _split_names(text: str) -> tuple[str, ...]:
    # memoised: every FP16 overflow finding of a network carries the same list of its overflows
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def plan_steps(fixes: Sequence[FindingFix], warnings: list[str]) -> list[RemedyStep]:
    """Cumulative steps (no files yet): all settings first, then each finding's new ops."""
    settings: dict[str, Any] = {}
    settings_from: list[str] = []
    for fix in fixes:
        for knob, value in fix.settings.items():
            if knob in settings and settings[knob] != value:
                warnings.append(f"finding {fix.finding} asks for {knob}={setting_text(value)}, a finding ranked "
                                f"higher for {setting_text(settings[knob])}; keeping the latter")
                continue
            settings.setdefault(knob, value)
        if fix.settings:
            settings_from.append(fix.finding)
    groups = _new_op_groups(fixes)
    slots = MAX_STEPS - (1 if settings else 0)
    if len(groups) > slots:       # the last step takes all the rest: the final step is the whole fix
        groups = groups[:slots - 1] + [(tuple(f for g in groups[slots - 1:] for f in g[0]),
                                        tuple(op for g in groups[slots - 1:] for op in g[1]))]
    rank = {fix.finding: i for i, fix in enumerate(fixes)}
    steps: list[RemedyStep] = []
    if settings:
        steps.append(_step(1, settings, (), settings_from, (), rank))
    kept: tuple[KeptOp, ...] = ()
    answered = list(settings_from)
    for group_findings, new_ops in groups:
        kept += new_ops
        answered += group_findings
        steps.append(_step(len(steps) + 1, settings, kept, answered, new_ops, rank))
    return steps


def _new_op_groups(fixes: Sequence[FindingFix]) -> list[tuple[tuple[str, ...], tuple[KeptOp, ...]]]:
    """Per finding, in rank order, the ops no finding ranked before it asked for already."""
    seen: set[str] = set()
    groups = []
    for fix in fixes:
        new = fix.new_ops(seen)
        seen.update(op.op for op in new)
        if new:
            groups.append(((fix.finding,), new))
    return groups


def _step(number: int, settings: dict[str, Any], keep: tuple[KeptOp, ...], answered: list[str],
          new_ops: tuple[KeptOp, ...], rank: dict[str, int]) -> RemedyStep:
    findings = tuple(sorted(dict.fromkeys(answered), key=rank.__getitem__))
    return RemedyStep(step=number, settings=dict(settings), keep=keep, findings=findings,
                      summary={lang: _summary(number, settings, new_ops, len(keep), lang) for lang in ("en", "zh")})


def _summary(number: int, settings: dict[str, Any], new_ops: tuple[KeptOp, ...], kept: int, lang: str) -> str:
    if not new_ops:
        knobs = ", ".join(f"{k}={setting_text(v)}" for k, v in settings.items())
        return f"Change the quantisation settings: {knobs}." if lang == "en" else f"修改量化设置：{knobs}。"
    precisions = "/".join(sorted({op.precision for op in new_ops}))
    shown = [op.op for op in new_ops[:MAX_NAMES_IN_SUMMARY]]
    more = len(new_ops) - len(shown)
    if lang == "en":
        listed = ", ".join(shown) + (f" and {more} more" if more else "")
        ops = f"{len(new_ops)} op{'s' if len(new_ops) != 1 else ''}"
        if number == 1:
            return f"Keep {ops} in {precisions}: {listed}."
        return f"As step {number - 1}, and keep {ops} more in {precisions}: {listed} ({kept} kept in all)."
    listed = "、".join(shown) + ("等" if more else "")
    if number == 1:
        return f"将 {len(new_ops)} 个算子保持为 {precisions}：{listed}。"
    return f"在第 {number - 1} 步的基础上，再将 {len(new_ops)} 个算子保持为 {precisions}：{listed}（共 {kept} 个）。"
