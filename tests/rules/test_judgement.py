"""Whether a tensor deviates is decided by the judgement rules (rules/core/judgement), with parameters:
``--set`` on them changes the verdict of a real run, every output says the same, and they cannot be
disabled or doubled."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from advisor.engine.judgement import JUDGED, Judgement, builtin_judgement
from advisor.engine.loading import load_packs
from advisor.engine.rulemodel import Emit
from advisor.engine.runner import run_rules
from advisor.facts.builder import build_facts, clean_fact
from advisor.facts.schema import FACT_FIELDS
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison

DATA = Path(__file__).resolve().parents[1] / "data"
# MTCNN P-Net in FP16 whose face-score conv saturates at +-2 (built so: the Softmax keeps the decision):
# Conv_8 deviates with agreeing inputs, the output agrees.
SATURATED = DATA / "scenarios" / "single_point_deviation__mtcnn_pnet__saturated_logits__s0" / \
    "result_20240506002133.csv"
# msprobe 26.2, level L0 (no arguments dumped): a float32 LayerNorm whose eps changed from 1e-5 to 1e-3, fed
# identical inputs: its output moves by ~0.6 % of its norm, within the end-to-end float32 allowance.
EPS = DATA / "realtool" / "msprobe_argument_mismatch__small_convnet__layer_norm_eps__L0_statistics" / \
    "compare_result_20261125102833.csv"


# Real runs whose rows take every way to deviate between them: a saturated conv, a float32 op on identical
# inputs, an FP16 overflow to inf, a NaN kernel, gradients (ill-conditioned biases), token ids that differ.
ENGINE_PARITY = [SATURATED, EPS, *(DATA / "realtool" / name for name in (
    "msprobe_fp16_overflow__mlp__logits_half__L1_tensor",
    "msprobe_problem_node__masked_transformer__sqrt_kernel_nan__L1_statistics",
    "msprobe_gradient_fault__mlp__grad_hook_fc2__L1_statistics",
    "msprobe_input_mismatch__masked_transformer__ids_off_by_one__L1_statistics"))]


def _verdict(run) -> tuple[str, str | None]:
    report = json.loads((run.outdir / "report.json").read_text(encoding="utf-8"))
    root = report.get("root_cause") or {}
    return report["verdict"], root.get("op")


def test_every_judged_flag_has_exactly_one_builtin_rule_on_tensor_facts():
    judgement = builtin_judgement()
    assert sorted(judgement.rules) == sorted(JUDGED)
    rules = {rule.id: rule for rule in load_packs(installed=False).rules}
    for rule_id in judgement.rules.values():
        (alias, pattern), = rules[rule_id].patterns
        assert pattern["fact"] == "tensor"
        assert rules[rule_id].params["allowance"] == 1.0


def test_the_facts_stage_gives_every_tensor_field_a_judgement_may_name(monkeypatch, run_cli):
    seen: list[set[str]] = []
    judge = Judgement.__call__

    def spy(self, columns, length):
        seen.append(set(columns))
        return judge(self, columns, length)

    monkeypatch.setattr(Judgement, "__call__", spy)
    assert run_cli(EPS, "--format", "json").code == 0
    assert seen and seen[0] == set(FACT_FIELDS["tensor"]) - {"fact"}


@pytest.mark.parametrize(("allowance", "verdict", "op"), [
    (None, "single_point_deviation", "Conv_8"), ("5", "single_point_deviation", "Conv_8"), ("10", "consistent", None)])
def test_the_allowance_of_tensor_deviates_decides_a_real_deviation(run_cli, allowance, verdict, op):
    args = ["--set", f"tensor-deviates.allowance={allowance}"] if allowance else []
    run = run_cli(SATURATED, *args, "--format", "json,txt")
    assert run.code == 0, run.err
    assert _verdict(run) == (verdict, op)
    terminal = run.out + run.err
    vendor_txt = (run.outdir / "report.txt").read_text(encoding="utf-8")
    if op is None:
        assert "Verdict: consistent" in terminal and "Operator Index: NA" in vendor_txt
    else:
        assert "Verdict: Single-point deviation at op 8 Conv_8" in terminal and "Operator Index: 8" in vendor_txt


@pytest.mark.parametrize(("allowance", "verdict"), [(None, "problem_node"), ("10", "consistent")])
def test_one_ops_own_rounding_is_a_parameter_too(run_cli, allowance, verdict):
    args = ["--set", f"tensor-beyond-own-rounding.allowance={allowance}"] if allowance else []
    run = run_cli(EPS, *args, "--format", "json")
    assert run.code == 0, run.err
    assert _verdict(run)[0] == verdict
    if verdict == "problem_node":
        assert _verdict(run)[1] == "Module.norm.LayerNorm.forward.0"


def test_a_judgement_rule_cannot_be_disabled(run_cli):
    run = run_cli(SATURATED, "--disable", "tensor-deviates")
    assert run.code == 2
    assert "'tensor-deviates' decides it and cannot be disabled" in run.err and "--set tensor-deviates." in run.err


def _pack(tmp_path: Path, rule: str) -> Path:
    pack = tmp_path / "team"
    pack.mkdir()
    (pack / "pack.yaml").write_text('pack: team\nversion: "1.0"\n', encoding="utf-8")
    (pack / "rule.yaml").write_text(textwrap.dedent(rule), encoding="utf-8")
    return pack


JUDGE = """\
    id: strict-deviation
    title: {en: Strict, zh: 严格}
    severity: info
    judges: deviates
    docs:
      en: {what: a, why: b, fix: c}
      zh: {what: a, why: b, fix: c}
    when: {fact: tensor, cosine_use: {gt: 0.5}}
    cases:
      - {name: f, expect: fire, facts: [{fact: tensor, cosine_use: 0.9}]}
      - {name: s, expect: silent, facts: [{fact: tensor, cosine_use: 0.1}]}
