"""Rule cases on the input format (``input_cases:``): a comparison file beside the rule, read and
measured as `advisor run` does, then fired with the rule's pack and the built-in rules. Such a case
cannot claim what the measurement does not give; `advisor rules test` runs it and `rules validate`
checks its file is there."""

from __future__ import annotations

import shutil
from pathlib import Path

from advisor.cli import main
from advisor.engine.loading import load_packs
from advisor.engine.packs import check_pack
from advisor.pipeline_cases import run_input_case

from ..conftest import REPO

# Two ops of the committed PRelu-layout scenario (msaccucmp rows, cut by benchmarks/rule_cases.py):
# Conv_3 (index 5) with an input at cosine 1 and an output at 0.777905.
ENTRY = REPO / "rules" / "core" / "propagation" / "cases" / "problem-node.fires.csv"
CLEAN = REPO / "rules" / "core" / "network" / "cases" / "network-consistent.fires.csv"

RULE = """\
id: team-low-output
title: {{en: Low output cosine, zh: 输出余弦低}}
severity: warning
params:
  max_cosine: 0.9
docs:
  en: {{what: An op's output cosine is low., why: The team watches it., fix: Look at the op.}}
  zh: {{what: 算子输出余弦低。, why: 团队关注。, fix: 查看该算子。}}
when:
  fact: op
  out_cosine: {{lt: "${{max_cosine}}"}}
emit:
  kind: problem_node
  confidence: 0.5
  evidence:
    en: "{{{{ m.op }}}} output cosine {{{{ m.out_cosine }}}}"
    zh: "{{{{ m.op }}}} 输出余弦 {{{{ m.out_cosine }}}}"
cases:
  - name: low
    expect: fire
    facts: [{{fact: op, id: "op:1", index: 1, op: A, out_cosine: 0.5}}]
  - name: high
    expect: silent
    facts: [{{fact: op, id: "op:1", index: 1, op: A, out_cosine: 0.99}}]
input_cases:
{input_cases}
"""


def team_pack(root: Path, input_cases: str) -> Path:
    pack = root / "team"
    (pack / "cases").mkdir(parents=True)
    (pack / "pack.yaml").write_text('pack: team\nversion: "0.1.0"\n', encoding="utf-8")
    shutil.copy(ENTRY, pack / "cases" / "entry.csv")
    shutil.copy(CLEAN, pack / "cases" / "clean.csv")
    (pack / "rule.yaml").write_text(RULE.format(input_cases=input_cases), encoding="utf-8")
    return pack


def _results(pack: Path):
    rules = load_packs([pack], installed=False).rules
    rule = next(r for r in rules if r.id == "team-low-output")
    return [run_input_case(rule, case, [pack]) for case in rule.input_cases]


def test_a_case_on_real_rows_fires_where_the_measurement_says(tmp_path):
    pack = team_pack(tmp_path, """\
  - {name: the entry, expect: fire, input: cases/entry.csv, findings: [{op: Conv_3, index: 5}], count: 1}
  - {name: a clean run, expect: silent, input: cases/clean.csv}""")
    assert [(r.case, r.passed) for r in _results(pack)] == [("the entry", True), ("a clean run", True)]


def test_a_case_cannot_claim_what_the_rows_do_not_give(tmp_path):
    pack = team_pack(tmp_path, """\
  - {name: wrong op, expect: fire, input: cases/entry.csv, findings: [{op: Conv_3, index: 6}]}
  - {name: claims a fire, expect: fire, input: cases/clean.csv}
  - {name: a parameter moves it, expect: silent, input: cases/entry.csv, params: {max_cosine: 0.5}}""")
    wrong, claims, tuned = _results(pack)
    assert not wrong.passed and wrong.mismatch == "no finding with op=Conv_3 index=6 (got: kind=problem_node " \
                                                  "op=Conv_3 index=5)"
    assert not claims.passed and not claims.fired
    assert tuned.passed and not tuned.fired


def test_rules_test_runs_input_cases_and_validate_checks_their_file(tmp_path, capsys):
    pack = team_pack(tmp_path, """\
  - {name: the entry, expect: fire, input: cases/entry.csv}
  - {name: a clean run, expect: silent, input: cases/clean.csv}""")
    assert main(["rules", "test", str(pack)]) == 0
    out = capsys.readouterr().out
    assert "PASS team/team-low-output: the entry [fire]" in out and "PASS team/team-low-output: a clean run" in out
    (pack / "cases" / "clean.csv").unlink()
    _, problems = check_pack(pack)
    assert [str(p) for p in problems] == [f"{pack / 'rule.yaml'}:27:41: input case file 'cases/clean.csv' not found "
                                          f"next to the rule ({pack / 'cases' / 'clean.csv'})"]


RUN = REPO / "rules" / "core" / "preprocessing" / "cases" / "rgb_bgr_swap"


def test_a_case_names_the_runs_other_inputs_and_validate_names_a_missing_one(tmp_path):
    pack = team_pack(tmp_path, """\
  - name: the swap, with its dumps and build config
    expect: fire
    input: cases/run/result_20240506101633.csv
    config: cases/run/build.json
    dumps: {golden: cases/run/golden, target: cases/run/target}""")
    shutil.copytree(RUN, pack / "cases" / "run")
    # A build config in YAML under cases/ is a case file, never a rule of the pack.
    (pack / "cases" / "run" / "extra.yaml").write_text("tool: onnxruntime\n", encoding="utf-8")
    assert [(r.case, r.error, r.passed) for r in _results(pack)] == [
        ("the swap, with its dumps and build config", None, True)]
    shutil.rmtree(pack / "cases" / "run" / "target")
    _, problems = check_pack(pack)
    assert [str(p) for p in problems] == [
        f"{pack / 'rule.yaml'}:30:39: input case dumps.target folder 'cases/run/target' not found next to the rule "
        f"({pack / 'cases' / 'run' / 'target'})"]
