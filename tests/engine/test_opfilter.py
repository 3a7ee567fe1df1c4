"""Every op is visible to every rule: the op facts are the ops some rule of the run may match,
decided over the whole ops table (engine.opfilter). A team rule about any op fires on every op it
describes, the filter never costs a built-in rule a finding, and under --max-op-facts the places go
round the rules, never to an op no rule can match."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from advisor.cli import main
from advisor.engine.judgement import builtin_judgement
from advisor.engine.loading import load_packs, select_rules
from advisor.engine.opfilter import op_candidates
from advisor.engine.runner import run_rules
from advisor.facts.builder import build_facts
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison

DATA = Path(__file__).resolve().parents[1] / "data"
# A transformer in FP16 whose embedding overflows: its three Softmax ops deviate, none is where error enters.
TRANSFORMER = (DATA / "scenarios" / "fp16_overflow__byte_transformer__embedding_outliers__s0"
               / "result_20240506112307.csv")
SCENARIOS = sorted((DATA / "scenarios").glob("*/result_*.csv"))
MSPROBE = sorted((DATA / "msprobe_faults").glob("*_statistics.csv"))


SOFTMAX_CASES = [
    {"name": "a softmax off the golden run", "expect": "fire",
     "facts": [{"fact": "op", "id": "op:7", "index": 7, "op": "Softmax_7", "op_type": "Softmax", "out_cosine": 0.9}]},
    {"name": "a softmax on it", "expect": "silent",
     "facts": [{"fact": "op", "id": "op:7", "index": 7, "op": "Softmax_7", "op_type": "Softmax",
                "out_cosine": 0.99999}]}]


def _team_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str], when: dict, cases: list = SOFTMAX_CASES) -> Path:
    assert main(["rules", "new", "teampack", "--dir", str(tmp_path)]) == 0
    rule_file = next((tmp_path / "teampack").glob("teampack-*.yaml"))
    rule = yaml.safe_load(rule_file.read_text(encoding="utf-8"))
    rule["when"] = when
    rule["cases"] = cases
    rule_file.write_text(yaml.safe_dump(rule, allow_unicode=True, sort_keys=False), encoding="utf-8")
    assert main(["rules", "validate", str(tmp_path / "teampack")]) == 0
    assert main(["rules", "test", str(tmp_path / "teampack")]) == 0
    capsys.readouterr()
    return tmp_path / "teampack"


@pytest.mark.parametrize("max_cosine", [0.99, 0.9])
def test_a_team_rule_on_op_type_and_cosine_fires_on_every_op_it_describes(tmp_path, capsys, run_cli, max_cosine):
    pack = _team_rule(tmp_path, capsys, {"fact": "op", "op_type": {"in": ["Softmax", "SoftmaxV2"]},
                                         "out_cosine": {"lt": "${max_cosine}"}})
    ops = build_facts(read_comparison(TRANSFORMER), load_thresholds(), judge=builtin_judgement()).ops
    qualifying = ops[ops["op_type"].isin(["Softmax", "SoftmaxV2"]) & (ops["out_cosine"] < max_cosine)]
    notable = ops[ops["error_enters"] | ops["hidden_entry"] | ops["is_output"] | ops["is_input"]]
    assert len(qualifying) >= 2 and not set(qualifying["op"]) <= set(notable["op"])  # the case the gate hid

    result = run_cli(TRANSFORMER, "--rules", pack, "--set", f"teampack-slow-softmax.max_cosine={max_cosine}",
                     "--format", "json")
    assert result.code in (0, 1), result.err
    fired = {f["op"] for f in result.report()["findings"] if f["rule"] == "teampack-slow-softmax"}
    assert fired == set(qualifying["op"])


def test_ops_no_rule_asks_for_stay_out_of_the_engine():
    rules = select_rules(load_packs().rules)
    for path in (TRANSFORMER, *MSPROBE[:3]):
        facts = build_facts(read_comparison(path), load_thresholds(),
                            wanted=lambda columns, n: op_candidates(rules, {}, columns, n), judge=builtin_judgement())
        assert 0 < len(facts.op_facts) < len(facts.ops), path.name


def _name(path: Path) -> str:
    return path.stem if path.parent.name == "msprobe_faults" else path.parent.name


@pytest.mark.parametrize("path", [*SCENARIOS, *MSPROBE], ids=_name)
def test_the_filter_costs_no_built_in_rule_a_finding(path):
    """Asserting every op or only the filtered ones gives the same findings: the filter keeps every op
    some rule matches."""
    rules = select_rules(load_packs().rules)
    table = read_comparison(path)
    thresholds = load_thresholds()
    chosen = build_facts(table, thresholds, wanted=lambda columns, n: op_candidates(rules, {}, columns, n),
                         judge=builtin_judgement())
    every = build_facts(table, thresholds, wanted=lambda columns, n: np.ones(n, dtype=bool), judge=builtin_judgement())
    assert len(every.op_facts) == len(every.ops)

    def findings(facts) -> set:
        return {(f.rule, f.op, f.index, f.kind) for f in run_rules(rules, facts.all_facts()).findings}

    assert findings(chosen) == findings(every)


def test_under_the_cap_no_place_goes_to_an_op_no_rule_can_match(training_20k):
    rules = select_rules(load_packs().rules)
    asked = {}

    def wanted(columns, n):
        asked["by_rule"] = op_candidates(rules, {}, columns, n)
        return asked["by_rule"]

    facts = build_facts(read_comparison(training_20k), load_thresholds(), wanted=wanted, max_op_facts=300,
                        judge=builtin_judgement())
    candidates = np.atleast_2d(asked["by_rule"]).any(axis=0)
    unmatchable_outputs = facts.ops["is_output"].to_numpy(dtype=bool) & ~candidates
    assert unmatchable_outputs.sum() > 300     # notable, but no rule can match them: enough to fill every place
    chosen = facts.ops.index.get_indexer([fact["index"] for fact in facts.op_facts])
    assert len(chosen) == 300 and candidates[chosen].all()
    assert facts.network["op_facts_left_out"] == candidates.sum() - 300


FP16_SOFTMAX = {"fact": "op", "op_type": {"in": ["Softmax", "Torch.softmax"]}, "dtype": "float16"}
FP16_SOFTMAX_CASES = [
    {"name": "a softmax in FP16", "expect": "fire",
     "facts": [{"fact": "op", "id": "op:7", "index": 7, "op": "Softmax_7", "op_type": "Softmax", "dtype": "float16"}]},
    {"name": "a softmax in FP32", "expect": "silent",
     "facts": [{"fact": "op", "id": "op:7", "index": 7, "op": "Softmax_7", "op_type": "Softmax",
                "dtype": "float32"}]}]


def test_a_team_rule_gets_its_share_of_the_cap(tmp_path, capsys, run_cli, training_20k):
    """Built-in rules may match 939 ops of this run; at a cap of 300 the team rule's Softmax ops still
    get places beside theirs, and with the cap raised every one of them is a finding."""
    pack = _team_rule(tmp_path, capsys, FP16_SOFTMAX, FP16_SOFTMAX_CASES)
    ops = build_facts(read_comparison(training_20k), load_thresholds(), judge=builtin_judgement()).ops
    qualifying = set(ops.loc[(ops["op_type"] == "Torch.softmax") & (ops["dtype"] == "float16"), "op"])
    assert len(qualifying) > 100

    def fired(cap: int) -> tuple[set, dict]:
        report = run_cli(training_20k, "--rules", pack, "--max-op-facts", cap, "--format", "json").report()
        return {f["op"] for f in report["findings"] if f["rule"] == "teampack-slow-softmax"}, report

    shared, report = fired(300)
    assert shared and shared < qualifying
    assert report["network"]["op_facts"] == 300 and report["network"]["op_facts_left_out"] > 0
    assert any("left out" in warning for warning in report["warnings"])
    assert fired(100_000)[0] == qualifying