"""


def test_a_second_rule_for_the_same_flag_is_refused_naming_both(tmp_path, run_cli):
    run = run_cli(SATURATED, "--rules", _pack(tmp_path, JUDGE))
    assert run.code == 2
    assert "'strict-deviation' judges 'deviates', which rule 'tensor-deviates'" in run.err


def test_tensor_facts_are_for_judgement_rules_only(tmp_path, run_cli):
    emitting = JUDGE.replace("judges: deviates", "emit: {kind: problem_node, evidence: {en: x, zh: y}}")
    run = run_cli(SATURATED, "--rules", _pack(tmp_path, emitting))
    assert run.code == 2
    assert "'tensor' facts are judged by the judgement rules" in run.err


@pytest.mark.parametrize("source", ENGINE_PARITY, ids=lambda p: (p.parent if p.suffix else p).name[:60])
def test_the_column_evaluation_judges_every_row_as_the_engine_would(source):
    """Each row asserted as a ``tensor`` fact into durable_rules, matched by the judgement rule made to emit,
    flags exactly the rows the column evaluation flags (NaN fields absent, as in any fact)."""
    path = source if source.suffix else next(source.glob("*.csv"))
    judge, seen = builtin_judgement(), {}

    def spy(columns, length):
        seen.update(columns=columns, judged=judge(columns, length), length=length)
        return seen["judged"]

    build_facts(read_comparison(path), load_thresholds(), judge=spy)
    columns, length = seen["columns"], seen["length"]
    facts = [clean_fact({"id": f"t:{row}", "fact": "tensor", **{name: values[row] for name, values in columns.items()}})
             for row in range(length)]
    rules = {rule.id: rule for rule in load_packs(installed=False).rules}
    for flag, rule_id in judge.rules.items():
        emitting = replace(rules[rule_id], judges=None, emit=Emit(kind="probe", subject="m", op=None, confidence=1.0,
                                                                  evidence={"en": "x", "zh": "x"}, values=[]))
        fired = sorted(int(f.id.rsplit(":", 1)[1]) for f in run_rules([emitting], facts).findings)
        assert fired == np.flatnonzero(seen["judged"][flag]).tolist(), (flag, path.name)
    assert 0 < (seen["judged"]["deviates"] | seen["judged"]["beyond_own_rounding"]).sum() < length


def test_the_plot_draws_the_limits_the_judgement_held_tensors_to(run_cli):
    """The saturated conv at cosine 0.963 is consistent at allowance 10: the float16 line is drawn at
    1 - 10 * (1 - 0.99) = 0.9 and the distance line at 10 * 0.15, not at the table's 0.99 and 0.15."""
    html = (run_cli(SATURATED, "--set", "tensor-deviates.allowance=10", "--format", "html").outdir
            / "report.html").read_text(encoding="utf-8")
    assert "threshold 0.9<" in html and "threshold 1.5<" in html and "threshold 0.99<" not in html
    html = (run_cli(SATURATED, "--format", "html").outdir / "report.html").read_text(encoding="utf-8")
    assert "threshold 0.99<" in html and "threshold 0.15<" in html


