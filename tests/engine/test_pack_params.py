"""A pack's shared parameters (pack.yaml ``params``): one value that several rules read, tuned with
one ``--set PACK.PARAM=VALUE``; a rule cannot shadow it, and a leftover one is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import main
from advisor.engine.loading import load_packs, parse_param_overrides
from advisor.engine.packs import check_pack
from advisor.engine.runner import run_rules
from advisor.errors import RulePackError, UsageError

from ..conftest import scenario_csv, scenario_dirs

SPD_PROBLEM = next(d for d in scenario_dirs() if d.name.startswith("mixed_spd_problem__"))

RULE = """\
id: {id}
title: {{en: Low cosine {id}, zh: 低余弦 {id}}}
severity: warning
{params}docs:
  en: {{what: An op whose output cosine is low., why: Something broke., fix: Look at it.}}
  zh: {{what: 输出余弦偏低的算子。, why: 出了问题。, fix: 查看它。}}
when:
  fact: op
  op_type: {op_type}
  out_cosine: {{lt: "${{max_cosine}}"}}
emit:
  kind: problem_node
  confidence: "{{{{ 0.5 if m.out_cosine < params.max_cosine / 2 else 0.4 }}}}"
  evidence:
    en: "{{{{ m.op }}}} below {{{{ params.max_cosine }}}}"
    zh: "{{{{ m.op }}}} 低于 {{{{ params.max_cosine }}}}"
cases:
  - name: low
    expect: fire
    facts: [{{fact: op, id: "op:1", index: 1, op: X_1, op_type: {op_type}, out_cosine: 0.5}}]
  - name: high
    expect: silent
    facts: [{{fact: op, id: "op:1", index: 1, op: X_1, op_type: {op_type}, out_cosine: 0.999}}]
"""


def make_pack(tmp_path: Path, meta: str = "params:\n  max_cosine: 0.9   # shared\n", own: str = "",
              name: str = "team") -> Path:
    pack = tmp_path / name
    pack.mkdir()
    (pack / "pack.yaml").write_text(f'pack: {name}\nversion: "1.0"\n{meta}', encoding="utf-8")
    for rule_id, op_type in (("low-conv", "Conv2D"), ("low-matmul", "MatMul")):
        params = own if rule_id == "low-matmul" else ""
        (pack / f"{rule_id}.yaml").write_text(RULE.format(id=rule_id, op_type=op_type, params=params),
                                             encoding="utf-8")
    return pack


def problems_of(pack: Path) -> list[str]:
    return [str(p) for p in check_pack(pack)[1]]


def facts() -> list[dict]:
    return [{"fact": "op", "id": f"op:{i}", "index": i, "op": name, "op_type": op_type, "out_cosine": 0.95}
            for i, (name, op_type) in enumerate((("Conv_1", "Conv2D"), ("MatMul_2", "MatMul")), 1)]


def test_every_rule_reads_the_packs_value_and_one_set_moves_them_all(tmp_path):
    rules = load_packs([make_pack(tmp_path)], builtin=False, installed=False).rules
    assert [(r.id, r.params, r.shared) for r in rules] == [
        ("low-conv", {"max_cosine": 0.9}, ("max_cosine",)), ("low-matmul", {"max_cosine": 0.9}, ("max_cosine",))]
    assert run_rules(rules, facts()).findings == []              # 0.95 is above the shared 0.9
    overrides = parse_param_overrides(["team.max_cosine=0.99"], rules)
    assert overrides == {"low-conv": {"max_cosine": 0.99}, "low-matmul": {"max_cosine": 0.99}}
    found = run_rules(rules, facts(), overrides).findings
    assert sorted((f.op, f.evidence["en"]) for f in found) == [("Conv_1", "Conv_1 below 0.99"),
                                                                ("MatMul_2", "MatMul_2 below 0.99")]


def test_a_shared_parameter_set_on_one_rule_changes_that_rule_only(tmp_path):
    """``RULE.NAME`` keeps working for a parameter that moved into its pack (scripts and advisor.toml
    files written before): it tunes that rule alone."""
    rules = load_packs([make_pack(tmp_path)], builtin=False, installed=False).rules
    overrides = parse_param_overrides(["low-conv.max_cosine=0.99"], rules)
    assert overrides == {"low-conv": {"max_cosine": 0.99}}
    assert [f.op for f in run_rules(rules, facts(), overrides).findings] == ["Conv_1"]
    with pytest.raises(UsageError, match="pack 'team' shares no parameter 'max_cosin' "):
        parse_param_overrides(["team.max_cosin=0.99"], rules)
    with pytest.raises(UsageError, match="'yes' is not a number"):
        parse_param_overrides(["team.max_cosine=yes"], rules)


def test_a_tuning_pack_sets_another_packs_shared_parameter(tmp_path, run_cli):
    """A team's settings-only pack in PACK.NAME form reaches every rule that reads the parameter."""
    tuning = tmp_path / "strict"
    tuning.mkdir()
    (tuning / "pack.yaml").write_text('pack: strict\nversion: "1.0"\nsettings:\n  params:\n'
                                      '    core.absorbed_cosine: 1.0\n', encoding="utf-8")
    report = run_cli(scenario_csv(SPD_PROBLEM), "--format", "json", "--rules", str(tuning)).report()
    assert (report["root_cause"]["kind"], report["root_cause"]["op"]) == ("problem_node", "MatMul_26")


