"""Rule authors are caught early: evidence templates are checked against the fact schema, cases can
state which op a finding is on and what explains what, `advisor rules fields` prints the schema, and
packs are parsed once per content."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import main
from advisor.engine import packcache
from advisor.engine.packs import check_pack, load_pack

from .test_pack_validation import GOOD_RULE, make_pack

EXPLAIN_RULE = """\
id: team-overflow-explains
title: {en: An overflow explains what follows, zh: 溢出解释其后的问题}
severity: info
docs:
  en: {what: A later finding inherits an overflow., why: Error propagates., fix: Fix the overflow.}
  zh: {what: 之后的发现继承了溢出。, why: 误差会传播。, fix: 先修复溢出。}
when:
  - {as: cause, fact: finding, kind: fp16_overflow}
  - {as: later, fact: finding, kind: problem_node, index: {gt: $cause.index}}
explain: {cause: cause, symptom: later}
cases:
  - name: a problem node after an overflow
    expect: fire
    count: 1
    explains: [{cause: "fp16-overflow@3", symptom: "problem-node@9"}]
    facts:
      - {fact: finding, id: "fp16-overflow@3", kind: fp16_overflow, index: 3}
      - {fact: finding, id: "problem-node@9", kind: problem_node, index: 9}
  - name: before it
    expect: silent
    facts:
      - {fact: finding, id: "fp16-overflow@3", kind: fp16_overflow, index: 3}
      - {fact: finding, id: "problem-node@1", kind: problem_node, index: 1}
