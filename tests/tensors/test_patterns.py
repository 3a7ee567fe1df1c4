"""Decomposition patterns (knowledge/fusion_patterns.yaml) found in ONNX graphs torch really exports,
and the pairing information a match gives a fused target op."""

from __future__ import annotations

import json
import warnings

import pytest

from advisor.errors import InputFormatError, KnowledgeError
from advisor.graph import read_graph
from advisor.tensors.fusion import TargetOpInfo, build_fusion_map
from advisor.tensors.fusion_sources import read_sources
from advisor.tensors.golden_graph import golden_graph
from advisor.tensors.patterns import find_instances, load_patterns
from tests.conftest import SCENARIO_EXTRAS


@pytest.fixture(scope="module")
def encoder_onnx(tmp_path_factory):
    """A Linear, LayerNorm, GELU, LayerNorm without affine, tanh-GELU and a residual, exported by torch at
    opset 13 (where LayerNorm and GELU are written out as primitive ops)."""
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    pytest.importorskip("onnx", reason=SCENARIO_EXTRAS)

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj, self.norm, self.gelu = torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.GELU()
            self.plain, self.tanh = torch.nn.LayerNorm(8, elementwise_affine=False), torch.nn.GELU(approximate="tanh")

        def forward(self, x):
            h = self.gelu(self.norm(self.proj(x)))
            logits = self.tanh(self.plain(h)) + x
            stable = torch.exp(logits - logits.amax(-1, keepdim=True))
            return stable / stable.sum(-1, keepdim=True)

    path = tmp_path_factory.mktemp("onnx") / "encoder.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Encoder(), torch.randn(1, 4, 8), str(path), opset_version=13, dynamo=False,
                          input_names=["x"])
    return path


@pytest.mark.scenarios
def test_every_written_out_block_of_a_torch_export_is_found_once(encoder_onnx):
    graph = golden_graph(read_graph(encoder_onnx))
    found = find_instances(graph, load_patterns())
    assert [i.pattern.name for i in found] == ["layer_norm", "gelu_erf", "layer_norm_without_affine", "gelu_tanh",
                                               "softmax_stable"]
    norm = found[0]
    assert norm.final_op == "_norm_Add_1" and len(norm.members) == 9
    assert norm.input_refs() == [("_proj_Add", 0), None, None]     # x, then gamma and beta: weights
    assert norm.output_refs() == [("_norm_Add_1", 0), ("_norm_ReduceMean", 0), ("_norm_ReduceMean_1", 0)]
    assert found[1].input_refs() == [("_norm_Add_1", 0)]


def test_a_match_whose_inner_tensor_is_read_outside_is_no_fused_op(tmp_path):
    onnx = pytest.importorskip("onnx", reason=SCENARIO_EXTRAS)
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Exp", ["x"], ["e"], name="Exp_0"),
             helper.make_node("ReduceSum", ["e"], ["s"], name="ReduceSum_1", keepdims=1),
             helper.make_node("Div", ["e", "s"], ["y"], name="Div_2"),
             helper.make_node("Relu", ["e"], ["r"], name="Relu_3")]     # the exponentials are read outside
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "r")])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph).SerializeToString())
    assert onnx is not None
    assert find_instances(golden_graph(read_graph(path)), load_patterns()) == []


@pytest.mark.scenarios
def test_a_fused_op_named_after_the_patterns_output_takes_its_roles(encoder_onnx):
    targets = [TargetOpInfo("x", "Data", (1, 4, 8)), TargetOpInfo("_proj_MatMul", "MatMulV2", (1, 4, 8)),
               TargetOpInfo("_norm_Add_1_LayerNorm", "LayerNorm", (1, 4, 8))]
    fusion = build_fusion_map(read_sources([encoder_onnx]), targets, [])
    op = "_norm_Add_1_LayerNorm"
    assert fusion.how[op] == "pattern" and fusion.groups[op][0] == "_norm_ReduceMean"
    assert fusion.outputs_of[op][1:] == [("_norm_ReduceMean", 0), ("_norm_ReduceMean_1", 0)]
    assert fusion.inputs_of[op] == [("_proj_Add", 0), None, None]
    assert fusion.groups["_proj_MatMul"] == ["_proj_MatMul", "_proj_Add"]        # a bias add folds forward
    # The other blocks have no target op yet: they wait for one their input links them to.
    assert {i.pattern.name for i in fusion.candidates} == {"gelu_erf", "layer_norm_without_affine", "gelu_tanh",
                                                           "softmax_stable"}


@pytest.mark.scenarios
def test_a_fusion_report_without_the_pass_turns_its_patterns_off(encoder_onnx, tmp_path):
    report = tmp_path / "fusion_result.json"
    report.write_text(json.dumps([{"session_and_graph_id": "0_1", "graph_fusion": {
        "GeluFusionPass": {"match_times": "1", "effect_times": "1"}}, "ub_fusion": {}}]))
    targets = [TargetOpInfo("_norm_Add_1_LayerNorm", "LayerNorm", (1, 4, 8))]
    fusion = build_fusion_map(read_sources([encoder_onnx], fusion=report), targets, [])
    assert "_norm_Add_1_LayerNorm" not in fusion.outputs_of            # LayerNorm's passes never took effect
    assert "layer_norm" not in {i.pattern.name for i in fusion.candidates}
    assert "gelu_tanh" in {i.pattern.name for i in fusion.candidates}


def test_a_yaml_map_names_the_golden_tensor_of_each_slot(tmp_path):
    path = tmp_path / "map.yaml"
    path.write_text("ln/LayerNorm:\n  golden: [ReduceMean_2, Sub_3, Add_10]\n"
                    "  outputs: [Add_10, 'ReduceMean_2:0', null]\n  inputs: [Add_1, null, null]\ntrans_Cast_0: '*'\n")
    fusion = build_fusion_map(read_sources([], mapping=path), [TargetOpInfo("ln_LayerNorm", "LayerNorm", (1,))], [])
    assert fusion.groups == {"ln_LayerNorm": ["ReduceMean_2", "Sub_3", "Add_10"], "trans_Cast_0": []}
    assert fusion.outputs_of["ln_LayerNorm"] == [("Add_10", 0), ("ReduceMean_2", 0), None]
    assert fusion.inputs_of["ln_LayerNorm"] == [("Add_1", 0), None, None]
    assert fusion.real_names["ln_LayerNorm"] == "ln/LayerNorm"


def test_a_bad_map_entry_names_the_field(tmp_path):
    path = tmp_path / "map.yaml"
    path.write_text("ln:\n  golden: [A]\n  outputs: ['A:x']\n")
    with pytest.raises(InputFormatError, match="ln.outputs"):
        read_sources([], mapping=path)


def test_a_pattern_that_names_an_unknown_input_is_a_knowledge_error(tmp_path):
    path = tmp_path / "patterns.yaml"
    path.write_text("patterns:\n  - name: broken\n    inputs: [x]\n    outputs: [y]\n"
                    "    nodes:\n      y: {op: Relu, inputs: [z]}\n")
    with pytest.raises(KnowledgeError, match="broken.y.inputs"):
        load_patterns(path)
