"""Explanations kept as groups rank exactly as their pairs do, and the built-in rule packs keep the
product-shaped explain rules (forward explains backward) as groups, never pair by pair."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from advisor.diagnosis import Finding
from advisor.engine.explain import ExplanationGroup
from advisor.engine.packs import load_pack
from advisor.engine.ranking import rank_findings
from advisor.engine.runner import run_rules
from tests.engine.reference import run_reference

KINDS = ("fp16_overflow", "problem_node", "input_mismatch", "argument_mismatch", "note")
CORE = Path(__file__).resolve().parents[2] / "rules" / "core"


def random_findings(seed: int, count: int = 60) -> list[Finding]:
    pick = random.Random(seed)
    findings = []
    for n in range(count):
        kind = pick.choice(KINDS)
        severity = "info" if kind == "note" else pick.choice(("error", "warning", "info"))
        findings.append(Finding(id=f"f{n}", rule=kind, pack="core", kind=kind, severity=severity,
                                title={"en": kind, "zh": kind}, op=f"op{n}", index=pick.randrange(30),
                                root_cause=kind != "note" and pick.random() < 0.8))
    return findings


def random_groups(findings: list[Finding], seed: int) -> list[ExplanationGroup]:
    pick = random.Random(seed + 1000)
    groups = []
    for relation in (None, "$lt", "$lte", "$gt", "$gte", None):
        causes = [(f.id, f.index) for f in pick.sample(findings, pick.randrange(1, 12))]
        symptoms = [(f.id, f.index) for f in pick.sample(findings, pick.randrange(1, 30))]
        groups.append(ExplanationGroup(f"rule{relation}", causes, symptoms, relation))
    # a cause that is no finding explains nothing
    groups.append(ExplanationGroup("ghost", [("ghost", 0)], [(findings[0].id, 5)], None))
    return groups


def outcome(ordered: list[Finding]) -> list[tuple]:
    return [(f.id, f.explained_by, tuple(f.explains)) for f in ordered]


@pytest.mark.parametrize("seed", range(40))
def test_groups_rank_as_their_pairs(seed):
    findings = random_findings(seed)
    groups = random_groups(findings, seed)
    pairs = [pair for group in groups for pair in group.pairs()]
    root_pairs, by_pairs = rank_findings(findings, pairs, {})
    expected = outcome(by_pairs)
    root_groups, by_groups = rank_findings(findings, [], {}, groups)
    assert (root_groups and root_groups.id) == (root_pairs and root_pairs.id)
    assert outcome(by_groups) == expected


def test_a_group_counts_its_pairs_without_the_fact_itself():
    group = ExplanationGroup("r", [("a", 1), ("b", 2), ("c", 3)], [("b", 2), ("c", 3), ("d", 9)], "$lt")
    assert sorted(group.pairs()) == [("a", "b", "r"), ("a", "c", "r"), ("a", "d", "r"), ("b", "c", "r"),
                                     ("b", "d", "r"), ("c", "d", "r")]
    assert group.count() == 6


def test_forward_explains_backward_is_one_group_not_a_product():
    rule = next(r for r in load_pack(CORE).rules if r.id == "forward-explains-backward")
    facts = [{"fact": "finding", "id": f"{direction}{i}", "kind": "problem_node", "index": i, "root_cause": True,
              "direction": direction} for direction in ("forward", "backward") for i in range(2000)]
    result = run_rules([rule], facts)
    assert result.explanations == [] and len(result.groups) == 1
    assert result.fired["forward-explains-backward"] == 2000 * 2000
    assert len(result.groups[0].causes) == len(result.groups[0].symptoms) == 2000


def test_grouped_rules_match_what_the_reference_matcher_pairs():
    rules = [r for r in load_pack(CORE).rules if r.explain]
    pick = random.Random(3)
    kinds = ["fp16_overflow", "input_mismatch", "problem_node", "argument_mismatch", "rgb_bgr_swap", "residual_fault"]
    facts = [{"fact": "finding", "id": f"f{i}", "kind": pick.choice(kinds), "index": pick.randrange(20),
              "root_cause": pick.random() < 0.7, "inputs_agree": pick.random() < 0.5,
              "direction": pick.choice(["forward", "backward"])} for i in range(80)]
    engine = run_rules(rules, facts)
    assert engine.groups, "the product-shaped rules are grouped"
    reference = run_reference(rules, facts)
    assert sorted(engine.every_explanation()) == sorted(reference.explanations)
    assert {r: n for r, n in engine.fired.items() if n} == {r: n for r, n in reference.fired.items() if n}
