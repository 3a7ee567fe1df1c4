"""One registry per run: packs and providers loaded for one run (one batch job) never change another;
whether a pack validates does not depend on what was loaded before it; pack settings tune the run
under the project's and the command line's."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from advisor.cli import main
from advisor.engine.loading import load_packs
from advisor.engine.packs import check_pack
from tests.conftest import SCENARIOS, scenario_csv

from .test_pack_validation import make_pack

PROBLEM = scenario_csv(SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0")
OVERFLOW = scenario_csv(SCENARIOS / "fp16_overflow__byte_transformer__embedding_outliers__s0")

NOTE_RULE = """\
id: {team}-deviation-note
title: {{en: Output deviates ({team}), zh: 输出偏离（{team}）}}
severity: info
docs:
  en: {{what: The network output deviates., why: A team note., fix: Read the team wiki.}}
  zh: {{what: 网络输出偏离。, why: 团队备注。, fix: 阅读团队文档。}}
when: {{fact: network, output_deviates: true}}
emit:
  kind: team_deviation_note
  evidence: {{en: "output cosine {{{{ m.output_cosine | num }}}}", zh: "输出余弦 {{{{ m.output_cosine | num }}}}"}}
cases:
  - {{name: deviates, expect: fire, facts: [{{fact: network, id: network, output_deviates: true}}]}}
  - {{name: agrees, expect: silent, facts: [{{fact: network, id: network, output_deviates: false}}]}}
advice:
  en:
    what: The {team} team's page.
    why: Because.
    confirm: Look.
    fix: {{any: Ask the {team} team.}}
    references: [{team} wiki]
  zh:
    what: {team} 团队的页面。
    why: 因为。
    confirm: 查看。
    fix: {{any: 询问 {team} 团队。}}
    references: [{team} 文档]
"""


def note_pack(root: Path, team: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return make_pack(root, NOTE_RULE.format(team=team), name=team)


def test_a_batch_mixing_two_packs_with_advice_for_the_same_kind_runs(tmp_path, capsys):
    """Each job alone exits 0; together (one process, the parent validating both) they did not."""
    alpha, beta = note_pack(tmp_path / "packs", "alpha"), note_pack(tmp_path / "packs", "beta")
    manifest = tmp_path / "nightly.yaml"
    manifest.write_text(json.dumps({"output": "out", "jobs": [
        {"name": "a", "input": str(PROBLEM), "rules": [str(alpha)], "formats": ["json"]},
        {"name": "b", "input": str(PROBLEM), "rules": [str(beta)], "formats": ["json"]},
    ]}), encoding="utf-8")
    code = main(["batch", str(manifest), "--workers", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    for job, team in (("a", "alpha"), ("b", "beta")):
        report = json.loads((tmp_path / "out" / job / "report.json").read_text(encoding="utf-8"))
        notes = [f for f in report["findings"] if f["kind"] == "team_deviation_note"]
        assert [f["rule"] for f in notes] == [f"{team}-deviation-note"]
        assert notes[0]["advice"]["what"] == f"The {team} team's page."


def test_two_packs_with_different_advice_for_one_kind_in_one_run_name_both(tmp_path):
    alpha, beta = note_pack(tmp_path / "packs", "alpha"), note_pack(tmp_path / "packs", "beta")
    try:
        load_packs([alpha, beta], builtin=False, installed=False)
    except Exception as exc:       # noqa: BLE001 - the message is the point
        message = str(exc)
    else:
        raise AssertionError("two different pages for one kind in one run must be refused")
    assert "advice for kind 'team_deviation_note' is defined twice" in message and "alpha" in message


def test_validation_does_not_depend_on_what_was_loaded_before(tmp_path):
    """A pack emitting a kind whose advice only another pack carries is invalid, loaded first or last."""
    alpha = note_pack(tmp_path / "packs", "alpha")
    borrower = make_pack(tmp_path, NOTE_RULE.format(team="gamma").split("advice:")[0], name="gamma")
    alone = [str(p) for p in check_pack(borrower)[1]]
    load_packs([alpha], builtin=False, installed=False)
    after = [str(p) for p in check_pack(borrower)[1]]
    assert alone == after and any("no advice for kind 'team_deviation_note'" in p for p in alone)
    assert check_pack(alpha)[1] == []


def _pack_with_settings(root: Path, settings: str) -> Path:
    folder = root / "tune"
    folder.mkdir(parents=True)
    (folder / "pack.yaml").write_text('pack: tune\nversion: "1.0"\nsettings:\n' + textwrap.indent(settings, "  "),
                                      encoding="utf-8")
    return folder


def test_a_pack_setting_changes_the_verdict_and_the_user_overrides_it(run_cli, tmp_path, monkeypatch):
    """problem-node.min_confidence from a pack silences a 0.95-confidence problem node; the project
    settings beat the pack, and --set beats both."""
    base = run_cli(PROBLEM, "--format", "json").report()
    assert base["root_cause"]["kind"] == "problem_node" and base["root_cause"]["confidence"] < 0.99
    tune = _pack_with_settings(tmp_path, "params: {problem-node.min_confidence: 0.99}\n")
    tuned = run_cli(PROBLEM, "--format", "json", "--rules", tune)
    assert tuned.code == 0, tuned.err
    assert tuned.report()["root_cause"] is None or tuned.report()["root_cause"]["kind"] != "problem_node"
    assert run_cli(PROBLEM, "--format", "json", "--rules", tune, "--set", "problem-node.min_confidence=0.5"
                   ).report()["root_cause"]["kind"] == "problem_node"
    project = tmp_path / "project"
    project.mkdir()
    (project / "advisor.toml").write_text('[params]\n"problem-node.min_confidence" = 0.5\n', encoding="utf-8")
    monkeypatch.chdir(project)
    assert run_cli(PROBLEM, "--format", "json", "--rules", tune).report()["root_cause"]["kind"] == "problem_node"


def test_a_pack_threshold_changes_what_deviates(run_cli, tmp_path):
    """A pack loosening every cosine threshold to 0.5 makes the problem scenario's ops agree."""
    base = run_cli(PROBLEM, "--format", "json").report()
    tune = _pack_with_settings(tmp_path, "thresholds: {cosine: 0.5, relative_euclidean_distance: 10}\n")
    loose = run_cli(PROBLEM, "--format", "json", "--rules", tune).report()
    assert base["network"]["deviating_ops"] > 0
    assert loose["network"]["deviating_ops"] < base["network"]["deviating_ops"]
    assert "cosine=0.5" in loose["overrides"]["thresholds"]


def test_bad_pack_settings_name_the_file_and_line(run_cli, tmp_path):
    tune = _pack_with_settings(tmp_path, "params:\n  problem-node.min_confidance: 0.9\n")
    run = run_cli(PROBLEM, "--rules", tune)
    assert run.code == 2
    assert f"{tune / 'pack.yaml'}:5" in run.err and "min_confidence" in run.err and "\n" not in run.err.strip()
    bad = tmp_path / "other"
    bad.mkdir()
    (bad / "pack.yaml").write_text('pack: other\nversion: "1.0"\nsettings:\n  thresholds: {float16.cosin: 0.9}\n',
                                   encoding="utf-8")
    problems = [str(p) for p in check_pack(bad)[1]]
    assert problems and problems[0].startswith(f"{bad / 'pack.yaml'}:4") and "cosin" in problems[0]
