"""The engine around durable_rules: the traps DESIGN.md lists, each pinned by a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.durable_host import SynchronousHost, encode_facts
from advisor.engine.packs import PackProblems, load_pack
from advisor.engine.runner import run_rules
from advisor.errors import EngineError

from .test_pack_validation import GOOD_RULE, make_pack


@pytest.fixture
def pow_rule(tmp_path: Path):
    return load_pack(make_pack(tmp_path)).rules[0]


POW = {"fact": "op", "id": "op:1", "index": 1, "op": "Pow_1", "op_type": "Pow", "dtype": "float16"}


def test_facts_no_rule_matches_do_not_lose_the_batch(pow_rule):
    # Without a catch-all rule, durable_rules raises MessageNotHandledException for the network
    # fact and drops the actions of the whole batch.
    facts = [{"fact": "network", "id": "network", "ops": 3}, POW,
             {"fact": "op", "id": "op:2", "index": 2, "op": "Add_2", "op_type": "Add"}]
    result = run_rules([pow_rule], facts)
    assert [f.op for f in result.findings] == ["Pow_1"]


@pytest.mark.parametrize("value", [1e-5, 1e-300, 1e16, 1e20, float("inf"), float("-inf"), 0.0, -2.5e-7])
def test_numbers_durable_rules_cannot_parse_are_encoded_positionally(pow_rule, value):
    # durable_rules' C parser segfaults or hangs on 1e-05 / 1e+16 (what json.dumps writes).
    assert "e" not in encode_facts([{"v": value}]).replace("true", "").lower()
    result = run_rules([pow_rule], [{**POW, "out_kl": value}])
    assert len(result.findings) == 1


def test_evidence_shows_the_original_numbers_not_the_encoded_ones(tmp_path):
    rule_text = GOOD_RULE.replace('"{{ m.op }} is a Pow in FP16"', '"kl {{ m.out_kl | num }}"')
    rule = load_pack(make_pack(tmp_path, rule_text)).rules[0]
    (finding,) = run_rules([rule], [{**POW, "out_kl": float("inf")}]).findings
    assert finding.evidence["en"] == "kl inf"


def test_two_runs_in_one_process_never_see_each_others_facts(pow_rule):
    assert len(run_rules([pow_rule], [POW]).findings) == 1
    assert run_rules([pow_rule], [{**POW, "dtype": "float32"}]).findings == []
    # Same rule, same fact again: a fresh ruleset, so no MessageObservedException either.
    assert len(run_rules([pow_rule], [POW]).findings) == 1


def test_an_exception_inside_an_action_fails_the_run_naming_the_rule(tmp_path):
    """A template that fails only on the matched fact (index 1), not on validation's sample facts."""
    rule_text = GOOD_RULE.replace('"{{ m.op }} is a Pow in FP16"', '"{{ 1 // (m.index - 1) }}"')
    rule = load_pack(make_pack(tmp_path, rule_text)).rules[0]
    with pytest.raises(EngineError, match="rule 'pow-in-fp16'.*ZeroDivisionError"):
        run_rules([rule], [POW])


def test_a_template_that_fails_on_any_fact_fails_validation_naming_its_line(tmp_path):
    rule_text = GOOD_RULE.replace('"{{ m.op }} is a Pow in FP16"', '"{{ 1 // 0 }}"')
    with pytest.raises(PackProblems, match=r"rule.yaml:\d+:\d+: evidence.en: template error .*ZeroDivisionError"):
        load_pack(make_pack(tmp_path, rule_text))


def test_findings_become_facts_that_other_rules_explain():
    core = load_pack(Path(__file__).resolve().parents[2] / "rules" / "core")
    rules = {r.id: r for r in core.rules}
    facts = [{"fact": "network", "id": "network", "output_deviates": True, "output_known": True},
             {"fact": "op", "id": "op:4", "index": 4, "op": "Pow_4", "out_overflow": True, "inputs_overflow": False,
              "out_deviates": True, "inputs_agree": True, "output_deviates": True}]
    explain = "specific-cause-explains-problem-node"
    result = run_rules([rules["fp16-overflow"], rules["problem-node"], rules[explain]], facts)
    assert {f.id for f in result.findings} == {"fp16-overflow@4", "problem-node@4"}
    assert result.explanations == [("fp16-overflow@4", "problem-node@4", explain)]


