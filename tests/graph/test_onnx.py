"""ONNX models: binary (through the optional onnx package), exported from torch and hand-built; ONNX
graphs saved as JSON (no onnx needed)."""

from __future__ import annotations

import builtins
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputFormatError
from advisor.graph import detect_format, read_graph
from tests.conftest import SCENARIO_EXTRAS
from tests.graph.conftest import ONNX_JSON

SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios"
SCENARIO_MODELS = sorted(SCENARIOS.glob("*/model.onnx"))


@pytest.fixture
def tiny_torch_model(tmp_path) -> tuple[Path, object]:
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    pytest.importorskip("onnx")

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3)
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))

    torch.manual_seed(0)
    model = Tiny().eval()
    path = tmp_path / "tiny.onnx"
    with warnings.catch_warnings():  # the legacy exporter warns that it is legacy: not under test here
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.randn(1, 3, 8, 8), str(path), input_names=["x"], output_names=["y"],
                          dynamo=False)
    return path, model


@pytest.mark.scenarios
def test_torch_export_reads_with_edges_types_and_weights(tiny_torch_model):
    path, model = tiny_torch_model
    assert detect_format(path) == "onnx"
    graph = read_graph(path)
    assert graph.format == "onnx" and graph.attributes["producer_name"] == "pytorch"
    assert [n.op_type for n in graph.nodes if n.op_type != "Constant"] == ["Conv", "Relu", "ReduceMean", "Gemm"]
    assert graph.inputs == ("x",) and graph.outputs == ("y",)           # weights are not graph inputs
    conv = next(n for n in graph if n.op_type == "Conv")
    assert conv.inputs[0] == ("x", 0, "x") and conv.attributes["kernel_shape"] == [3, 3]
    relu = next(n for n in graph if n.op_type == "Relu")
    assert graph.predecessors(relu.name) == [conv.name]
    assert conv.output_descs[0].dtype == "float32" and conv.output_descs[0].shape == (1, 4, 6, 6)
    gemm = next(n for n in graph if n.op_type == "Gemm")
    assert graph.topological_order()[-1] == gemm.name and gemm.outputs == ("y",)
    # weight statistics match the torch parameters
    weight = model.conv.weight.detach().numpy()
    stats = graph.initializers[conv.inputs[1].tensor]
    assert stats.shape == (4, 3, 3, 3) and stats.dtype == "float32" and stats.channel_axis == 0
    assert stats.min == pytest.approx(float(weight.min())) and stats.max == pytest.approx(float(weight.max()))
    assert stats.mean == pytest.approx(float(weight.mean()), abs=1e-7)
    assert stats.std == pytest.approx(float(weight.std()), rel=1e-5)
    assert stats.channel_abs_max == pytest.approx(np.abs(weight).reshape(4, -1).max(axis=1).tolist())
    fc = graph.initializers["fc.weight"]                  # Gemm with transB=1: [out, in]
    assert fc.shape == (2, 4) and fc.channel_axis == 0 and len(fc.channel_abs_max) == 2
    bias = graph.initializers["fc.bias"]
    assert bias.channel_abs_max is None and bias.mean == pytest.approx(float(model.fc.bias.detach().mean()))


@pytest.mark.skipif(not SCENARIO_MODELS, reason="no scenario model.onnx committed")
@pytest.mark.parametrize("path", SCENARIO_MODELS, ids=lambda p: p.parent.name)
def test_scenario_models_read(path):
    pytest.importorskip("onnx")
    graph = read_graph(path)
    assert graph.name == "mtcnn_pnet" and len(graph) == 10 and graph.inputs == ("images",)
    assert [n.op_type for n in graph][:3] == ["Conv", "PRelu", "MaxPool"]
    assert graph.successors("PRelu_6") == ["Conv_7", "Conv_8"]
    assert graph.initializers["conv1.weight"].shape == (10, 3, 3, 3)
    assert len(graph.initializers["conv1.weight"].channel_abs_max) == 10
    assert all(n.output_descs[0].dtype == "float32" for n in graph)   # from shape inference
    assert graph.warnings == []


