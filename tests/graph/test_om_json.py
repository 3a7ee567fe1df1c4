"""OM models converted to JSON (atc --mode=1): the real tdnn and NMS models from Ascend/msit."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from advisor.errors import InputFormatError
from advisor.graph import detect_format, read_graph
from tests.graph.conftest import OM_NMS, OM_TDNN

BN_60 = "BatchNormalization_60_BNInferenceD"


def test_tdnn_model_ops_and_model_attributes(realdata):
    path = realdata(OM_TDNN)
    assert detect_format(path) == "om-json"
    graph = read_graph(path)
    assert graph.format == "om-json" and graph.name == "tdnn" and len(graph) == 132
    types = Counter(n.op_type for n in graph)
    assert types["Const"] == 47 and types["TransData"] == 16 and types["Transpose"] == 14
    assert types["BNInferenceD"] == 7 and types["Conv2D"] == 5 and types["BatchMatMulV2"] == 3
    assert graph.atc_cmdline.endswith("atc.bin --framework=5 --model=tdnn.onnx --output=tdnn --soc_version=Ascend310")
    assert graph.attributes["soc_version"] == "Ascend310"
    assert graph.attributes["attr_model_out_nodes_name"] == ["Squeeze_391:0:output"]
    assert graph.inputs == ("feats:0",) and graph.outputs == ("trans_Cast_95:0",)
    assert {n.graph for n in graph} == {"tdnn_NPU_0"} and graph.subgraphs == {}
    assert graph.warnings == []


def test_tdnn_fused_ops_and_their_original_names(realdata):
    graph = read_graph(realdata(OM_TDNN))
    raw = [n for n in graph if len(n.attributes.get("_datadump_original_op_names") or []) > 1]
    assert len(raw) == 31                      # ops whose list names more than one entry...
    assert sum(n.is_fused for n in graph) == 13  # ...of which 13 after dropping repeats
    bn = graph.node(BN_60)
    assert bn.attributes["_datadump_original_op_names"] == [
        "BatchNormalization_60", "Transpose_55", "Transpose_55", "Constant_56", "Constant_57", "Constant_58",
        "Constant_59"]
    assert bn.fused_from == ("BatchNormalization_60", "Transpose_55", "Constant_56", "Constant_57", "Constant_58",
                             "Constant_59")
    assert bn.passes == ("BatchNormPreprocessFusionPass", "BatchNormBnInferFusionPass", "HostBNFusionPass")
    assert bn.fusion_scope == -15
    transpose = graph.node("PartitionedCall_Transpose_0_Transpose_1")
    assert transpose.fused_from == ("Transpose_0",) and not transpose.is_fused
    assert graph.node("Div_331Mul_333Add_335Mul_337Add_338").passes == ("AutomaticUbFusion",)


def test_tdnn_pass_names_counted_over_ops(realdata):
    counts = read_graph(realdata(OM_TDNN)).pass_counts()
    assert counts["BatchNormPreprocessFusionPass"] == 7
    assert counts["BatchNormBnInferFusionPass"] == 7 and counts["HostBNFusionPass"] == 7
    assert counts["MatMulBiasAddFusionPass"] == 3
    assert counts["TbeFullyconnectionElemwiseDequantFusionPass"] == 2
    assert counts["AutomaticUbFusion"] == 1 and counts["TbeEltwiseCastFusionPass"] == 1
    assert counts["MulSquareFusionPass"] == 1
    assert counts["TbeReduceElemwiseFusionPass"] == 3   # from pass_name_ub, scalar in one op, list in others


def test_one_golden_op_can_live_in_several_target_ops(realdata):
    graph = read_graph(realdata(OM_TDNN))
    assert graph.targets_of("Transpose_55") == ("PartitionedCall_Transpose_55_Transpose_21", BN_60)
    assert graph.targets_of("BatchNormalization_60") == (BN_60,)
    assert len(graph.targets_of("RandomNormalLike_327")) == 3


def test_tdnn_edges_dtypes_and_inserted_ops(realdata):
    graph = read_graph(realdata(OM_TDNN))
    assert graph.predecessors(BN_60) == ["PartitionedCall_Transpose_55_Transpose_21", "dynamic_const_67614_258",
                                         "dynamic_const_67614_259"]
    assert graph.successors(BN_60) == ["Pad_109"]
    # FP16 on the device, FP32 in the original model: the precision change is on every tensor
    desc = graph.node(BN_60).output_descs[0]
    assert (desc.dtype, desc.origin_dtype, desc.shape) == ("float16", "float32", (1, 512, 1800))
    cast = graph.node("trans_Cast_0")
    assert cast.is_inserted and cast.inputs[0].source == "feats" and cast.output_descs[0].dtype == "float16"
    assert cast.control_inputs == ("atomic_addr_clean-1_0_1",)
    assert sum(len(n.control_inputs) for n in graph) == 33
    assert graph.topological_order()[-2:] == ["trans_Cast_95", "Node_Output"]


def test_nms_model_pretty_printed(realdata):
    graph = read_graph(realdata(OM_NMS))
    assert graph.name == "sub_model" and len(graph) == 19
    assert Counter(n.op_type for n in graph)["Cast"] == 5
    assert graph.inputs == ("boxes_all:0", "scores_all:0")
    assert "--input_shape=boxes_all:1000,80,4;scores_all:1000,80" in graph.atc_cmdline
    assert graph.pass_counts() == {"ConstToAttrStridedSliceV2Fusion": 1}
    assert graph.node("Slice_1218").op_type == "StridedSliceD"
    assert not any(n.is_fused for n in graph)


def om(ops: list, **extra) -> dict:
    return {"name": "m", "attr": [{"key": "atc_cmdline", "value": {"s": "atc --model=m.onnx"}}],
            "graph": [{"name": "g", "op": ops}], **extra}


def test_scalar_and_list_attributes_and_null_values(tmp_path):
    ops = [{"name": "x", "type": "Data"},
           {"name": "y", "type": "Cast", "input": ["x:0"], "attr": [
               {"key": "pass_name", "value": {"s": "OnePass"}},
               {"key": "_datadump_original_op_names", "value": {"list": {"s": ["Cast_1", "Cast_1"]}}},
               {"key": "shape_range", "value": None},
               {"key": "lli", "value": {"list_list_int": {"list_list_i": [{"list_i": [1, 2]}, {}]}}}]}]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(om(ops)), encoding="utf-8")
    graph = read_graph(path)
    y = graph.node("y")
    assert y.passes == ("OnePass",) and y.fused_from == ("Cast_1",)
    assert y.attributes["shape_range"] is None and y.attributes["lli"] == [[1, 2], []]
    assert graph.atc_cmdline == "atc --model=m.onnx"
    assert graph.node("x").op_id == 0


def test_src_name_inputs_when_input_is_absent(tmp_path):
    ops = [{"name": "x", "type": "Data"}, {"name": "y", "type": "Relu", "src_name": ["x"], "src_index": [0]}]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(om(ops)), encoding="utf-8")
    assert read_graph(path).predecessors("y") == ["x"]


def test_a_malformed_op_is_named(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(om([{"name": "bad", "type": "Relu", "id": "seven"}])), encoding="utf-8")
    with pytest.raises(InputFormatError, match="malformed OM model JSON: op 'bad'"):
        read_graph(path)


def test_invalid_json_names_the_line(tmp_path):
    path = tmp_path / "model.json"
    path.write_text('{"name": "m",\n "graph": [\n  {"op": [}]}', encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_graph(path)
    assert caught.value.line == 3 and "not valid JSON" in str(caught.value)
