"""Every built-in rule proves itself: its own cases (must fire / must stay silent) run here, one test
per case, through the real durable_rules engine. Its input cases (comparison files cut from real
ones, beside the rule, with the run's other inputs) run as advisor run runs them (advisor.pipeline.analyse)."""

from __future__ import annotations

import json

import pytest

from advisor.engine.cases import run_case
from advisor.engine.loading import load_packs
from advisor.pipeline_cases import run_input_case

# Every built-in pack, whichever command loads it (advisor run's packs, advisor post's).
RULES = [rule for command in ("run", "post") for rule in load_packs(installed=False, command=command).rules]
CASES = [(rule, case) for rule in RULES for case in rule.cases]
# Input cases are comparison files: advisor run's packs read them (advisor post's read detections).
RUN_RULES = load_packs(installed=False).rules
INPUT_CASES = [(rule, case) for rule in RUN_RULES for case in rule.input_cases]

# The rules that have no input case yet, each with the reason: no committed or generated run makes them fire.
# Their fact cases stand in; this list only shrinks (an input case for one of them fails the test below
# until it leaves the list).
_RECORDS = ("needs hardware overflow records (Opdebug dumps) from a device run; none is committed (the tests "
            "write records in the documented layout, which is no real tool's output)")
_ALTERNATIVE = ("needs an int8 root cause whose own fix, checked on the CPU (--verify), leaves the output broken "
                "while adding this setting restores it: a second mistake at the layer, mild there, that still breaks "
                "the output once the named one is fixed. The generator makes that for min/max calibration "
                "(verified-calibration); ")
WITHOUT_INPUT_CASES: dict[str, str] = {
    "hw-accumulation-overflow": _RECORDS, "hw-conversion-overflow": _RECORDS, "hw-float-overflow": _RECORDS,
    "verified-per-channel": _ALTERNATIVE + (
        "the mirror (the input clipped at the 95th or 97th percentile, milder super weights of ratio 15 whose "
        "per-tensor layer alone stays within the thresholds yet breaks the output, cosine 0.984) leaves the layer "
        "an absorbed deviation: no quantisation rule names it, so nothing is verified"),
    "verified-asymmetric": _ALTERNATIVE + (
        "no generated layer needs a zero point once its named fix is applied (the down-projection's GELU input, "
        "symmetric at min/max, keeps the output at cosine 0.99959)"),
    "verified-keep-float": _ALTERNATIVE + (
        "no generated layer is named for an int8 setting while only float restores it (the outlier-weights layer "
        "is named a precision limit, whose fix is float itself)"),
}


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.id}::{c['name']}" for r, c in CASES])
def test_rule_case(rule, case):
    result = run_case(rule, case)
    assert result.error is None, result.error
    assert result.fired == (case["expect"] == "fire"), (
        f"{rule.id}: expected to {case['expect']} on '{case['name']}'")


@pytest.mark.parametrize(("rule", "case"), INPUT_CASES, ids=[f"{r.id}::{c['name']}" for r, c in INPUT_CASES])
def test_rule_input_case(rule, case):
    result = run_input_case(rule, case)
    assert result.error is None, result.error
    assert result.passed, f"{rule.id}: expected to {case['expect']} on {case['input']} ({result.mismatch or ''})"


def test_every_builtin_rule_has_an_input_case_that_fires_and_one_that_stays_silent():
    # (a judgement rule decides a flag of every row of every input case above: it has none of its own)
    lacking = sorted(rule.id for rule in RUN_RULES if rule.id not in WITHOUT_INPUT_CASES and rule.judges is None
                     and {c["expect"] for c in rule.input_cases} != {"fire", "silent"})
    assert lacking == []
    stale = sorted(rule.id for rule in RUN_RULES if rule.id in WITHOUT_INPUT_CASES and rule.input_cases)
    assert stale == [], "these have input cases now: remove them from WITHOUT_INPUT_CASES"
    assert set(WITHOUT_INPUT_CASES) <= {rule.id for rule in RUN_RULES}
    assert all(reason.strip() for reason in WITHOUT_INPUT_CASES.values())


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


def _label_of(rule, case) -> dict | None:
    """The label.json of the generated run an input case reads (how the run was built), or None."""
    label = (rule.source.parent / case["input"]).parent / "label.json"
    return json.loads(label.read_text(encoding="utf-8")) if label.is_file() else None


GENERATED = [(rule, case) for rule, case in INPUT_CASES if case["expect"] == "fire" and _label_of(rule, case)]


@pytest.mark.parametrize(("rule", "case"), GENERATED, ids=[f"{r.id}::{c['name']}" for r, c in GENERATED])
def test_a_case_on_a_generated_run_expects_the_ops_its_label_names(rule, case):
    """What a firing case on a generated run states comes from how the run was built: each finding's op and
    index, and each explanation's cause, is the labelled root cause or one of its labelled symptoms."""
    label = _label_of(rule, case)
    labelled = {(label["op"], label["index"]), *((s["op"], s["index"]) for s in label.get("symptoms", []))}
    assert case.get("findings") or case.get("explains")
    for finding in case.get("findings") or []:
        if "index" in finding:
            assert (finding.get("op"), finding["index"]) in labelled, finding
        elif "op" in finding:     # a network finding names the output op, with no index
            assert finding["op"] in {op for op, _ in labelled}, finding
    for pair in case.get("explains") or []:
        assert int(pair["cause"].rsplit("@", 1)[1]) in {index for _, index in labelled}, pair
