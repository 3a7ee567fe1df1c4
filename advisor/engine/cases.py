"""Run each rule's own test cases: a rule is not done until a case shows it firing on a true case
and staying silent on a clean one.

Two kinds. ``cases`` are fact sets written by hand: quick, and they pin the rule's logic. ``input_cases``
are tiny comparison files in the tool's own layout (msaccucmp or msprobe, rows cut from real files),
beside the rule, with the run's other inputs when the rule needs them (graph, dumps, build config,
--verify...): each runs through ``advisor.pipeline.analyse`` with its pack and the built-in ones, as
``advisor run`` would, so a case can never claim ``out_deviates: true`` beside a cosine of 0.9999
(semgrep tests a rule on the user's input itself).

A firing case may also say what the rule gives (checked here, described in docs/rule-packs.md):
``findings`` (each a mapping of ``kind``, ``op``, ``index``; every one must match a finding of the
rule, in any order), ``count`` (exactly how many findings, or explanations for an explain rule) and
``explains`` (each ``{cause: ID, symptom: ID}``, ids of the case's finding facts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..facts.builder import clean_fact
from .packs import Rule, RulePack
from .rulemodel import INPUT_PATHS
from .runner import EngineResult, run_rules

if TYPE_CHECKING:
    from ..pipeline import AnalysisOptions


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
    try:
        result = run_rules([rule], facts, {rule.id: dict(case.get("params") or {})})
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with the reason
        return CaseResult(rule.id, case["name"], case["expect"], False, error=str(exc))
    fired = result.fired.get(rule.id, 0) > 0
    mismatch = expectation_mismatch(rule, case, result) if fired and case["expect"] == "fire" else None
    return CaseResult(rule.id, case["name"], case["expect"], fired, mismatch=mismatch)


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


def run_input_case(rule: Rule, case: dict[str, Any], packs: list[Path] | None = None) -> CaseResult:
    """One ``input_cases`` entry, run as ``advisor run`` runs it (``advisor.pipeline.analyse``): its
    comparison file and the run's other inputs it names (graph, dumps, config, ...; relative to the
    rule's file), with the built-in packs and ``packs`` (the rule's own pack when it is not built in);
    ``params`` tune the rule, ``thresholds`` are ``--threshold`` texts."""
    from ..pipeline import analyse

    try:
        diagnosis = analyse(case_options(rule, case, packs or []))
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with the reason
        return CaseResult(rule.id, case["name"], case["expect"], False, error=str(exc))
    result = EngineResult(diagnosis.findings, diagnosis.explanations)
    fired = any(by == rule.id for *_, by in result.explanations) if rule.explain else \
        any(f.rule == rule.id for f in result.findings)
    mismatch = expectation_mismatch(rule, case, result) if fired and case["expect"] == "fire" else None
    return CaseResult(rule.id, case["name"], case["expect"], fired, mismatch=mismatch)


def case_options(rule: Rule, case: dict[str, Any], packs: list[Path]) -> AnalysisOptions:
    """The options ``advisor run`` would get for the case: its paths resolved beside the rule's file."""
    from ..pipeline import AnalysisOptions

    paths = {key: case_path(rule, case[key]) for key in INPUT_PATHS if key in case}
    dumps = case.get("dumps")
    params = tuple(f"{rule.id}.{name}={_param_text(value)}" for name, value in (case.get("params") or {}).items())
    return AnalysisOptions(
        comparison=paths["input"], rule_packs=list(packs), plugins=False, graph=paths.get("graph"),
        fusion=paths.get("fusion"), build_config=paths.get("config"), overflow=paths.get("overflow"),
        simulation=paths.get("simulation"), verify=bool(case.get("verify", False)),
        dumps=(case_path(rule, dumps["golden"]), case_path(rule, dumps["target"])) if dumps else None,
        input_nodes=tuple(case.get("input_nodes") or ()), thresholds=tuple(case.get("thresholds") or ()),
        params=params)


def _param_text(value: Any) -> str:
    """A case's parameter as ``--set`` writes it (YAML booleans as the command line spells them)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def case_path(rule: Rule, name: str) -> Path:
    """A path an input case names, relative to the rule's file."""
    return rule.source.parent / str(name)


def run_pack_cases(pack: RulePack, packs: list[Path] | None = None) -> list[CaseResult]:
    """Every case of the pack's rules; input cases run with the built-in packs and ``packs`` (the pack's
    own folder when it is not built in)."""
    return [run_case(rule, case) for rule in pack.rules for case in rule.cases] + \
        [run_input_case(rule, case, packs) for rule in pack.rules for case in rule.input_cases]
