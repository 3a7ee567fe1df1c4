"""Every built-in rule proves itself: its own cases (must fire / must stay silent) run here, one test
per case, through the real durable_rules engine."""

from __future__ import annotations

import pytest

from advisor.engine.cases import run_case
from advisor.engine.loading import load_packs

# Every built-in pack, whichever command loads it (advisor run's packs, advisor post's).
RULES = [rule for command in ("run", "post") for rule in load_packs(installed=False, command=command).rules]
CASES = [(rule, case) for rule in RULES for case in rule.cases]


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.id}::{c['name']}" for r, c in CASES])
def test_rule_case(rule, case):
    result = run_case(rule, case)
    assert result.error is None, result.error
    assert result.fired == (case["expect"] == "fire"), (
        f"{rule.id}: expected to {case['expect']} on '{case['name']}'")


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_is_documented_and_has_both_kinds_of_case(rule):
    assert set(rule.title) == {"en", "zh"}
    assert rule.severity in ("error", "warning", "info")
    for lang in ("en", "zh"):
        assert all(rule.docs[lang][section].strip() for section in ("what", "why", "fix"))
    assert {case["expect"] for case in rule.cases} == {"fire", "silent"}


def test_rule_ids_are_unique_across_builtin_packs():
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