def test_parameters_can_be_overridden_per_run():
    core = load_pack(Path(__file__).resolve().parents[2] / "rules" / "core")
    rule = next(r for r in core.rules if r.id == "problem-node")
    facts = [{"fact": "network", "id": "network", "output_deviates": True},
             {"fact": "op", "id": "op:4", "index": 4, "op": "Conv_4", "out_deviates": True, "inputs_agree": True,
              "inputs_from": "input_rows", "out_cosine": 0.999}]    # confidence 0.6 + 0.35 * 0.001 / 0.05
    assert [f.confidence for f in run_rules([rule], facts).findings] == [0.607]
    assert run_rules([rule], facts, {"problem-node": {"min_confidence": 0.7}}).findings == []
    assert [f.confidence for f in run_rules([rule], facts, {"problem-node": {"confidence_input_rows": 0.5}})
            .findings] == [0.507]


def test_alternatives_next_to_a_join_reference_all_match(tmp_path):
    # durable_rules drops alternatives of an $or that sits beside a join reference; `in`/`any` are
    # therefore expanded into separate durable rules. Both alternatives must match here.
    core = load_pack(Path(__file__).resolve().parents[2] / "rules" / "core")
    rule = next(r for r in core.rules if r.id == "specific-cause-explains-problem-node")
    assert len(rule.compile_when()) == 2
    facts = [{"fact": "finding", "id": "o@12", "kind": "fp16_overflow", "index": 12, "root_cause": True},
             {"fact": "finding", "id": "p@12", "kind": "problem_node", "index": 12, "root_cause": True},
             {"fact": "finding", "id": "s@12", "kind": "single_point_deviation", "index": 12, "root_cause": True},
             {"fact": "finding", "id": "p@30", "kind": "problem_node", "index": 30, "root_cause": True}]
    explained = sorted(symptom for cause, symptom, _ in run_rules([rule], facts).every_explanation())
    assert explained == ["p@12", "s@12"]


def test_many_rulesets_in_one_process_stay_sound():
    # durable_rules 2.0.28 corrupted memory on ordering joins inside an $and (a segfault some twenty
    # rulesets later, found with AddressSanitizer); those joins are guards now. Every built-in fact case,
    # twenty times over, in one process: a regression kills the test run. (Input cases make the same
    # rulesets after a whole pipeline each, --verify replays among them: they run once, in
    # tests/rules/test_builtin_rule_cases.py.)
    from advisor.engine.cases import run_case
    core = load_pack(Path(__file__).resolve().parents[2] / "rules" / "core")
    for _ in range(20):
        assert all(run_case(rule, case).passed for rule in core.rules for case in rule.cases)


def test_ordering_joins_are_checked_as_guards():
    core = load_pack(Path(__file__).resolve().parents[2] / "rules" / "core")
    rule = next(r for r in core.rules if r.id == "input-mismatch-explains-downstream")
    alternatives = rule.compile_when()
    assert any(a.guards for a in alternatives)
    text = str([a.all for a in alternatives])
    assert "$gt" not in text and "$neq" not in text     # durable_rules never sees an ordering join


def test_a_confidence_template_is_rendered_for_each_value_of_the_fields_it_reads(tmp_path):
    """Confidences are rendered once per distinct value of what the template reads: ops with other
    values (1 and 1.0 and true are three) never share a confidence, ops with the same ones do."""
    confidence = ('"{{ 0.5 if m.out_cosine is sameas true else (0.2 if m.out_cosine is float else 0.1) '
                  '+ m.out_cosine / 100 }}"')
    rule_text = GOOD_RULE.replace("confidence: 0.4", f"confidence: {confidence}")
    rule = load_pack(make_pack(tmp_path, rule_text)).rules[0]
    weights = [True, 1, 1.0, 3, 3, 7.5]
    facts = [{**POW, "id": f"op:{n}", "index": n, "op": f"Pow_{n}", "out_cosine": w} for n, w in enumerate(weights, 1)]
    found = {f.op: f.confidence for f in run_rules([rule], facts).findings}
    assert found == {"Pow_1": 0.5, "Pow_2": 0.11, "Pow_3": 0.21, "Pow_4": 0.13, "Pow_5": 0.13, "Pow_6": 0.275}


def test_an_exception_an_action_lets_escape_ends_the_assertion_with_it():
    """The stock durable_rules loop stores it on the state where nobody reads it."""
    def broken(match):
        raise RuntimeError(f"broken on {match._m['m']['id']}")

    host = SynchronousHost({"broken_run": {"r": {"all": [{"m": {"fact": "op"}}], "run": broken}}})
    with pytest.raises(RuntimeError, match="broken on op:1"):
        host.assert_facts("broken_run", [POW])
