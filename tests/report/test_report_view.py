"""The view model: what every format shows, computed once."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from advisor.advice import first_sentence
from advisor.diagnosis import Diagnosis, Finding
from advisor.errors import UsageError
from advisor.report import build_view
from advisor.report.labels import TEXTS


def test_verdict_leads_with_the_root_cause(root_cause: Diagnosis) -> None:
    view = build_view(root_cause, "en")
    assert view.verdict == "fp16_overflow"
    assert view.severity == "error"
    assert view.headline == "FP16 overflow at LayerNorm_3/Pow (op 12)"
    assert view.summary.startswith("Most likely root cause: FP16 overflow at LayerNorm_3/Pow (op 12). 3 other "
                                   "findings are explained by it (the same event at its op, or its propagation). "
                                   "Next step: Keep LayerNorm_3/Pow,LayerNorm_3/ReduceMean in FP32")
    # Each fact once: the evidence is the root cause finding's, right below the verdict, not the summary's too.
    assert "max |x|" not in view.summary and view.root_cause.evidence.startswith("max |x|")
    assert view.root_cause is not None and view.root_cause.index == 12 and view.root_cause.is_root_cause


def test_a_consistent_network_says_so_plainly(consistent: Diagnosis) -> None:
    view = build_view(consistent, "en")
    assert view.is_consistent and view.root_cause is None and view.verdict == "consistent"
    assert view.severity == "ok"
    assert view.headline == "Consistent: the NPU results match the golden results"
    assert "nothing needs fixing" in view.summary
    assert "all 80 ops within thresholds" in view.summary


def test_a_deviating_network_without_a_root_cause_is_not_called_consistent(unexplained: Diagnosis) -> None:
    view = build_view(unexplained, "en")
    assert not view.is_consistent and view.verdict == "unexplained" and view.severity == "warning"
    assert view.headline == "No root cause found: the network deviates, but no rule explains it"
    assert view.summary.startswith("15 ops deviate, the first at BatchNormalization_13 (op 10). "
                                   "The network output cosine is 0.007333. Compare the inputs")
    assert "0.007333" in build_view(unexplained, "zh").summary


def test_symptoms_are_grouped_under_the_cause_that_explains_them(root_cause: Diagnosis) -> None:
    view = build_view(root_cause, "en")
    assert [g.cause.id for g in view.groups] == ["fp16-overflow@12", "problem-node@57"]
    assert [s.index for s in view.groups[0].symptoms] == [13, 14, 40]
    assert view.groups[0].symptoms_heading == "Explained by FP16 overflow at LayerNorm_3/Pow (op 12)"
    assert view.groups[1].symptoms == ()
    assert [f.id for f in view.findings][0] == "fp16-overflow@12"     # every finding, rank order


def test_a_chain_of_explanations_groups_under_the_top_cause(root_cause: Diagnosis) -> None:
    # 40 is explained by 14, which is explained by the root cause.
    root_cause.findings[-1].explained_by = "problem-node@14"
    view = build_view(root_cause, "en")
    assert [s.index for s in view.groups[0].symptoms] == [13, 14, 40]


def test_unknown_or_looping_explanations_leave_the_finding_active(root_cause: Diagnosis) -> None:
    root_cause.findings[2].explained_by = "no-such-finding"          # op 13
    root_cause.findings[3].explained_by = "problem-node@40"          # op 14 <-> op 40
    root_cause.findings[4].explained_by = "problem-node@14"
    view = build_view(root_cause, "en")
    active = [g.cause.index for g in view.groups]
    assert active == [12, 57, 13, 14, 40]


def test_the_root_cause_is_never_explained_away(root_cause: Diagnosis) -> None:
    root_cause.findings[0].explained_by = "problem-node@57"
    view = build_view(root_cause, "en")
    assert [g.cause.id for g in view.groups] == ["fp16-overflow@12", "problem-node@57"]


def test_root_cause_missing_from_findings_is_still_shown_first(root_cause: Diagnosis) -> None:
    root_cause.findings = root_cause.findings[1:]
    view = build_view(root_cause, "en")
    assert view.findings[0].id == "fp16-overflow@12"
    assert view.groups[0].cause.is_root_cause


def test_chinese_view_uses_chinese_texts_and_falls_back_to_english_evidence(root_cause: Diagnosis) -> None:
    view = build_view(root_cause, "zh")
    assert view.headline == "FP16 溢出：LayerNorm_3/Pow（第 12 号算子）"
    assert view.summary.startswith("最可能的根因：")
    assert view.root_cause.evidence.startswith("LayerNorm_3/Pow 的输出")
    assert view.root_cause.advice.fixes[0].label == "昇腾 (ATC / torch_npu)"
    independent = view.groups[1].cause
    assert independent.evidence == "inputs agree (cosine 0.9991), output cosine 0.962"   # no zh evidence
    assert view.labels["findings"] == "发现"


def test_advice_is_rendered_with_the_finding(root_cause: Diagnosis) -> None:
    advice = build_view(root_cause, "en").root_cause.advice
    assert advice.what.startswith("LayerNorm_3/Pow (Pow) produces values")
    assert [f.backend for f in advice.fixes] == ["ascend", "tensorrt", "pytorch"]
    assert advice.summary == "Keep LayerNorm_3/Pow,LayerNorm_3/ReduceMean in FP32 with `--keep_dtype=keep_dtype.cfg`."


def test_an_info_root_cause_reads_as_a_note(single_point: Diagnosis) -> None:
    view = build_view(single_point, "en")
    assert view.summary.startswith("Note: Single-point deviation at Conv_30 (op 30).")
    assert view.severity == "info"


def test_network_level_findings_have_no_location_and_index_na(consistent: Diagnosis) -> None:
    finding = build_view(consistent, "en").findings[0]
    assert finding.location == "" and finding.index_text == "NA"
    assert finding.tone == "ok"


def test_run_details_keep_numbers_and_display_text(root_cause: Diagnosis) -> None:
    view = build_view(root_cause, "en")
    network = {row.key: row for row in view.network}
    assert "id" not in network and "fact" not in network
    assert network["output_cosine"].value is None and network["output_cosine"].text == "NaN"
    assert network["ops"].label == "Ops" and network["ops"].value == 80
    assert [(r.dtype, r.metric, r.value) for r in view.thresholds][0] == ("float16", "cosine", 0.99)
    assert [(p.name, p.version, p.source) for p in view.packs] == [("core", "1.0.0", "rules/core")]
    assert view.overrides[0].key == "cosine.float16" and view.warnings


def test_markers_highlight_the_root_cause_and_mark_the_rest(root_cause: Diagnosis) -> None:
    roles = {m.index: m.role for m in build_view(root_cause, "en").markers}
    assert roles == {12: "root", 57: "finding", 13: "symptom", 14: "symptom", 40: "symptom"}


def test_nan_confidence_is_shown_as_unknown() -> None:
    finding = Finding(id="x", rule="r", pack="p", kind="problem_node", severity="warning",
                      title={"en": "Problem node"}, op="a", index=1, confidence=float("nan"))
    diagnosis = Diagnosis(root_cause=finding, findings=[finding], network={}, inputs={}, packs=[],
                          thresholds={})
    view = build_view(diagnosis, "zh")
    assert view.root_cause.confidence is None and view.root_cause.confidence_text == "—"
    assert view.root_cause.title == "Problem node"          # no zh title: English


def test_unknown_language_is_a_usage_error(root_cause: Diagnosis) -> None:
    with pytest.raises(UsageError, match="unknown report language 'fr': use one of en, zh"):
        build_view(root_cause, "fr")


def test_every_ui_string_exists_in_both_languages_with_the_same_placeholders() -> None:
    for key, (en, zh) in TEXTS.items():
        assert en.strip() and zh.strip(), key
        assert sorted(re.findall(r"\{(\w+)\}", en)) == sorted(re.findall(r"\{(\w+)\}", zh)), key


def test_the_view_is_immutable(root_cause: Diagnosis) -> None:
    view = build_view(root_cause, "en")
    with pytest.raises(AttributeError):
        view.headline = "x"  # type: ignore[misc]
    assert replace(view, headline="x").headline == "x"


def test_the_verdict_names_only_the_first_sentence_of_the_fix() -> None:
    assert first_sentence("Keep x in FP32: pass `--a`. `--b` keeps all. More.") == "Keep x in FP32: pass `--a`."
    assert first_sentence("将 x 保持为 FP32。再运行。") == "将 x 保持为 FP32。"
    assert first_sentence("Use max|x| >= 3.4e38 e.g.\nhere") == "Use max|x| >= 3.4e38 e.g. here"
