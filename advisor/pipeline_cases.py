"""Rule input cases (``input_cases:``) run as ``advisor run`` runs them: a case's comparison file and the
run's other inputs it names go through ``analyse`` with the built-in packs and the rule's own; what the
case states about the findings is checked as for fact cases (advisor/engine/cases.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .engine.cases import CaseResult, expectation_mismatch, run_case
from .engine.packs import Rule, RulePack
from .engine.rulemodel import INPUT_PATHS
from .engine.runner import EngineResult
from .pipeline import AnalysisOptions, analyse


def run_input_case(rule: Rule, case: dict[str, Any], packs: list[Path] | None = None) -> CaseResult:
    """One ``input_cases`` entry, run as ``advisor run`` runs it (``advisor.pipeline.analyse``): its
    comparison file and the run's other inputs it names (graph, dumps, config, ...; relative to the
    rule's file), with the built-in packs and ``packs`` (the rule's own pack when it is not built in);
    ``params`` tune the rule, ``thresholds`` are ``--threshold`` texts."""
    try:
        diagnosis = analyse(case_options(rule, case, packs or []))
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with the reason
        return CaseResult(rule.id, case["name"], case["expect"], False, error=str(exc))
    result = EngineResult(diagnosis.findings, diagnosis.explanations, groups=diagnosis.explanation_groups)
    fired = any(by == rule.id for *_, by in result.every_explanation()) if rule.explain else \
        any(f.rule == rule.id for f in result.findings)
    mismatch = expectation_mismatch(rule, case, result) if fired and case["expect"] == "fire" else None
    return CaseResult(rule.id, case["name"], case["expect"], fired, mismatch=mismatch)


def case_options(rule: Rule, case: dict[str, Any], packs: list[Path]) -> AnalysisOptions:
    """The options ``advisor run`` would get for the case: its paths resolved beside the rule's file."""
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
