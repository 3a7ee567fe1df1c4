"""Rules joined by ordering comparisons fire once per true match, never per pair, and agree with
the reference matcher for join shapes the built-in rules do not use (three patterns, equality and
ordering joins together, joins between op facts and findings made in a later round)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from advisor.engine.packs import load_pack
from advisor.engine.runner import run_rules
from tests.engine.reference import run_reference

from .test_reference_oracle import signature

HEAD = """\
title: {{en: {id}, zh: {id}}}
severity: warning
docs:
  en: {{what: w, why: y, fix: f}}
  zh: {{what: w, why: y, fix: f}}
"""
CASES = """\
cases:
  - {name: fires, expect: fire, facts: [{fact: network, id: network}]}
  - {name: silent, expect: silent, facts: [{fact: network, id: network}]}
"""
RULES = {
    "entry.yaml": """\
id: entry
root_cause: true
when: {fact: op, error_enters: true}
emit: {kind: problem_node, evidence: {en: "entry {{ m.op }}", zh: "entry {{ m.op }}"}}
""",
    "worse-later.yaml": """\
id: worse-later
when:
  - {as: net, fact: network, output_deviates: true}
  - {as: first, fact: op, error_enters: true}
  - as: later
    fact: op
    index: {gt: $first.index}
    out_cosine: {lt: $first.out_cosine}
    op_type: $first.op_type
emit: {kind: single_point_deviation, subject: later,
       evidence: {en: "{{ later.op }} after {{ first.op }}", zh: "{{ later.op }} after {{ first.op }}"}}
""",
    "earlier-explains.yaml": """\
id: earlier-explains
when:
  - {as: cause, fact: finding, kind: problem_node}
  - as: symptom
    fact: finding
    index: {gte: $cause.index}
    confidence: {lte: $cause.confidence}
    kind: {ne: problem_node}
explain: {cause: cause, symptom: symptom}
""",
    "other-op-same-type.yaml": """\
id: other-op-same-type
when:
  - {as: f, fact: finding, kind: single_point_deviation}
  - as: op
    fact: op
    op_type: $f.op_type
    index: {ne: $f.index}
    any: [{out_cosine: {lt: 0.5}}, {out_red: {gt: 0.5}}]
emit: {kind: fused_op_problem, subject: op, evidence: {en: "{{ op.op }}", zh: "{{ op.op }}"}}
""",
}


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    pack = tmp_path_factory.mktemp("joins") / "joins"
    pack.mkdir()
    (pack / "pack.yaml").write_text('pack: joins\nversion: "0.1.0"\n', encoding="utf-8")
    for name, text in RULES.items():
        rule_id = name.removesuffix(".yaml")
        (pack / name).write_text(text.replace("\n", "\n" + HEAD.format(id=rule_id), 1) + CASES, encoding="utf-8")
    return load_pack(Path(pack)).rules


def random_facts(seed: int, ops: int = 60) -> list[dict]:
    rng = random.Random(seed)
    facts = [{"fact": "network", "id": "network", "output_deviates": True}]
    indexes = rng.sample(range(ops * 2), ops)     # asserted out of order, as a fact builder may
    for i in range(ops):
        fact = {"fact": "op", "id": f"op:{i}", "index": indexes[i], "op": f"Op_{i}",
                "op_type": rng.choice(["Conv", "MatMul", "Add"]), "error_enters": rng.random() < 0.2,
                "out_cosine": round(rng.random(), 2), "out_red": round(rng.random(), 2)}
        if rng.random() < 0.1:
            del fact["out_cosine"]          # a missing field never matches
        facts.append(fact)
    return facts


@pytest.mark.parametrize("seed", range(8))
def test_joins_agree_with_the_reference_matcher(rules, seed):
    facts = random_facts(seed)
    engine = run_rules(rules, facts)
    # 'worse-later' matches one later op after several entries: the evidence names whichever came first
    assert signature(engine, evidence=False) == signature(run_reference(rules, facts), evidence=False)
    assert engine.findings and engine.explanations        # every join shape had something to match


def test_an_ordering_join_fires_once_per_match_not_per_pair(rules):
    explain = next(rule for rule in rules if rule.id == "earlier-explains")
    findings = [{"fact": "finding", "id": f"c{i}", "kind": "problem_node", "index": i, "confidence": 0.9}
                for i in range(200)]
    findings += [{"fact": "finding", "id": f"s{i}", "kind": "single_point_deviation", "index": i, "confidence": 0.5}
                 for i in range(200)]
    result = run_rules([explain], findings)
    # 200 causes x 200 symptoms are 40,000 pairs; 20,100 of them have the symptom at or after the cause.
    assert len(result.explanations) == 20_100
    assert result.fired["earlier-explains"] == 20_100
