"""A rule keeps its identity when it is renamed (``aliases:``, like sqlfluff's and ruff's redirected
codes) and says where it stands (``status: stable | preview | deprecated``): the user's --disable,
--set, --severity, advisor.toml and batch manifests name a former id and still reach it, and the
batch history matches its findings across the rename. Advice templates name only what a finding
carries, checked by `advisor rules validate` with file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from advisor.cli import main
from advisor.engine.loading import load_packs
from advisor.engine.packs import check_pack
from advisor.errors import RulePackError

from ..conftest import SCENARIOS, scenario_csv

SPD = scenario_csv(SCENARIOS / "single_point_deviation__mtcnn_pnet__saturated_logits__s0")   # 1 deviating op

RULE = """\
id: {rule_id}
{extra}title: {{en: Some op deviates, zh: 有算子偏离}}
severity: warning
params:
  max_ops: 0
docs:
  en: {{what: Some op is outside its dtype's thresholds., why: A team wants to hear of any., fix: Look at it.}}
  zh: {{what: 有算子超出阈值。, why: 团队希望知道。, fix: 查看该算子。}}
when:
  fact: network
  deviating_ops: {{gt: "${{max_ops}}"}}
emit:
  kind: team_deviation
  confidence: 0.5
  values: [deviating_ops]
  evidence: {{en: "{{{{ m.deviating_ops }}}} ops deviate", zh: "{{{{ m.deviating_ops }}}} 个算子偏离"}}
advice:
  en:
    what: "{{{{ values.get('deviating_ops') }}}} ops deviate{advice_extra}."
    why: The team watches every deviation.
    confirm: Run advisor ops.
    fix: {{any: Look at the ops.}}
    references: [team wiki]
  zh:
    what: "{{{{ values.get('deviating_ops') }}}} 个算子偏离。"
    why: 团队关注每一处偏离。
    confirm: 运行 advisor ops。
    fix: {{any: 查看这些算子。}}
    references: [团队文档]
cases:
  - name: one op deviates
    expect: fire
    facts: [{{fact: network, id: network, deviating_ops: 1}}]
  - name: none does
    expect: silent
    facts: [{{fact: network, id: network, deviating_ops: 0}}]
"""


def team_pack(root: Path, rule_id: str = "team-any-deviation", aliases: tuple[str, ...] = ("team-deviation",),
              status: str | None = None, advice_extra: str = "") -> Path:
    pack = root / "team"
    pack.mkdir(parents=True, exist_ok=True)
    (pack / "pack.yaml").write_text('pack: team\nversion: "0.1.0"\n', encoding="utf-8")
    extra = (f"aliases: [{', '.join(aliases)}]\n" if aliases else "") + (f"status: {status}\n" if status else "")
    (pack / "rule.yaml").write_text(RULE.format(rule_id=rule_id, extra=extra, advice_extra=advice_extra),
                                    encoding="utf-8")
    return pack


def _team_findings(run) -> list[dict]:
    return [f for f in run.report()["findings"] if f["rule"] == "team-any-deviation"]


def test_the_team_rule_fires_under_its_id(tmp_path, run_cli):
    run = run_cli(SPD, "--rules", team_pack(tmp_path), "--format", "json")
    assert run.code == 0, run.err
    assert [f["severity"] for f in _team_findings(run)] == ["warning"]


@pytest.mark.parametrize("options", [("--disable", "team-deviation"), ("--set", "team-deviation.max_ops=5")],
                         ids=["disable", "set"])
def test_a_former_id_on_the_command_line_reaches_the_renamed_rule(tmp_path, run_cli, options):
    run = run_cli(SPD, "--rules", team_pack(tmp_path), "--format", "json", *options)
    assert run.code == 0, run.err
    assert _team_findings(run) == []


def test_a_former_id_re_rates_the_rule(tmp_path, run_cli):
    run = run_cli(SPD, "--rules", team_pack(tmp_path), "--format", "json", "--severity", "team-deviation=error")
    assert [f["severity"] for f in _team_findings(run)] == ["error"]


def test_project_settings_that_name_a_former_id_still_apply(tmp_path, run_cli):
    pack = team_pack(tmp_path)
    settings = tmp_path / "advisor.toml"
    settings.write_text(f'rules = ["{pack}"]\ndisable = ["team-deviation"]\n', encoding="utf-8")
    run = run_cli(SPD, "--project-config", settings, "--format", "json")
    assert run.code == 0, run.err
    assert _team_findings(run) == [] and run.report()["packs"][-1]["name"] == "team"


def test_the_history_matches_a_renamed_rules_findings(tmp_path, capsys):
    """Night 1 runs the rule as team-deviation; night 2 has it renamed, with the old id as an alias:
    its finding persists (not one fixed and one new), and the manifest's old id still disables nothing else."""
    manifest = tmp_path / "nightly.yaml"
    job = {"name": "pnet", "input": str(SPD), "rules": [str(tmp_path / "team")], "formats": "json"}
    manifest.write_text(yaml.safe_dump({"output": "out", "workers": 1, "jobs": [job]}), encoding="utf-8")
    team_pack(tmp_path, rule_id="team-deviation", aliases=())
    assert main(["batch", str(manifest), "-q"]) == 0, capsys.readouterr().err
    team_pack(tmp_path)                                  # renamed: team-deviation -> team-any-deviation
    assert main(["batch", str(manifest), "-q"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["history", "--db", str(tmp_path / "out" / "history.sqlite"), "diff", "1", "2", "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["jobs"]
    assert [f["rule"] for f in entry["persists"] if f["kind"] == "team_deviation"] == ["team-any-deviation"]
    assert [f for f in entry["new"] + entry["fixed"] if f["kind"] == "team_deviation"] == []


def test_an_alias_may_not_name_another_rule(tmp_path):
    pack = team_pack(tmp_path, aliases=("network-consistent",))
    with pytest.raises(RulePackError, match="alias 'network-consistent' of rule 'team-any-deviation' is already "
                                            "rule 'network-consistent'") as caught:
        load_packs([pack], installed=False)
    assert caught.value.path == str(pack / "rule.yaml") and caught.value.line == 1


def test_an_alias_may_not_be_the_rules_own_id(tmp_path):
    _, problems = check_pack(team_pack(tmp_path, aliases=("team-any-deviation",)))
    assert [str(p) for p in problems] == [f"{tmp_path / 'team' / 'rule.yaml'}:2:1: 'aliases' lists the rule's "
                                          "own id 'team-any-deviation': aliases are its former ids"]


def test_status_is_checked_listed_and_a_deprecated_rule_warns_when_it_fires(tmp_path, run_cli, capsys):
    _, problems = check_pack(team_pack(tmp_path / "bad", status="retired"))
    assert [str(p) for p in problems] == [f"{tmp_path / 'bad' / 'team' / 'rule.yaml'}:3:1: status must be one of "
                                          "stable, preview, deprecated"]
    pack = team_pack(tmp_path, status="deprecated")
    run = run_cli(SPD, "--rules", pack, "--format", "json")
    assert "rule 'team-any-deviation' is deprecated (advisor rules show team-any-deviation); it will be removed" \
        in run.report()["warnings"]
    assert main(["rules", "list", str(pack)]) == 0
    assert "[deprecated]" in capsys.readouterr().out
    assert main(["rules", "show", "team-deviation", "--rules", str(pack)]) == 0     # found by its former id
    assert "status deprecated, formerly team-deviation" in capsys.readouterr().out


@pytest.mark.parametrize(("text", "message"), [
    ("{{ op.out_kl }}", "'op.out_kl' (line 1 of the text): 'op' is a plain value, not a fact"),
    ("{{ opx }}", "unknown name 'opx' (line 1 of the text) (did you mean 'op'?)"),
    ("{{ values.get('out_kl') }}", "unknown value 'values.out_kl' (line 1 of the text); the rule's emit.values "
                                   "give: deviating_ops"),
])
def test_an_advice_text_naming_what_the_finding_does_not_carry_is_a_problem_with_its_line(tmp_path, text, message):
    _, problems = check_pack(team_pack(tmp_path, advice_extra=f" {text}"))
    first = str(problems[0])
    assert first.startswith(f"{tmp_path / 'team' / 'rule.yaml'}:20: advice: {message}") and first.endswith("(en.what)")
