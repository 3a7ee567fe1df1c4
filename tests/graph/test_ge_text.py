"""GE graph dumps in protobuf text (ge_proto_*_Build.txt) and GE's ONNX-text dumps (ge_onnx_*.pbtxt)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from advisor.errors import InputFormatError
from advisor.graph import detect_format, read_graph
from tests.graph.conftest import GE_ONNX_1, GE_ONNX_11, GE_PROTO_1, GE_PROTO_11, GE_PROTO_OLD

SUB = "ge_default_20230713074125_sub_"


# --- the real dumps (hicann/oam-tools, an asys collection of a TF training job, 2023-07-13) -------

def test_graph_1_is_the_variable_init_graph_with_control_edges(realdata):
    graph = read_graph(realdata(GE_PROTO_1))
    assert graph.format == "ge-text" and graph.name == "ge_default_20230713074122_1"
    assert len(graph) == 6
    assert Counter(n.op_type for n in graph) == {"Variable": 2, "Constant": 1, "Assign": 1, "NoOp": 1,
                                                 "NetOutput": 1}
    assert graph.node("init").control_inputs == ("Variable/Assign",)
    assert graph.node("Node_Output").control_inputs == ("init", "ge_global_step")
    assert graph.predecessors("Node_Output") == []        # only control edges reach NetOutput
    assert graph.topological_order() == ["Variable/initial_value", "Variable", "Variable/Assign", "init",
                                         "ge_global_step", "Node_Output"]
    assert graph.node("ge_global_step").output_descs[0].dtype == "uint64"
    # the session options are graph attributes (NamedAttrs)
    assert graph.attributes["_session_graph_id"] == "0_1"
    assert graph.attributes["SessionOptions"]["name"] == "SessionOptions"
    assert not any(n.fused_from or n.passes for n in graph)


def test_graph_11_includes_its_partitioned_call_subgraphs(realdata):
    graph = read_graph(realdata(GE_PROTO_11))
    assert len(graph) == 18
    assert Counter(n.op_type for n in graph) == {"NetOutput": 5, "PartitionedCall": 4, "Data": 3, "Constant": 2,
                                                 "Variable": 2, "Unique": 1, "GatherV2": 1}
    caller = f"{SUB}2_unknow_PartitionedCall_2"
    assert graph.subgraphs[f"{SUB}2_unknow"] == caller
    assert graph.node(caller).subgraphs == (f"{SUB}2_unknow",)
    gather = graph.node("GatherV2")
    assert gather.graph == f"{SUB}2_unknow" and gather.parent == caller
    assert [e.source for e in gather.inputs] == ["Unique", f"{SUB}2_unknow_Data_0", f"{SUB}2_unknow_Data_1"]
    assert gather.op_id == 4 and gather.output_descs[0].dtype == "float32"
    # the caller's inputs reach the subgraph's Data ops through _parent_node_index
    assert graph.predecessors(f"{SUB}2_unknow_Data_2") == [f"{SUB}1_unknow_PartitionedCall_1"]
    assert graph.predecessors(caller)[-1] == f"{SUB}2_unknow_Node_Output"
    order = graph.topological_order()
    assert order.index("Variable") < order.index("Unique") < order.index("GatherV2") < order.index(caller)
    assert order[-1] == "Node_Output"
    # ":-1" inputs are control edges
    assert graph.node("Node_Output").control_inputs == (f"{SUB}3_unknow_PartitionedCall_3",)
    assert graph.node(f"{SUB}3_unknow_Node_Output").control_inputs == ("ge_global_step",)
    assert graph.outputs == (f"{SUB}2_unknow_PartitionedCall_2:0",)
    assert graph.warnings == []


def test_neighbourhood_crosses_subgraph_boundaries(realdata):
    graph = read_graph(realdata(GE_PROTO_11))
    around = graph.neighbourhood("Unique", depth=2)
    assert {"Unique", "GatherV2", f"{SUB}2_unknow_Data_2", f"{SUB}1_unknow_PartitionedCall_1"} <= set(around.index)
    assert around.warnings == []            # edges leaving the neighbourhood are not dangling


def test_old_2020_dump_with_data_inputs(realdata):
    graph = read_graph(realdata(GE_PROTO_OLD))
    assert graph.name == "ge_default_20200909152235_1" and len(graph) == 5
    assert Counter(n.op_type for n in graph) == {"Data": 2, "Variable": 1, "GatherV2D": 1, "NetOutput": 1}
    assert graph.inputs == ("_arg_Placeholder_0_0_0_arg:0", "_arg_Placeholder_1_0_1_0_arg:0")
    assert graph.outputs == ("GatherV2:0",)
    gather = graph.node("GatherV2")
    assert gather.op_type == "GatherV2D" and gather.fused_from == ("GatherV2",)
    assert [d.shape for d in gather.input_descs] == [(32, 32), (16,)]
    assert gather.input_descs[0].format == "NHWC" and gather.input_descs[0].origin_dtype == "float32"


@pytest.mark.parametrize(("proto", "onnx_text"), [(GE_PROTO_1, GE_ONNX_1), (GE_PROTO_11, GE_ONNX_11)])
def test_the_onnx_text_dump_of_a_graph_reads_as_the_same_graph(realdata, proto, onnx_text):
    from_proto, from_onnx = read_graph(realdata(proto)), read_graph(realdata(onnx_text))
    assert from_onnx.format == "onnx-text" and from_onnx.name == from_proto.name
    assert [(n.name, n.op_type) for n in from_onnx] == [(n.name, n.op_type) for n in from_proto]
    for a, b in zip(from_onnx, from_proto, strict=True):
        assert a.inputs == b.inputs and a.control_inputs == b.control_inputs, a.name
        assert (a.graph, a.parent, a.subgraphs) == (b.graph, b.parent, b.subgraphs), a.name
        assert [d.dtype for d in a.output_descs] == [d.dtype for d in b.output_descs], a.name
        assert [d.shape for d in a.output_descs] == [d.shape for d in b.output_descs], a.name
    assert from_onnx.topological_order() == from_proto.topological_order()
    assert from_onnx.subgraphs == from_proto.subgraphs


def test_onnx_text_op_types_lose_the_ge_prefix_and_descs_leave_the_attributes(realdata):
    graph = read_graph(realdata(GE_ONNX_11))
    assert detect_format(realdata(GE_ONNX_11)) == "onnx-text"
    unique = graph.node("Unique")
    assert unique.op_type == "Unique" and unique.op_id == 3
    assert not any(k.startswith(("input_desc_", "output_desc_")) for k in unique.attributes)
    assert [d.shape for d in unique.output_descs] == [(-1,), (64,)]


# --- small dumps written here: the edge cases the real ones lack -----------------------------------

FUSED_DUMP = '''graph {
  name: "g"
  op { name: "x" type: "Data" input: "" output_desc { dtype: DT_FLOAT shape { dim: 1 dim: 3 } layout: "NCHW" } }
  op {
    name: "conv_bn"
    type: "Conv2D"
    input: "x:0"
    attr { key: "_datadump_original_op_names" value { list { s: "Conv_1" s: "BN_2" s: "Conv_1" } } }
    attr { key: "pass_name" value { s: "ConvBnFusionPass" } }
    attr { key: "pass_name_ub" value { list { s: "TbeConvBnFusion" s: "ConvBnFusionPass" } } }
    attr { key: "fusion_scope" value { i: -3 } }
    attr { key: "_datadump_origin_name" value { s: "Conv_1" } }
    attr { key: "_datadump_origin_format" value { s: "NCHW" } }
    attr { key: "_datadump_origin_data_type" value { list { s: "DT_FLOAT" } } }
    attr { key: "nums" value { list { i: 1 i: 2 val_type: VT_LIST_INT } } }
    attr { key: "ratio" value { f: 0.5 } }
    attr { key: "empty" value { list { val_type: VT_LIST_STRING } } }
    attr { key: "unset" value { } }
    attr { key: "pads" value { list_list_int { list_list_i { list_i: 1 list_i: 2 } list_list_i { } } } }
    output_desc { dtype: DT_FLOAT16 shape { dim: 1 dim: 1 dim: 3 dim: 16 } layout: "NC1HWC0"
      attr { key: "origin_format" value { s: "NCHW" } }
      attr { key: "origin_data_type" value { s: "DT_FLOAT" } }
      attr { key: "origin_shape" value { list { i: 1 i: 3 } } } }
  }
  op { name: "relu" type: "Relu" input: "conv_bn:0" input: "x:-1"
    attr { key: "_datadump_original_op_names" value { list { s: "Relu_3" } } }
    attr { key: "pass_name" value { list { s: "ConvBnFusionPass" } } } }
  op { name: "trans" type: "TransData" input: "relu:0"
    attr { key: "_datadump_original_op_names" value { list { val_type: VT_LIST_STRING } } } }
}
'''


def write(tmp_path: Path, text: str, name: str = "ge_proto_00001_Build.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_fusion_evidence_is_normalised(tmp_path):
    graph = read_graph(write(tmp_path, FUSED_DUMP))
    conv = graph.node("conv_bn")
    assert conv.fused_from == ("Conv_1", "BN_2")                       # repeats dropped, order kept
    assert conv.passes == ("ConvBnFusionPass", "TbeConvBnFusion")      # scalar and list, deduplicated
    assert conv.fusion_scope == -3 and conv.origin_name == "Conv_1"
    assert conv.origin_formats == ("NCHW",) and conv.origin_dtypes == ("float32",)
    assert conv.attributes["nums"] == [1, 2] and conv.attributes["ratio"] == 0.5
    assert conv.attributes["empty"] == [] and conv.attributes["unset"] is None
    assert conv.attributes["pads"] == [[1, 2], []]
    desc = conv.output_descs[0]
    assert (desc.dtype, desc.shape, desc.format) == ("float16", (1, 1, 3, 16), "NC1HWC0")
    assert (desc.origin_dtype, desc.origin_format, desc.origin_shape) == ("float32", "NCHW", (1, 3))
    assert conv.is_fused and not graph.node("relu").is_fused
    assert graph.node("relu").passes == ("ConvBnFusionPass",)
    assert graph.node("relu").control_inputs == ("x",)
    assert graph.node("trans").is_inserted and graph.node("trans").fused_from == ()
    assert graph.golden_to_target == {"Conv_1": ("conv_bn",), "BN_2": ("conv_bn",), "Relu_3": ("relu",)}
    assert graph.pass_counts() == {"ConvBnFusionPass": 2, "TbeConvBnFusion": 1}
    assert graph.inputs == ("x:0",)


def test_a_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, FUSED_DUMP.replace('input: "conv_bn:0"', 'input "conv_bn:0"'))
    with pytest.raises(InputFormatError) as caught:
        read_graph(path)
    assert caught.value.path == str(path)
    assert caught.value.line == FUSED_DUMP.splitlines().index(
        '  op { name: "relu" type: "Relu" input: "conv_bn:0" input: "x:-1"') + 1
    assert "\n" not in str(caught.value) and "expected ':'" in str(caught.value)


def test_a_malformed_op_names_the_op_and_its_line(tmp_path):
    path = write(tmp_path, FUSED_DUMP.replace("attr { key: \"fusion_scope\" value { i: -3 } }",
                                              "attr { key: \"fusion_scope\" value { i: -3 } }\n    id: \"seven\""))
    with pytest.raises(InputFormatError) as caught:
        read_graph(path)
    assert "conv_bn" in str(caught.value)
    assert caught.value.line == 5   # the op's name line


def test_truncated_dump(tmp_path):
    path = write(tmp_path, FUSED_DUMP[: FUSED_DUMP.index('op { name: "trans"')])
    with pytest.raises(InputFormatError, match="unexpected end of file"):
        read_graph(path)


def test_protobuf_text_that_is_not_a_graph(tmp_path):
    with pytest.raises(InputFormatError, match="neither a GE graph dump"):
        read_graph(write(tmp_path, 'name: "x"\nfoo { bar: 1 }\n', "other.txt"))
