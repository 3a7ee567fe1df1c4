"""Findings -> remedy steps: which findings count, in what order, cumulative steps, the cap, the FP16
overflow spelling, and warnings instead of crashes for requests this version does not know."""

from __future__ import annotations

from advisor.remedy import BACKEND_NAMES, remedy_for
from advisor.remedy.model import KNOBS, normalise_setting

from .conftest import finding, quant_findings


def kept(step) -> list[str]:
    return [op.op for op in step.keep]


def test_settings_come_first_then_one_cumulative_step_per_finding() -> None:
    root, second = quant_findings()
    remedy, warnings = remedy_for(root, [root, second])
    assert warnings == []
    assert [s.step for s in remedy.steps] == [1, 2, 3]
    first, keep_root, keep_second = remedy.steps
    assert first.settings == {"weight_quant_granularity": "per_channel", "activation_quant_algo": "asymmetric",
                              "activation_calibration": "percentile", "activation_percentile": 99.99}
    assert first.keep == () and first.findings == (root.id, second.id)
    assert kept(keep_root) == ["MatMul_12", "Softmax_13"] and keep_root.settings == first.settings
    assert kept(keep_second) == ["MatMul_12", "Softmax_13", "Conv_40"]        # cumulative
    assert keep_second.findings == (root.id, second.id)
    assert [(op.golden, op.op_type, op.precision, op.finding) for op in keep_second.keep] == [
        (("/enc/layer.0/attn/MatMul",), "MatMul", "float16", root.id),
        (("/enc/layer.0/attn/Softmax",), "SoftmaxV2", "float16", root.id),
        (("/head/conv/Conv",), "Conv2D", "float32", second.id)]
    assert remedy.quantised and remedy.backends == BACKEND_NAMES


def test_without_settings_step_one_is_the_root_causes_ops() -> None:
    root = finding("a@1", {"fix_keep": "A,B"})
    other = finding("b@5", {"fix_keep": "B,C"})
    remedy, _ = remedy_for(root, [root, other])
    assert [kept(s) for s in remedy.steps] == [["A", "B"], ["A", "B", "C"]]    # B asked twice, kept once
    assert remedy.steps[0].findings == ("a@1",) and remedy.steps[1].findings == ("a@1", "b@5")


def test_the_root_cause_leads_even_when_ranked_later_and_symptoms_or_notes_never_count() -> None:
    root = finding("root@9", {"fix_keep": "R"})
    earlier = finding("cause@2", {"fix_keep": "E"})
    symptom = finding("sym@10", {"fix_keep": "S"}, explained_by="root@9")
    note = finding("note@3", {"fix_keep": "N"}, root_cause=False)
    remedy, _ = remedy_for(root, [earlier, note, root, symptom])
    assert [kept(s) for s in remedy.steps] == [["R"], ["R", "E"]]


def test_at_most_four_steps_and_the_last_holds_everything() -> None:
    findings = [finding(f"f@{i}", {"fix_keep": f"Op_{i}"}) for i in range(6)]
    remedy, _ = remedy_for(findings[0], findings)
    assert len(remedy.steps) == 4
    assert [kept(s) for s in remedy.steps] == [["Op_0"], ["Op_0", "Op_1"], ["Op_0", "Op_1", "Op_2"],
                                               [f"Op_{i}" for i in range(6)]]
    assert remedy.steps[-1].findings == tuple(f"f@{i}" for i in range(6))
    with_settings = [finding("s@0", {"fix_settings": "weight_quant_granularity=per_channel"}), *findings]
    remedy, _ = remedy_for(with_settings[0], with_settings)
    assert len(remedy.steps) == 4 and remedy.steps[0].keep == ()
    assert kept(remedy.steps[-1]) == [f"Op_{i}" for i in range(6)]


def test_fp16_overflow_keep_lists_are_golden_names_kept_in_float32() -> None:
    one = finding("fp16-overflow@5", {"keep_fp32": "Pow_4,ReduceMean_5", "fix_precision": "float16"},
                  kind="fp16_overflow")
    remedy, _ = remedy_for(one, [one])
    (step,) = remedy.steps
    assert [(op.op, op.golden, op.precision) for op in step.keep] == [("Pow_4", ("Pow_4",), "float32"),
                                                                       ("ReduceMean_5", ("ReduceMean_5",), "float32")]
    assert not remedy.quantised                     # nothing below float16: an FP16 build
    both = finding("fp16-overflow@5", {"keep_fp32": "Pow_4", "keep_fp32_all": "Pow_4,Pow_34,Sqrt_37"})
    remedy, _ = remedy_for(both, [both])
    assert kept(remedy.steps[0]) == ["Pow_4", "Pow_34", "Sqrt_37"]           # keep_fp32_all wins


