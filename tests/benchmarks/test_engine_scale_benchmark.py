"""benchmarks/engine_scale.py: its synthetic network gives the findings its doc promises, and its
budget line fails the run when the growth is over budget (small sizes here; figures in benchmarks)."""

from __future__ import annotations

from collections import Counter

from advisor.engine.loading import load_packs
from advisor.engine.runner import run_rules
from benchmarks.engine_scale import OVERFLOW_ONSETS, main, make_facts


def test_the_synthetic_network_has_entries_overflows_and_explained_symptoms():
    result = run_rules(load_packs(installed=False).rules, make_facts(400))
    kinds = Counter(f.kind for f in result.findings)
    assert kinds["input_mismatch"] == 1 and kinds["fp16_overflow"] == OVERFLOW_ONSETS
    assert kinds["problem_node"] > 80 and Counter(f.rule for f in result.findings)["absorbed-deviation"] > 0
    rules = Counter(rule for _, _, rule in result.every_explanation())
    assert {"input-mismatch-explains-downstream", "overflow-explains-inherited", "specific-cause-explains-problem-node",
            "forward-explains-backward", "training-cause-explains-downstream"} <= set(rules)
    assert kinds["argument_mismatch"] > 0
    assert {g.rule for g in result.groups} >= {"forward-explains-backward", "training-cause-explains-downstream"}


def test_the_budget_line_passes_or_fails_the_run(capsys):
    assert main(["--sizes", "40", "120", "--repeat", "1", "--budget", "1000"]) == 0
    assert main(["--sizes", "40", "120", "--repeat", "1", "--budget", "0"]) == 1
    out = capsys.readouterr().out
    assert "s per 1k facts" in out and "SUPERLINEAR" in out and ": ok" in out
