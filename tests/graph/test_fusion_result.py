"""fusion_result.json in both layouts: the five real files and the ways a file can be wrong."""

from __future__ import annotations

import json

import pytest

from advisor.errors import InputFormatError
from advisor.graph import detect_format, read_fusion_result, read_graph
from tests.graph.conftest import FUSION_ASYS, FUSION_CTPN, FUSION_INT8, FUSION_YOLO_ATC, FUSION_YOLO_TORCH


def test_asys_session_one_pass_took_effect_one_only_matched(realdata):
    report = read_fusion_result(realdata(FUSION_ASYS))
    assert report.layout == "sessions" and report.sessions == ["0_11"]
    assert report.effective_passes() == {"RefreshInt64ToInt32FusionPass": 1}
    assert report.matched_without_effect() == {"ConstToAttrGatherV2Fusion": 1}
    assert report.match_times("ConstToAttrGatherV2Fusion") == 1
    assert report.effect_times("ConstToAttrGatherV2Fusion") == 0


def test_ctpn_older_single_dict_layout(realdata):
    path = realdata(FUSION_CTPN)
    assert detect_format(path) == "fusion-result"
    report = read_fusion_result(path)
    assert report.layout == "single" and report.sessions == ["0_0"]
    frame = report.to_frame()
    assert frame.groupby("kind")["pass_name"].nunique().to_dict() == {"graph_fusion": 19, "ub_fusion": 1}
    effective = report.effective_passes()
    assert len(effective) == 8
    assert list(effective.items())[:3] == [("TbeCommonRules0FusionPass", 150), ("TransposedUpdateFusionPass", 110),
                                           ("ConstToAttrPass", 70)]
    assert effective["GRUFusionPass"] == 20 and effective["ZSplitDFusionPass"] == 20
    assert report.matched_without_effect()["ConvToFullyConnectionFusionPass"] == 170
    assert report.kinds_of("TbeCommonRules0FusionPass") == {"ub_fusion"}
    assert frame["repository_hit_times"].isna().all()     # the older files do not have it


def test_yolov8_atc_conversion(realdata):
    report = read_fusion_result(realdata(FUSION_YOLO_ATC))
    assert len(report.passes) == 34 and len(report.effective_passes()) == 13
    assert report.effect_times("TbeConvSigmoidMulQuantFusionPass") == 62      # conv + SiLU UB fusion
    assert report.effect_times("TbeAippCommonFusionPass") == 1                # AIPP fused into the first conv
    assert report.effect_times("ZSplitVFusionPass") == 11
    assert report.kinds_of("TbeConvSigmoidMulQuantFusionPass") == {"ub_fusion"}
    assert report.match_times("AConv2dMulFusion") == 63 and report.effect_times("AConv2dMulFusion") == 0
    assert report.to_frame()["repository_hit_times"].notna().sum() == 5       # ub passes carry it


def test_yolov8_torch_npu_training_has_148_sessions(realdata):
    report = read_fusion_result(realdata(FUSION_YOLO_TORCH))
    assert len(report.sessions) == 148 and report.sessions[:2] == ["0_0", "100_100"]
    assert len(report.passes) == 23
    assert report.effective_passes() == {"RefreshInt64ToInt32FusionPass": 148, "MatmulTransdataFusionPass": 27,
                                         "DiagFusionPass": 6, "ConvCastFusionPass": 1}
    assert [c.name for c in report.by_session("102_102")] == ["RealDiv2MulsFusionPass",
                                                              "RefreshInt64ToInt32FusionPass"]


def test_int8_quantised_model_passes(realdata):
    report = read_fusion_result(realdata(FUSION_INT8))
    assert len(report.passes) == 51 and len(report.effective_passes()) == 20
    effective = report.effective_passes()
    assert effective["V200NotRequantFusionPass"] == 501 and report.match_times("V200NotRequantFusionPass") == 551
    assert effective["Conv2DQuantProcessFusionPass"] == 262 and effective["FixPipeAbilityProcessPass"] == 262
    assert effective["TbeEltwiseQuantFusionPass"] == 94 and effective["AvgPoolQuantProcessFusionPass"] == 8
    assert effective["AutomaticUbFusion"] == 153


def test_a_fusion_result_is_not_a_graph_and_a_graph_is_not_a_fusion_result(realdata, tmp_path):
    with pytest.raises(InputFormatError, match="fusion_result.json .* not a graph"):
        read_graph(realdata(FUSION_ASYS))
    graph_file = tmp_path / "model.json"
    graph_file.write_text(json.dumps({"name": "m", "graph": [{"name": "g", "op": []}]}), encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"not a fusion_result.json: this file is a graph \(om-json\)"):
        read_fusion_result(graph_file)


def write(tmp_path, document) -> object:
    path = tmp_path / "fusion_result.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(("document", "message"), [
    ([{"session_and_graph_id": "0_1", "graph_fusion": {"P": {"match_times": "x", "effect_times": "0"}}}],
     "match_times is 'x', not a whole number"),
    ([{"session_and_graph_id": "0_1", "graph_fusion": {"P": {"match_times": "1"}}}], "effect_times is missing"),
    ([{"session_and_graph_id": "0_1", "graph_fusion": {"P": "1"}}], "pass P has no counts object"),
    ([{"session_and_graph_id": "0_1", "ub_fusion": ["P"]}], "ub_fusion is not a map"),
    ([{"session_and_graph_id": "0_1", "graph_fusion": {"P": {"match_times": "-1", "effect_times": "0"}}}],
     "not a count"),
])
def test_bad_counts_name_the_session_and_pass(tmp_path, document, message):
    with pytest.raises(InputFormatError, match=message) as caught:
        read_fusion_result(write(tmp_path, document))
    assert "session 0_1" in str(caught.value) and caught.value.field is not None


def test_an_empty_session_list_is_an_empty_report(tmp_path):
    report = read_fusion_result(write(tmp_path, []))
    assert report.sessions == [] and report.effective_passes() == {} and len(report.to_frame()) == 0


def test_integer_counts_are_accepted(tmp_path):
    report = read_fusion_result(write(tmp_path, {"graph_fusion": {"P": {"match_times": 2, "effect_times": 1}}}))
    assert report.layout == "single" and report.sessions == ["0"] and report.effective_passes() == {"P": 1}
