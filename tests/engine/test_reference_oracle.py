"""The engine (durable_rules plus index joins) and the pure-Python reference matcher agree.

Differential testing: the same compiled rules over the same facts must give the same findings,
evidence and explanations through ``run_rules`` and ``run_reference``: every built-in rule case,
the whole core pack over every case's facts (findings feeding rules over findings), and every
scenario of the committed corpora (tests/data/scenarios, tests/data/realtool) as the pipeline runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor import pipeline
from advisor.engine.cases import run_case
from advisor.engine.packs import load_pack
from advisor.engine.runner import EngineResult, run_rules
from advisor.facts.builder import clean_fact
from benchmarks.diagnosis import analyse_scenario, find_scenarios
from tests.engine.reference import run_reference

REPO = Path(__file__).resolve().parents[2]
CORE = load_pack(REPO / "rules" / "core")
# (a judgement rule decides a row flag over the whole table, engine/judgement.py: no engine runs it)
CASES = [(rule, case) for rule in CORE.rules if rule.judges is None for case in rule.cases]
SCENARIOS = [d for corpus in ("scenarios", "realtool") for d in find_scenarios(REPO / "tests" / "data" / corpus)]


def _scenario_case(directory: Path):
    return pytest.param(directory, id=f"{directory.parent.name}/{directory.name}")


def signature(result: EngineResult, evidence: bool = True) -> tuple:
    """Findings, explanations and the rules that fired. ``evidence=False`` leaves out what comes from
    the first of several matches making the same finding (evidence, values, confidence): which match
    is first is each matcher's own order."""
    findings = sorted((f.id, f.rule, f.kind, f.op, f.index, f.severity, f.root_cause) + (
        (f.confidence, tuple(sorted(f.evidence.items())), tuple(sorted(f.values.items()))) if evidence else ())
        for f in result.findings)
    return findings, sorted(result.every_explanation()), sorted(rule for rule, times in result.fired.items() if times)


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.id}:{c['name']}" for r, c in CASES])
def test_every_rule_case_gives_the_same_findings_through_both(rule, case):
    facts = [clean_fact(dict(fact)) for fact in case["facts"]]
    params = {rule.id: dict(case.get("params") or {})}
    engine, reference = run_rules([rule], facts, params), run_reference([rule], facts, params)
    assert signature(engine) == signature(reference)
    assert run_case(rule, case).passed     # and the case itself still holds


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.id}:{c['name']}" for r, c in CASES])
def test_the_whole_pack_over_each_case_gives_the_same_findings_through_both(rule, case):
    facts = [clean_fact(dict(fact)) for fact in case["facts"]]
    assert signature(run_rules(CORE.rules, facts)) == signature(run_reference(CORE.rules, facts))


@pytest.mark.parametrize("directory", [_scenario_case(d) for d in SCENARIOS])
def test_every_scenario_gives_the_same_findings_through_both(directory, monkeypatch):
    runs: list[tuple[list, list, dict | None, EngineResult]] = []

    def recording(rules, facts, params=None):
        rules = list(rules)
        result = run_rules(rules, facts, params)
        runs.append((rules, facts, params, result))
        return result

    monkeypatch.setattr(pipeline, "run_rules", recording)
    scored = analyse_scenario(directory)
    assert scored.error is None
    (rules, facts, params, result), = runs
    assert result.findings, "every committed scenario has findings (a clean one its 'consistent' info)"
    assert signature(result) == signature(run_reference(rules, facts, params))