def test_a_rule_that_declares_the_packs_parameter_again_is_rejected(tmp_path):
    pack = make_pack(tmp_path, own="params:\n  max_cosine: 0.5\n")
    assert problems_of(pack) == [f"{pack / 'low-matmul.yaml'}:5:3: parameter 'max_cosine' is the pack's "
                                 "(pack.yaml 'params'), shared by its rules: use it without declaring it here"]


def test_a_pack_parameter_no_rule_reads_is_reported_where_it_is_declared(tmp_path):
    pack = make_pack(tmp_path, meta="params:\n  max_cosine: 0.9\n  min_drop: 0.1\n")
    assert problems_of(pack) == [f"{pack / 'pack.yaml'}:5:3: pack parameter 'min_drop' is read by none of "
                                 "the pack's rules (as ${min_drop} or params.min_drop)"]


def test_without_the_packs_parameter_the_rules_name_an_unknown_one(tmp_path):
    problems = problems_of(make_pack(tmp_path, meta=""))
    # 2 rules x (the condition, the confidence, the en and zh evidence)
    assert len(problems) == 8 and all("unknown parameter" in p for p in problems), problems


def test_a_pack_named_like_a_rule_is_refused(tmp_path):
    settings_only = tmp_path / "low-conv"
    settings_only.mkdir()
    (settings_only / "pack.yaml").write_text('pack: low-conv\nversion: "1.0"\nsettings: {thresholds: {cosine: 0.99}}\n',
                                             encoding="utf-8")
    with pytest.raises(RulePackError, match="rule id 'low-conv' is also the name of pack 'low-conv'"):
        load_packs([make_pack(tmp_path), settings_only], builtin=False, installed=False)


def test_the_core_packs_shared_parameters_are_shown_with_how_to_set_them(capsys):
    assert main(["rules", "show", "problem-node"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  params: min_confidence=0" in lines
    assert any(line.startswith("  pack params (--set core.NAME=VALUE): absorbed_cosine=0.9998,") for line in lines)


def test_a_tuning_packs_settings_for_a_disabled_rule_are_dropped_not_refused(tmp_path, run_cli):
    tuning = tmp_path / "strict"
    tuning.mkdir()
    (tuning / "pack.yaml").write_text('pack: strict\nversion: "1.0"\nsettings:\n  params:\n'
                                      '    core.absorbed_cosine: 1.0\n    problem-node.min_confidence: 0.5\n',
                                      encoding="utf-8")
    report = run_cli(scenario_csv(SPD_PROBLEM), "--format", "json", "--rules", str(tuning),
                     "--disable", "problem-node").report()
    assert report["overrides"]["params"] == {rule: {"absorbed_cosine": 1.0}
                                             for rule in ("absorbed-deviation", "fused-op-problem", "residual-fault")}