def hand_built_model(tmp_path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.array([[1.0, -3.0], [2.0, 0.5], [-1.0, 0.0]], dtype=np.float32), "W")
    then_graph = helper.make_graph([helper.make_node("Identity", ["h"], ["t_out"], name="then_id")], "then_branch",
                                   [], [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [1, 2])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["h"], ["e_out"])], "else_branch",
                                   [], [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [1, 2])])
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul"),
        helper.make_node("ReduceSum", ["h"], ["s"], name=""),          # unnamed: takes its output's name
        helper.make_node("Cast", ["s"], ["flag"], to=TensorProto.BOOL, name="cast"),
        helper.make_node("If", ["flag"], ["y"], name="branch", then_branch=then_graph, else_branch=else_graph),
        helper.make_node("Constant", [], ["c"], name="const", value=numpy_helper.from_array(np.ones(3, np.float32))),
    ]
    graph = helper.make_graph(nodes, "hand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3]),
                                              helper.make_tensor_value_info("W", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], initializer=[weight])
    path = tmp_path / "hand.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_initializers_listed_as_inputs_are_not_graph_inputs(tmp_path):
    graph = read_graph(hand_built_model(tmp_path))
    assert graph.inputs == ("x",)
    w = graph.initializers["W"]                          # MatMul B is [in, out]: channels on axis 1
    assert w.channel_axis == 1 and w.channel_abs_max == (2.0, 3.0)
    assert (w.min, w.max) == (-3.0, 2.0)


def test_control_flow_subgraphs_are_included_with_their_parent(tmp_path):
    graph = read_graph(hand_built_model(tmp_path))
    assert graph.subgraphs == {"branch/then_branch": "branch", "branch/else_branch": "branch"}
    assert set(graph.node("branch").subgraphs) == {"branch/then_branch", "branch/else_branch"}
    then_id = graph.node("then_id")
    assert then_id.parent == "branch" and then_id.graph == "branch/then_branch"
    assert graph.predecessors("then_id") == ["matmul"]   # an outer-scope tensor
    assert graph.node("branch").attributes["then_branch"] == {"graph": "then_branch"}


def test_unnamed_nodes_and_attribute_values(tmp_path):
    graph = read_graph(hand_built_model(tmp_path))
    assert "s" in graph and graph.node("s").op_type == "ReduceSum"
    assert graph.node("cast").attributes["to"] == 9
    assert graph.node("const").attributes["value"] == [1.0, 1.0, 1.0]
    assert graph.warnings == []


def test_missing_onnx_package_says_how_to_install(tmp_path, monkeypatch):
    path = hand_built_model(tmp_path)
    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    with pytest.raises(InputFormatError, match="pip install onnx"):
        read_graph(path)


def test_binary_junk_is_not_an_onnx_model(tmp_path):
    pytest.importorskip("onnx")
    path = tmp_path / "junk.onnx"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputFormatError, match="junk.onnx"):
        read_graph(path)


def test_truncated_onnx_model(tmp_path):
    data = hand_built_model(tmp_path).read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputFormatError, match="cut.onnx"):
        read_graph(path)


def test_onnx_graph_as_json_from_msit(realdata):
    path = realdata(ONNX_JSON)
    assert detect_format(path) == "onnx-json"
    graph = read_graph(path)
    assert [(n.name, n.op_type) for n in graph] == [("Sub_7", "Sub"), ("Div_9", "Div")]
    assert graph.predecessors("Div_9") == ["Sub_7"]
    assert graph.inputs == ("feats",) and graph.outputs == ("output",)
    assert graph.warnings == []


def test_onnx_json_in_camel_case_with_base64_strings(tmp_path):
    document = {"irVersion": "8", "graph": {"name": "g", "node": [
        {"input": ["a"], "output": ["b"], "name": "n1", "opType": "Cast",
         "attribute": [{"name": "to", "i": "10", "type": "INT"},
                       {"name": "mode", "s": "bGluZWFy", "type": "STRING"}]}],
        "output": [{"name": "b", "type": {"tensorType": {"elemType": 10, "shape": {"dim": [{"dimValue": "2"}]}}}}]}}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    node = read_graph(path).node("n1")
    assert node.attributes == {"to": 10, "mode": "linear"}
    assert node.output_descs[0].dtype == "float16" and node.output_descs[0].shape == (2,)


@pytest.mark.parametrize("camel_case", [True, False])
def test_the_same_model_as_json_reads_as_the_same_graph(tmp_path, camel_case):
    onnx = pytest.importorskip("onnx")
    from google.protobuf import json_format

    path = hand_built_model(tmp_path)
    as_json = tmp_path / "hand.json"
    model = onnx.load(str(path))
    as_json.write_text(json_format.MessageToJson(model, preserving_proto_field_name=not camel_case),
                       encoding="utf-8")
    binary, text = read_graph(path), read_graph(as_json)
    assert text.format == "onnx-json"
    for a, b in zip(text, binary, strict=True):
        assert (a.name, a.op_type, a.inputs, a.outputs, a.graph, a.parent, a.subgraphs) == \
               (b.name, b.op_type, b.inputs, b.outputs, b.graph, b.parent, b.subgraphs)
    assert text.node("cast").attributes == binary.node("cast").attributes
    assert text.subgraphs == binary.subgraphs and text.inputs == binary.inputs
    assert text.initializers["W"].shape == (3, 2)          # JSON: shape and dtype, no statistics