def test_golden_names_pair_one_to_one_or_go_with_every_op() -> None:
    paired = finding("a@1", {"fix_keep": "T1,T2", "fix_keep_golden": "G1,G2"})
    fused = finding("b@2", {"fix_keep": "Fused_3", "fix_keep_golden": "Conv_1,Add_2,Relu_3"})
    only_target = finding("c@3", {"fix_keep": "T4"})
    remedy, _ = remedy_for(paired, [paired, fused, only_target])
    assert [(op.op, op.golden) for op in remedy.steps[-1].keep] == [
        ("T1", ("G1",)), ("T2", ("G2",)), ("Fused_3", ("Conv_1", "Add_2", "Relu_3")), ("T4", ("T4",))]


def test_requests_this_version_does_not_know_are_kept_and_warned_about() -> None:
    root = finding("q@1", {"fix_settings": "weight_quant_granularity=per_axis;new_knob=7;garbage;"
                                           "activation_percentile=101",
                           "fix_keep": "A,B", "fix_keep_types": "OnlyOne", "fix_precision": "bfloat16"})
    remedy, warnings = remedy_for(root, [root])
    assert remedy.steps[0].settings == {"weight_quant_granularity": "per_axis", "new_knob": "7",
                                        "activation_percentile": "101"}
    assert [op.precision for op in remedy.steps[1].keep] == ["float32", "float32"]
    assert [op.op_type for op in remedy.steps[1].keep] == [None, None]
    text = "\n".join(warnings)
    for expected in ("weight_quant_granularity must be one of per_tensor, per_channel, not 'per_axis'",
                     "unknown fix_settings knob 'new_knob'", "'garbage' is not knob=value",
                     "activation_percentile must be a number in (0, 100], not '101'",
                     "fix_keep_types has 1 types for 2 ops", "fix_precision 'bfloat16'"):
        assert expected in text
    assert all(w.startswith("finding q@1: ") for w in warnings)


def test_a_lower_ranked_finding_cannot_override_a_setting() -> None:
    root = finding("a@1", {"fix_settings": "activation_quant_algo=asymmetric"})
    other = finding("b@2", {"fix_settings": "activation_quant_algo=symmetric;weight_quant_symmetric=FALSE"})
    remedy, warnings = remedy_for(root, [root, other])
    assert remedy.steps[0].settings == {"activation_quant_algo": "asymmetric", "weight_quant_symmetric": False}
    assert warnings == ["finding b@2 asks for activation_quant_algo=symmetric, a finding ranked higher for "
                        "asymmetric; keeping the latter"]


def test_nothing_to_remedy_is_none() -> None:
    plain = finding("problem-node@3", {"out_cosine": 0.5})
    assert remedy_for(plain, [plain]) == (None, [])
    assert remedy_for(None, []) == (None, [])


def test_backends_follow_the_choice_else_the_build_tool_else_all() -> None:
    root = finding("a@1", {"fix_keep": "A"})
    assert remedy_for(root, [root], ("tensorrt",))[0].backends == ("tensorrt",)
    assert remedy_for(root, [root], (), config={"tool": "atc"})[0].backends == ("ascend",)
    assert remedy_for(root, [root], (), config={"tool": "magicmind"})[0].backends == ("magicmind",)
    assert remedy_for(root, [root], (), config={"tool": "unknown"})[0].backends == BACKEND_NAMES
    remedy, _ = remedy_for(root, [root], ("pytorch",), config={"tool": "atc"})
    assert remedy.backends == ("pytorch",) and set(remedy.steps[0].files) == {"pytorch"}


def test_an_integer_network_or_build_makes_the_remedy_a_quantised_one() -> None:
    root = finding("a@1", {"fix_keep": "A"})
    assert not remedy_for(root, [root], network={"compute_dtype": "float16"})[0].quantised
    assert remedy_for(root, [root], network={"compute_dtype": "int8"})[0].quantised
    assert remedy_for(root, [root], config={"tool": "magicmind", "precision_mode": "qint8_mixed_float16"})[0].quantised


def test_summaries_in_both_languages_say_what_the_step_adds() -> None:
    root, second = quant_findings()
    steps = remedy_for(root, [root, second])[0].steps
    assert steps[0].summary["en"].startswith("Change the quantisation settings: weight_quant_granularity=per_channel")
    assert steps[1].summary["en"] == "As step 1, and keep 2 ops more in float16: MatMul_12, Softmax_13 (2 kept in all)."
    assert steps[2].summary["zh"] == "在第 2 步的基础上，再将 1 个算子保持为 float32：Conv_40（共 3 个）。"
    many = finding("a@1", {"fix_keep": ",".join(f"Op_{i}" for i in range(7))})
    (step,) = remedy_for(many, [many])[0].steps
    assert step.summary["en"] == "Keep 7 ops in float32: Op_0, Op_1, Op_2, Op_3 and 3 more."


def test_every_knob_value_normalises() -> None:
    for knob, (allowed, meaning) in KNOBS.items():
        assert meaning
        for value in allowed or ("99.99",):
            assert normalise_setting(knob, value.upper())[1] is None
