"""Python measures, rules judge: the verdicts "error enters here", "absorbed", "consistent" and an
entry's confidence are rule parameters an expert can change, and the op facts the rules see are
chosen by what matters, so a big comparison with a broken output never passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.loading import load_pack
from advisor.engine.runner import run_rules

from ..conftest import scenario_csv, scenario_dirs
from .test_builder import facts_for, row

CORE = Path(__file__).resolve().parents[2] / "rules" / "core"
SPD_PROBLEM = next(d for d in scenario_dirs() if d.name.startswith("mixed_spd_problem__"))


def test_an_absorbed_entry_becomes_the_cause_when_an_expert_demands_a_cleaner_recovery(run_cli):
    # The early int8 attention error (MatMul_26) recovers to cosine ~0.9999 before the Softmax over
    # the wrong axis (Softmax_74) breaks the output.
    plain = run_cli(scenario_csv(SPD_PROBLEM), "--format", "json").report()
    assert (plain["root_cause"]["kind"], plain["root_cause"]["op"]) == ("problem_node", "Softmax_74")
    # absorbed_cosine is the core pack's: one --set moves every rule that reads it together.
    strict = run_cli(scenario_csv(SPD_PROBLEM), "--format", "json", "--set", "core.absorbed_cosine=1.0").report()
    assert (strict["root_cause"]["kind"], strict["root_cause"]["op"]) == ("problem_node", "MatMul_26")
    assert {rule: params for rule, params in strict["overrides"]["params"].items()} == {
        rule: {"absorbed_cosine": 1.0} for rule in ("absorbed-deviation", "fused-op-problem", "problem-node",
                                                    "residual-fault")}


def _flickering_chain(entries: int) -> list[str]:
    """A network whose early ops each deviate on agreeing inputs and recover (a residual stream
    drowning small errors), then one late op whose error reaches the output."""
    rows = [row(0, "Data", "input", "output", 1.0)]
    index = 1
    for _ in range(entries):
        for cos_in, cos_out in ((1.0, 0.95), (0.95, 0.99999), (0.99999, 0.99999), (0.99999, 0.99999),
                                (0.99999, 0.99999)):
            red = 0.3 if cos_out < 0.99 else 0.001
            rows += [row(index, "Add", f"Add_{index}", "input", cos_in, 0.3 if cos_in < 0.99 else 0.001),
                     row(index, "Add", f"Add_{index}", "output", cos_out, red)]
            index += 1
    rows += [row(index, "Softmax", f"Softmax_{index}", "input", 0.99999),
             row(index, "Softmax", f"Softmax_{index}", "output", 0.4, 0.9),
             row(index + 1, "Cast", f"Cast_{index + 1}", "input", 0.4, 0.9),
             row(index + 1, "Cast", f"Cast_{index + 1}", "output", 0.4, 0.9)]
    return rows


@pytest.mark.parametrize("cap", [1, 3, 10, 2000])
def test_a_broken_output_gets_its_problem_node_at_any_cap(tmp_path, cap):
    facts = facts_for(tmp_path, _flickering_chain(40), max_op_facts=cap)
    late = max(f["index"] for f in facts.op_facts if f.get("error_enters"))
    assert late == 201 and facts.network["output_deviates"]
    result = run_rules(load_pack(CORE).rules, facts.all_facts())
    roots = {(f.kind, f.index) for f in result.findings if f.severity == "error"}
    assert ("problem_node", 201) in roots
    assert not any(f.kind == "consistent" for f in result.findings)
    left_out = facts.network["op_facts_left_out"]
    assert left_out == facts.network["notable_ops"] - len(facts.op_facts)
    assert bool(left_out) == any("left out" in w for w in facts.warnings)


def test_the_recovery_after_an_entry_is_measured_not_judged(tmp_path):
    facts = facts_for(tmp_path, _flickering_chain(3))
    entries = sorted((f for f in facts.op_facts if f.get("error_enters")), key=lambda f: f["index"])
    (first, second), last = entries[:2], entries[-1]
    assert first["next_entry_index"] == second["index"] and second["previous_entry_index"] == first["index"]
    assert first["clean_streak"] == 3 and first["recovered_cosine"] == pytest.approx(0.99999)
    assert "next_entry_index" not in last     # the last entry: no rule can call it absorbed


@pytest.fixture(scope="module")
def llm_200k(tmp_path_factory):
    """A 200k-row FP16 decoder comparison (benchmarks/_llm_comparison.py): slow drift, then an FP16
    overflow at ~62 % depth that breaks the output."""
    from benchmarks._llm_comparison import write_llm_comparison
    return write_llm_comparison(tmp_path_factory.mktemp("llm") / "result_20240101000000.csv", 200_000)


@pytest.mark.parametrize("cap", ["1", "2000"])
def test_a_200k_row_comparison_with_a_broken_output_never_passes(run_cli, llm_200k, cap):
    # A tight FP16 cosine makes the drift flicker across it: thousands of early entries that recover,
    # far more than the cap, before the late overflow.
    run = run_cli(llm_200k.path, "--threshold", "float16.cosine=0.99995", "--max-op-facts", cap,
                  "--fail-on", "error", "--format", "json")
    report = run.report()
    assert run.code == 1 and report["network"]["output_deviates"]
    assert report["verdict"] not in ("consistent", "single_point_deviation")
    assert report["network"]["op_facts_left_out"] > 0
    assert any("left out" in warning for warning in report["warnings"])
