"""What durable_rules is given, and what the findings still show: facts travel with only the fields
some condition reads, rules of several patterns are joined by index, and a large run's facts are
spread over states of FACTS_PER_STATE facts (engine/runner.py, engine/durable_host.py)."""

from __future__ import annotations

from pathlib import Path

import durable_rules_engine
import pytest

from advisor.engine.conditions import split_joins
from advisor.engine.packs import load_pack
from advisor.engine.runner import FACTS_PER_STATE, run_rules
from advisor.errors import EngineError

from .test_pack_validation import make_pack

CORE = Path(__file__).resolve().parents[2] / "rules" / "core"
KEEP_FP32 = ",".join(f"LayerNorm_{n}/Pow" for n in range(200))     # ~3 KB, as select.py writes it for a big model


@pytest.fixture(scope="module")
def core_rules():
    return {rule.id: rule for rule in load_pack(CORE).rules}


@pytest.fixture
def asserted(monkeypatch):
    """The JSON texts durable_rules is handed."""
    texts: list[str] = []
    original = durable_rules_engine.assert_facts

    def recording(handle, text):
        texts.append(text)
        return original(handle, text)

    monkeypatch.setattr(durable_rules_engine, "assert_facts", recording)
    return texts


def _overflowing_ops(count: int) -> list[dict]:
    return [{"fact": "network", "id": "network", "output_deviates": True, "overflow_entries": count}] + [
        {"fact": "op", "id": f"op:{n}", "index": n, "op": f"Pow_{n}", "op_type": "Pow", "dtype": "float16",
         "out_overflow": True, "inputs_overflow": False, "output_deviates": True, "out_deviates": True,
         "inputs_agree": True, "out_cosine": 0.5, "downstream_deviating": count - n, "keep_fp32": KEEP_FP32}
        for n in range(count)]


def test_a_field_only_the_evidence_reads_stays_out_of_durable_rules_and_in_the_finding(core_rules, asserted):
    """fp16-overflow emits keep_fp32 (the ops to keep in FP32) but no condition reads it."""
    result = run_rules([core_rules["fp16-overflow"]], _overflowing_ops(2))
    assert [f.values["keep_fp32"] for f in result.findings] == [KEEP_FP32, KEEP_FP32]
    assert all("is the first op whose output overflows FP16" in f.evidence["en"] for f in result.findings)
    assert sorted(f.evidence["en"][:20] for f in result.findings) == ["Pow_0 (Pow, float16)", "Pow_1 (Pow, float16)"]
    assert asserted and not any("keep_fp32" in text or "LayerNorm_1" in text for text in asserted)
    assert all('"out_overflow"' in text for text in asserted[:1])    # what a condition reads does travel


TEAM_JOIN = """\
id: same-golden-twice
title: {en: Two ops share their golden op, zh: 两个算子共用标杆算子}
severity: warning
docs:
  en: {what: Two target ops were matched to one golden op., why: A pairing mistake., fix: Check the mapping.}
  zh: {what: 两个目标算子匹配到同一个标杆算子。, why: 配对错误。, fix: 检查映射。}
when:
  - as: first
    fact: op
    out_deviates: true
  - as: second
    fact: op
    golden_ops: $first.golden_ops
    index: {gt: $first.index}
emit:
  kind: argument_mismatch
  subject: second
  confidence: 0.5
  evidence: {en: "{{ second.op }} and {{ first.op }} share {{ second.golden_ops }}",
             zh: "{{ second.op }} 与 {{ first.op }} 共用 {{ second.golden_ops }}"}
cases:
  - name: two ops, one golden op
    expect: fire
    facts:
      - {fact: op, id: "op:1", index: 1, op: Conv_1, out_deviates: true, golden_ops: conv1}
      - {fact: op, id: "op:2", index: 2, op: Conv_2, golden_ops: conv1}
  - name: two golden ops
    expect: silent
    facts:
      - {fact: op, id: "op:1", index: 1, op: Conv_1, out_deviates: true, golden_ops: conv1}
      - {fact: op, id: "op:2", index: 2, op: Conv_2, golden_ops: conv2}
"""


def test_a_team_rule_joining_on_a_field_no_literal_reads_still_matches(tmp_path, asserted):
    rule = load_pack(make_pack(tmp_path, TEAM_JOIN)).rules[0]
    ops = [{"fact": "op", "id": f"op:{n}", "index": n, "op": f"Conv_{n}", "out_deviates": True, "golden_ops": golden}
           for n, golden in enumerate(["conv1", "conv2", "conv1", "conv3", "conv2"])]
    found = {f.op: f.evidence["en"] for f in run_rules([rule], ops).findings}
    assert found == {"Conv_2": "Conv_2 and Conv_0 share conv1", "Conv_4": "Conv_4 and Conv_1 share conv2"}
    assert not any("golden_ops" in text for text in asserted)      # joined here, on the facts as built


def test_facts_beyond_one_state_still_join_and_explain_each_other(core_rules):
    """The network fact lands in the first state, most ops in later ones: the joins (network x op)
    and the explanations (a finding of one round explaining another) do not care."""
    count = 2 * FACTS_PER_STATE + 5
    rules = [core_rules[r] for r in ("fp16-overflow", "problem-node", "specific-cause-explains-problem-node")]
    result = run_rules(rules, _overflowing_ops(count))
    assert sorted(f.id for f in result.findings) == sorted(
        [f"fp16-overflow@{n}" for n in range(count)] + [f"problem-node@{n}" for n in range(count)])
    explained = {symptom: cause for cause, symptom, _ in result.every_explanation()}
    assert explained == {f"problem-node@{n}": f"fp16-overflow@{n}" for n in range(count)}


def test_two_facts_with_one_id_fail_the_run(core_rules):
    """durable_rules only notices within one state; the engine checks every round's batch."""
    facts = _overflowing_ops(3)
    facts[3] = {**facts[3], "id": facts[1]["id"]}
    with pytest.raises(EngineError, match="share the id 'op:0'"):
        run_rules([core_rules["fp16-overflow"]], facts)
    # a fact named like a finding of the first round clashes when the finding is asserted back
    named_like_a_finding = {"fact": "evidence", "id": "fp16-overflow@2", "index": 2}
    with pytest.raises(EngineError, match="share the id 'fp16-overflow@2'"):
        run_rules([core_rules["fp16-overflow"]], _overflowing_ops(3) + [named_like_a_finding])


def test_a_presence_test_is_matched_by_durable_rules_never_joined():
    condition = {"$and": [{"fact": "op"}, {"$nex": {"next_entry_index": 1}}, {"index": {"cause": "index"}}]}
    kept, guards = split_joins("symptom", condition)
    assert kept == {"$and": [{"fact": "op"}, {"$nex": {"next_entry_index": 1}}]}
    assert [(g.field, g.other_alias, g.other_field) for g in guards] == [("index", "cause", "index")]