def test_ops_and_node_colour_by_the_projects_allowance(tmp_path, monkeypatch):
    from advisor.inspect.limits import cosine_limit, project_thresholds

    monkeypatch.chdir(tmp_path)
    assert cosine_limit(project_thresholds(), "float16") == 0.99
    (tmp_path / "advisor.toml").write_text('[params]\n"tensor-deviates.allowance" = 10\n'
                                           '"tensor-beyond-own-rounding.allowance" = 2\n', encoding="utf-8")
    thresholds = project_thresholds()
    assert cosine_limit(thresholds, "float16") == pytest.approx(0.9)
    assert cosine_limit(thresholds, "float32", identical_inputs=True) == pytest.approx(1 - 2 * (1 - 0.99998))
    assert thresholds.for_dtype("float16")["relative_euclidean_distance"] == pytest.approx(1.5)


def test_a_judgement_compares_fields_with_numbers_not_with_each_other(tmp_path, run_cli):
    """The column evaluation would take a join to hold (it would flag too much): a judgement has one pattern,
    so validation refuses any field reference, with the file and line."""
    joined = JUDGE.replace("when: {fact: tensor, cosine_use: {gt: 0.5}}",
                           "when: {fact: tensor, cosine_use: {gt: $m.distance_use}}")
    run = run_cli(SATURATED, "--no-builtin-rules", "--rules", _pack(tmp_path, joined))
    assert run.code == 2 and "rule.yaml:8:" in run.err and "'$m.distance_use' refers to pattern 'm'" in run.err


TEAM = """\
    id: deviating-conv
    title: {en: A conv deviates, zh: 卷积偏离}
    severity: warning
    root_cause: true
    docs:
      en: {what: a, why: b, fix: c}
      zh: {what: a, why: b, fix: c}
    when: {fact: op, op_type: Conv2D, out_deviates: true}
    emit: {kind: problem_node, evidence: {en: "{{ m.op }}", zh: "{{ m.op }}"}}
    cases:
      - {name: f, expect: fire, facts: [{fact: op, id: "op:1", index: 1, op: c, op_type: Conv2D, out_deviates: true}]}
      - {name: s, expect: silent, facts: [{fact: op, id: "op:1", index: 1, op: c, op_type: Conv2D}]}
"""


def test_a_team_pack_alone_is_judged_by_the_builtin_judgement(tmp_path, run_cli):
    """--no-builtin-rules runs the team's rules only; which tensors deviate is still decided, by the built-in
    judgement rules, unless the team's pack judges a flag itself."""
    run = run_cli(SATURATED, "--no-builtin-rules", "--rules", _pack(tmp_path, TEAM), "--format", "json")
    assert run.code == 0, run.err
    assert _verdict(run) == ("problem_node", "Conv_8")
    judging = tmp_path / "judging"
    judging.mkdir()
    run = run_cli(SATURATED, "--no-builtin-rules", "--rules", _pack(judging, JUDGE), "--format", "json")
    assert run.code == 0, run.err     # the team's strict-deviation judges 'deviates'; no second rule for it
