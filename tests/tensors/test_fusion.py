"""Fused ops: which golden ops a target op stands for, from a graph, a map or names and order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.errors import InputFormatError
from advisor.tensors.fusion import TargetOpInfo, build_fusion_map, fuse_by_names
from advisor.tensors.fusion_sources import read_sources


def read_fusion_map(path, targets=(), golden=(), **kw):
    """The fusion map ``path`` gives for target ops {name: (type, shape)} and golden ops {name: shape}."""
    infos = [TargetOpInfo(name, kind, shape) for name, (kind, shape) in dict(targets).items()]
    return build_fusion_map(read_sources([path], **kw), infos, list(dict(golden).items()))

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
GE_TEXT = '''graph {
  name: "ge_default"
  op {
    name: "conv1/Conv2D"
    type: "Conv2D"
    attr {
      key: "_datadump_original_op_names"
      value {
        list {
          s: "conv1/Conv2D"
          s: "conv1/BiasAdd"
          s: "conv1/Relu"
          s: "conv1/Relu"
          val_type: VT_LIST_STRING
        }
      }
    }
  }
  op {
    name: "trans_TransData_3"
    type: "TransData"
    attr {
      key: "_datadump_original_op_names"
      value {
        list {
          val_type: VT_LIST_STRING
        }
      }
    }
  }
  op {
    name: "pool1"
    type: "MaxPool"
  }
}
'''


def test_ge_text_groups_come_from_datadump_original_op_names(tmp_path):
    path = tmp_path / "ge_proto_00000001_Build.txt"
    path.write_text(GE_TEXT)
    fusion = read_fusion_map(path)
    assert "ge-text" in fusion.source
    assert fusion.how["conv1_Conv2D"] == "fusion-info"
    assert fusion.groups["conv1_Conv2D"] == ["conv1_Conv2D", "conv1_BiasAdd", "conv1_Relu"]
    assert fusion.groups["trans_TransData_3"] == []       # inserted by the compiler: GroundTruth *
    assert "pool1" not in fusion.groups                    # no attribute: paired by name


def test_a_real_ge_graph_dump_reads(tmp_path):
    path = REALDATA / "hicann__oam-tools" / ("test__st__msaicerr__res__ori_data__complie_path_train__aic_error__"
                                             "ge_proto_00056_Build.txt")
    fusion = read_fusion_map(path)
    assert fusion.groups and any(group == ["GatherV2"] for group in fusion.groups.values())


def test_an_unbalanced_ge_text_is_an_input_error(tmp_path):
    path = tmp_path / "ge.txt"
    path.write_text(GE_TEXT.rsplit("}", 1)[0])
    with pytest.raises(InputFormatError, match="ge.txt"):
        read_fusion_map(path)


def test_a_json_mapping_is_groundtruth_in_another_file(tmp_path):
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps({"Conv_0": "Conv_0,PRelu_1", "conv/x": ["conv/x", "relu.y"], "trans_Cast_0": "*"}))
    fusion = read_fusion_map(path)
    assert fusion.groups == {"Conv_0": ["Conv_0", "PRelu_1"], "conv_x": ["conv_x", "relu_y"], "trans_Cast_0": []}
    assert set(fusion.how.values()) == {"map"}


def test_a_bad_json_mapping_names_the_field(tmp_path):
    path = tmp_path / "mapping.json"
    path.write_text(json.dumps({"Conv_0": 3}))
    with pytest.raises(InputFormatError, match="Conv_0"):
        read_fusion_map(path)


def test_a_file_that_is_no_graph_is_an_input_error(tmp_path):
    pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\x00\x01garbage")
    with pytest.raises(InputFormatError, match="ONNX model"):
        read_fusion_map(path)


def test_onnx_fusion_folds_activations_forward_and_pads_backward(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Pad", ["x", "pads"], ["Pad_0"], name="Pad_0"),
             helper.make_node("Conv", ["Pad_0", "w"], ["Conv_1"], name="Conv_1"),
             helper.make_node("Relu", ["Conv_1"], ["Relu_2"], name="Relu_2"),
             helper.make_node("MaxPool", ["Relu_2"], ["MaxPool_3"], name="MaxPool_3", kernel_shape=[2, 2])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("MaxPool_3", TensorProto.FLOAT, None)],
        [helper.make_tensor("pads", TensorProto.INT64, [8], [0] * 8),
         helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0])])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    fusion = read_fusion_map(path, {"x": ("Data", (1, 1, 4, 4)), "Conv_1": ("Conv2D", (1, 1, 6, 6)),
                                    "MaxPool_3": ("MaxPoolV3", (1, 1, 3, 3))},
                             {"x": (1, 1, 4, 4), "Pad_0": (1, 1, 6, 6), "Conv_1": (1, 1, 6, 6), "Relu_2": (1, 1, 6, 6),
                              "MaxPool_3": (1, 1, 3, 3)})
    assert onnx is not None
    assert fusion.groups["Conv_1"] == ["Pad_0", "Conv_1", "Relu_2"]
    assert fusion.how["Conv_1"] == "graph" and fusion.how["MaxPool_3"] == "name"
    assert fusion.inputs_of["Conv_1"] == [("x", 0)]            # the group's one activation; weights are not dumped
    assert fusion.outputs == [("MaxPool_3", 0)]


def test_without_a_graph_neighbours_of_the_same_shape_fold_into_the_op_before():
    order = [("x", (1, 4)), ("Pad_0", (1, 6)), ("Conv_1", (1, 6)), ("Relu_2", (1, 6)), ("MaxPool_3", (1, 3))]
    named = {"x": "x", "Conv_1": "Conv_1", "MaxPool_3": "MaxPool_3"}
    groups = fuse_by_names(order, named, {"x": (1, 4), "Conv_1": (1, 6), "MaxPool_3": (1, 3)})
    assert groups == {"x": ["x"], "Conv_1": ["Pad_0", "Conv_1", "Relu_2"], "MaxPool_3": ["MaxPool_3"]}