"""


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("template", "says"), [
    ("{{ m.out_cosin | num }}", "'op' facts have no field 'out_cosin' ('m.out_cosin', line 1 of the template) "
                                "(did you mean 'out_cosine'?)"),
    ("{{ params.min_conf }}", "unknown parameter 'params.min_conf'"),
    ("{{ op.op }}", "unknown name 'op'"),
    ("{{ m.get('dtyp') }}", "'op' facts have no field 'dtyp'"),
])
def test_a_template_typo_fails_validate_with_file_line_and_a_suggestion(tmp_path, capsys, template, says):
    pack = make_pack(tmp_path, GOOD_RULE.replace("{{ m.op }} is a Pow in FP16", template))
    code, _, err = cli(capsys, "rules", "validate", pack)
    assert code == 2
    line = next(i for i, text in enumerate(GOOD_RULE.splitlines(), 1) if "evidence:" in text)
    assert f"{pack / 'rule.yaml'}:{line}:" in err and "evidence.en: " + says in err, err


def test_templates_may_loop_and_read_fields_through_locals(tmp_path):
    template = "{% for name in ['a'] %}{{ name }}{% endfor %}{% set x = m.op %}{{ x }} {{ m['op_type'] }}"
    assert check_pack(make_pack(tmp_path, GOOD_RULE.replace("{{ m.op }} is a Pow in FP16", template)))[1] == []


def _with_fire_case(extra: str) -> str:
    fire = '    facts: [{fact: op, id: "op:1", index: 1, op: Pow_1, op_type: Pow, dtype: float16}]\n'
    return GOOD_RULE.replace(fire, fire + extra, 1)


def test_a_case_states_the_op_index_and_count_of_its_findings(tmp_path, capsys):
    good = make_pack(tmp_path, _with_fire_case("    findings: [{kind: fp16_overflow, op: Pow_1, index: 1}]\n"
                                               "    count: 1\n"), name="good")
    code, out, _ = cli(capsys, "rules", "test", good)
    assert code == 0 and "rule cases: 2 passed, 0 failed" in out
    wrong = make_pack(tmp_path, _with_fire_case("    findings: [{op: Pow_2}]\n"), name="wrong")
    code, out, _ = cli(capsys, "rules", "test", wrong)
    assert code == 1
    assert "FAIL wrong/pow-in-fp16: fp16 pow [fire] (no finding with op=Pow_2 (got: kind=fp16_overflow op=Pow_1 " \
           "index=1))" in out
    counted = make_pack(tmp_path, _with_fire_case("    count: 2\n"), name="counted")
    assert "(expected 2 finding(s), got 1)" in cli(capsys, "rules", "test", counted)[1]


def test_a_case_states_what_an_explain_rule_explains(tmp_path, capsys):
    good = make_pack(tmp_path, EXPLAIN_RULE, name="good")
    code, out, _ = cli(capsys, "rules", "test", good)
    assert code == 0, out
    wrong = make_pack(tmp_path, EXPLAIN_RULE.replace('symptom: "problem-node@9"}', 'symptom: "fp16-overflow@3"}'),
                      name="wrong")
    code, out, _ = cli(capsys, "rules", "test", wrong)
    assert code == 1 and "'fp16-overflow@3' does not explain 'fp16-overflow@3' (got: fp16-overflow@3 explains " \
                         "problem-node@9)" in out


@pytest.mark.parametrize(("extra", "says"), [
    ("    findings: [{opp: Pow_1}]\n", "unknown finding field 'opp' (did you mean 'op'?)"),
    ("    count: 0\n", "cases.0.count must be at least 1 (got 0)"),
    ("    explains: [{cause: a, symptom: b}]\n", "only an explain rule gives explanations"),
])
def test_mistakes_in_case_expectations_are_validation_errors(tmp_path, extra, says):
    problems = [str(p) for p in check_pack(make_pack(tmp_path, _with_fire_case(extra)))[1]]
    assert any(says in p for p in problems), problems


def test_expectations_belong_to_firing_cases(tmp_path):
    text = GOOD_RULE.replace("    expect: silent\n", "    expect: silent\n    count: 1\n")
    problems = [str(p) for p in check_pack(make_pack(tmp_path, text))[1]]
    assert any("use it with 'expect: fire'" in p for p in problems), problems


def test_rules_fields_prints_the_schema_with_types_and_descriptions(capsys):
    code, out, _ = cli(capsys, "rules", "fields", "op")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "op"
    row = next(line for line in lines if line.split()[:1] == ["out_cosine"])
    assert row.split()[1] == "number" and "cosine" in row
    code, out, _ = cli(capsys, "rules", "fields")
    assert code == 0 and {"network", "op", "finding"} <= {line for line in out.splitlines() if line and line[0] != " "}
    code, _, err = cli(capsys, "rules", "fields", "opp")
    assert code == 2 and "no fact kind 'opp'" in err and "did you mean 'op'" in err


def test_a_pack_is_parsed_once_per_content(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    packcache.clear_memory()
    pack = make_pack(tmp_path)
    first = load_pack(pack)
    assert load_pack(pack) is first                          # in memory
    packcache.clear_memory()
    from_disk = load_pack(pack)                              # a new process would read the disk entry
    assert from_disk is not first and [r.id for r in from_disk.rules] == ["pow-in-fp16"]
    (pack / "rule.yaml").write_text(GOOD_RULE.replace("severity: warning", "severity: error"), encoding="utf-8")
    assert load_pack(pack).rules[0].severity == "error"      # edited: another key, never a stale hit


def test_a_broken_or_foreign_cache_entry_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    packcache.clear_memory()
    pack = make_pack(tmp_path)
    load_pack(pack)
    [entry] = (tmp_path / "cache" / "packs").glob("*.json")
    signed = entry.read_bytes()
    for damaged in (b"not an entry", signed[:-10], signed.replace(b"pow-in-fp16", b"pow-in-fp17")):
        entry.write_bytes(damaged)
        packcache.clear_memory()
        assert [r.id for r in load_pack(pack).rules] == ["pow-in-fp16"]
    assert not list((tmp_path / "cache" / "packs").glob("*.tmp"))


def test_an_unwritable_cache_folder_only_costs_the_saving(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(blocker / "cache"))
    packcache.clear_memory()
    assert [r.id for r in load_pack(make_pack(tmp_path)).rules] == ["pow-in-fp16"]
