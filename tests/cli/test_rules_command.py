"""`advisor rules new|validate|test|list|show|docs` as a rule author uses them."""

from __future__ import annotations

from pathlib import Path


def test_new_pack_validates_tests_and_fires_out_of_the_box(run_cli, tmp_path):
    made = run_cli("new", "my-team", "--dir", str(tmp_path), command="rules")
    assert made.code == 0 and "created" in made.out
    pack = tmp_path / "my-team"
    assert run_cli("validate", str(pack), command="rules").code == 0
    tested = run_cli("test", str(pack), command="rules")
    assert tested.code == 0 and "rule cases: 2 passed, 0 failed" in tested.out


def test_new_refuses_to_overwrite(run_cli, tmp_path):
    (tmp_path / "taken").mkdir()
    assert run_cli("new", "taken", "--dir", str(tmp_path), command="rules").code == 2


def test_validate_reports_every_problem_with_file_line_and_column(run_cli, tmp_path):
    pack = tmp_path / "team"
    pack.mkdir()
    (pack / "pack.yaml").write_text('pack: team\nversion: "1.0"\n')
    (pack / "a.yaml").write_text("id: a\ntitle: {en: A, zh: 甲}\nseverity: eror\n")
    (pack / "b.yaml").write_text("id: b\ntitle: {en: B, zh: 乙\n")
    run = run_cli("validate", str(pack), command="rules")
    assert run.code == 2
    assert f"{pack / 'a.yaml'}:1:1: rule is missing 'docs'" in run.err
    assert f"{pack / 'a.yaml'}:3:1: severity must be one of error, warning, info (did you mean 'error'?)" in run.err
    assert f"{pack / 'b.yaml'}:3:1: invalid YAML" in run.err


def test_a_failing_case_fails_rules_test(run_cli, tmp_path):
    run_cli("new", "my-team", "--dir", str(tmp_path), command="rules")
    rule = tmp_path / "my-team" / "my-team-slow-softmax.yaml"
    rule.write_text(rule.read_text().replace("error_enters: false, out_cosine: 0.4", "error_enters: true, "
                                                                                     "out_cosine: 0.4"))
    run = run_cli("test", str(tmp_path / "my-team"), command="rules")
    assert run.code == 1
    assert "FAIL my-team/my-team-slow-softmax: a softmax that only inherits error [silent] (expected to silent, " \
           "fired)" in run.out


def test_list_show_and_docs(run_cli, tmp_path):
    listed = run_cli("list", command="rules")
    assert "problem-node" in listed.out and "fp16_overflow" in listed.out
    shown = run_cli("show", "fp16-overflow", "--lang", "zh", command="rules")
    assert shown.code == 0 and "FP16 溢出" in shown.out and "inputs_overflow: false" in shown.out
    assert "did you mean 'fp16-overflow'" in run_cli("show", "fp16-overflw", command="rules").err
    docs = run_cli("docs", "-o", str(tmp_path / "docs"), command="rules")
    assert docs.code == 0
    page = (tmp_path / "docs" / "fp16-overflow.md").read_text()
    for heading in ("## What it detects", "## Why it matters", "## Example", "## How to fix"):
        assert heading in page
    assert "inputs_overflow: false" in page         # the example is the rule's own firing case
    assert Path(tmp_path / "docs" / "problem-node.md").read_text().count("min_confidence") >= 1
