"""Run each rule's own test cases: a rule is not done until a case shows it firing on a true case
and staying silent on a clean one.

Two kinds. ``cases`` are fact sets written by hand: quick, and they pin the rule's logic. ``input_cases``
are tiny comparison files in the tool's own layout (msaccucmp or msprobe, rows cut from real files),
beside the rule, with the run's other inputs when the rule needs them (graph, dumps, build config,
--verify...): each runs through ``advisor.pipeline.analyse`` with its pack and the built-in ones, as
``advisor run`` would, so a case can never claim ``out_deviates: true`` beside a cosine of 0.9999
(semgrep tests a rule on the user's input itself); they run in advisor/pipeline_cases.py, a layer up.

A firing case may also say what the rule gives (checked here, described in docs/rule-packs.md):
``findings`` (each a mapping of ``kind``, ``op``, ``index``; every one must match a finding of the
rule, in any order), ``count`` (exactly how many findings, or explanations for an explain rule) and
``explains`` (each ``{cause: ID, symptom: ID}``, ids of the case's finding facts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..facts.builder import clean_fact
from .judgement import judgement
from .packs import Rule
from .runner import EngineResult, run_rules


@dataclass
class CaseResult:
    rule: str
    case: str
    expected: str           # "fire" or "silent"
    fired: bool
    error: str | None = None
    mismatch: str | None = None      # what the case states about the findings that did not hold

    @property
    def passed(self) -> bool:
        return self.error is None and self.mismatch is None and self.fired == (self.expected == "fire")


def run_case(rule: Rule, case: dict) -> CaseResult:
    facts = [clean_fact(dict(fact)) for fact in case["facts"]]
    if rule.judges is not None:
        return _judge_case(rule, case, facts)
    try:
        result = run_rules([rule], facts, {rule.id: dict(case.get("params") or {})})
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with the reason
        return CaseResult(rule.id, case["name"], case["expect"], False, error=str(exc))
    fired = result.fired.get(rule.id, 0) > 0
    mismatch = expectation_mismatch(rule, case, result) if fired and case["expect"] == "fire" else None
    return CaseResult(rule.id, case["name"], case["expect"], fired, mismatch=mismatch)


def _judge_case(rule: Rule, case: dict, facts: list[dict[str, Any]]) -> CaseResult:
    """A judgement rule's case: its ``tensor`` facts as the columns the facts stage would give (a field a fact
    leaves out is missing there: NaN, neither true nor false), judged as a run judges them; it fires when
    some row is flagged. ``count``: how many rows."""
    tensors = [fact for fact in facts if fact.get("fact") == "tensor"]
    columns = {name: pd.Series([fact.get(name) for fact in tensors], dtype=object)
               for name in rule.fields.get("tensor", {}) if name != "fact"}
    try:
        flagged = judgement([rule], {rule.id: dict(case.get("params") or {})},
                            required=(rule.judges,))(columns, len(tensors))[rule.judges]
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with the reason
        return CaseResult(rule.id, case["name"], case["expect"], False, error=str(exc))
    count = int(flagged.sum())
    mismatch = f"expected {case['count']} row(s) judged, got {count}" if (
        count and "count" in case and count != case["count"]) else None
    return CaseResult(rule.id, case["name"], case["expect"], count > 0, mismatch=mismatch)


def expectation_mismatch(rule: Rule, case: dict[str, Any], result: EngineResult) -> str | None:
    """The first thing the case states about the rule's findings or explanations that does not hold."""
    findings = [f for f in result.findings if f.rule == rule.id]
    explanations = [(cause, symptom) for cause, symptom, by in result.every_explanation() if by == rule.id]
    given = len(explanations) if rule.explain else len(findings)
    if "count" in case and given != case["count"]:
        what = "explanation(s)" if rule.explain else "finding(s)"
        return f"expected {case['count']} {what}, got {given}"
    for wanted in case.get("findings") or []:
        if not any(all(_same(getattr(f, key), value) for key, value in wanted.items()) for f in findings):
            got = "; ".join(f"kind={f.kind} op={f.op} index={f.index}" for f in findings) or "none"
            return f"no finding with {_spec(wanted)} (got: {got})"
    for pair in case.get("explains") or []:
        if (pair["cause"], pair["symptom"]) not in explanations:
            got = "; ".join(f"{c} explains {s}" for c, s in explanations) or "none"
            return f"'{pair['cause']}' does not explain '{pair['symptom']}' (got: {got})"
    return None


def _same(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool) and actual is not None:
        try:
            return float(actual) == float(wanted)
        except (TypeError, ValueError):
            return False
    return actual == wanted


def _spec(wanted: dict[str, Any]) -> str:
    return " ".join(f"{key}={value}" for key, value in wanted.items())
