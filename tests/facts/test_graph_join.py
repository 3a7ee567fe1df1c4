"""Joining a model graph to the comparison (``advisor run --graph``): inputs from graph
predecessors, graph outputs as the network output, fusion evidence on op facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts.graph_join import graph_side, join_graph
from advisor.graph import Edge, Graph, Node, read_graph
from advisor.pipeline import AnalysisOptions, analyse

from .test_builder import facts_for, op_fact, row

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"


def node(name, op_type, *sources, **kwargs):
    return Node(name, op_type, inputs=tuple(Edge(s, 0, f"{s}:0") for s in sources), **kwargs)


def target_graph(*nodes, outputs=()):
    return Graph(list(nodes), name="net", format="ge-text", outputs=outputs)


# Two branches off the input: the table lists B (deviating) right before C, without input rows.
BRANCHES = [
    row(0, "Data", "input", "output", 1.0),
    row(1, "Conv2D", "B", "output", 0.5, 0.9),
    row(2, "Conv2D", "C", "output", 0.6, 0.9),
    row(3, "Add", "D", "output", 0.5, 0.9),
]
BRANCH_GRAPH = target_graph(node("input", "Data"), node("B", "Conv2D", "input"), node("C", "Conv2D", "input"),
                            node("D", "Add", "B", "C"), outputs=("D:0",))


def test_without_graph_the_op_before_decides_inputs_agree(tmp_path):
    facts = facts_for(tmp_path, BRANCHES)
    assert [f["op"] for f in facts.op_facts if f.get("error_enters")] == ["B"]


def test_graph_predecessors_decide_inputs_agree(tmp_path):
    facts = facts_for(tmp_path, BRANCHES, graph=BRANCH_GRAPH)
    entries = {f["op"]: f for f in facts.op_facts if f.get("error_enters")}
    assert set(entries) == {"B", "C"}   # C is fed by the agreeing input, not by B
    assert entries["C"]["inputs_from"] == "graph" and entries["C"]["inputs_agree"] is True
    assert entries["C"]["local_drop"] == pytest.approx(0.4)
    d = facts.ops.set_index("op").loc["D"]
    assert d["inputs_from"] == "graph" and not d["inputs_agree"]   # its predecessors B and C deviate
    assert facts.network["graph_known"] is True and facts.network["graph_ops_matched"] == 4


def test_graph_walks_through_ops_the_comparison_does_not_cover(tmp_path):
    graph = target_graph(node("input", "Data"), node("Cast_x", "Cast", "input"), node("B", "Conv2D", "Cast_x"),
                         node("C", "Conv2D", "B"), node("D", "Add", "B", "C"))
    rows = [row(0, "Data", "input", "output", 1.0), row(1, "Conv2D", "B", "output", 0.5, 0.9),
            row(2, "Conv2D", "C", "output", 0.4, 0.9)]
    facts = facts_for(tmp_path, rows, graph=graph)
    b = facts.ops.set_index("op").loc["B"]
    assert b["inputs_from"] == "graph" and b["inputs_agree"] and b["error_enters"]


def test_graph_outputs_are_the_network_output_without_node_output(tmp_path):
    rows = [*BRANCHES[:3], row(3, "Add", "D", "output", 0.9999), row(4, "Relu", "tail", "output", 0.2, 0.9)]
    graph = target_graph(*BRANCH_GRAPH.nodes, node("tail", "Relu", "input"), outputs=("D:0",))
    plain = facts_for(tmp_path, rows)
    assert plain.network["output_op"] == "tail" and plain.network["output_deviates"]
    facts = facts_for(tmp_path, rows, graph=graph)
    assert facts.network["output_source"] == "graph_output" and facts.network["output_op"] == "D"
    assert not facts.network["output_deviates"]
    assert op_fact(facts, 3)["is_output"] is True


def test_fusion_evidence_on_op_facts(tmp_path):
    graph = target_graph(node("input", "Data"),
                         node("conv_relu", "Conv2D", "input", fused_from=("conv", "relu"),
                              passes=("ConvReluFusionPass",), attributes={"_datadump_original_op_names": ["conv"]}),
                         node("trans_Cast_1", "Cast", "conv_relu", attributes={"_datadump_original_op_names": []}))
    rows = [row(0, "Data", "input", "output", 1.0),
            row(1, "Conv2D", "conv_relu", "input", 1.0), row(1, "Conv2D", "conv_relu", "output", 0.5, 0.9),
            row(2, "Cast", "trans_Cast_1", "output", 0.5, 0.9),
            row(3, "NaN", "Node_Output", "output", 0.5, 0.9, golden="out.npy")]
    facts = facts_for(tmp_path, rows, graph=graph)
    fact = op_fact(facts, 1)
    assert fact["is_fused"] and fact["fused_from"] == "conv,relu" and fact["fusion_passes"] == "ConvReluFusionPass"
    assert fact["graph_known"] is True
    assert graph_side(graph) == "target"


def test_narrowing_cast_before_the_first_entry(tmp_path):
    rows = [row(0, "Data", "input", "output", 1.0, dtype="DT_FLOAT"),
            row(1, "Cast", "Cast_1", "input", 1.0, dtype="DT_FLOAT"), row(1, "Cast", "Cast_1", "output", 1.0),
            row(2, "Conv2D", "Conv_2", "input", 1.0), row(2, "Conv2D", "Conv_2", "output", 0.5, 0.9),
            row(3, "Cast", "Cast_3", "input", 0.5, 0.9), row(3, "Cast", "Cast_3", "output", 0.5, 0.9, dtype="DT_FLOAT"),
            row(4, "NaN", "Node_Output", "output", 0.5, 0.9, golden="out.npy")]
    graph = target_graph(node("input", "Data"), node("Cast_1", "Cast", "input"), node("Conv_2", "Conv2D", "Cast_1"),
                         node("Cast_3", "Cast", "Conv_2"))
    facts = facts_for(tmp_path, rows, graph=graph)
    cast = op_fact(facts, 1)
    assert cast["narrowing_cast"] and cast["before_first_entry"]
    assert (cast["cast_from"], cast["cast_to"]) == ("float32", "float16")
    assert all(f["op"] != "Cast_3" or not f.get("narrowing_cast") for f in facts.op_facts)
    assert "narrowing_cast" not in op_fact(facts_for(tmp_path, rows), 2)   # graph facts need --graph


def test_a_narrowing_cast_in_a_consistent_network_is_before_nothing(tmp_path):
    """With no op where error enters, no Cast is "before the first entry" (a clean FP16 build casts
    its input too, and nothing is wrong with it)."""
    rows = [row(0, "Data", "input", "output", 1.0, dtype="DT_FLOAT"),
            row(1, "Cast", "Cast_1", "input", 1.0, dtype="DT_FLOAT"), row(1, "Cast", "Cast_1", "output", 1.0),
            row(2, "Conv2D", "Conv_2", "input", 1.0), row(2, "Conv2D", "Conv_2", "output", 1.0),
            row(3, "NaN", "Node_Output", "output", 1.0, golden="out.npy")]
    graph = target_graph(node("input", "Data"), node("Cast_1", "Cast", "input"), node("Conv_2", "Conv2D", "Cast_1"))
    ops = facts_for(tmp_path, rows, graph=graph).ops
    assert bool(ops.loc[1, "narrowing_cast"]) and not ops["before_first_entry"].any()


def test_unmatched_ops_are_counted(tmp_path):
    rows = [row(0, "Data", "input", "output", 1.0),
            '1,Cast,trans_Cast_0,DT_FLOAT16,0x0,*,NaN,trans_Cast_0:output:0,"[1,8]",NO,NaN,NaN,NaN,NaN',
            row(2, "Relu", "Relu_2", "output", 1.0)]
    graph = target_graph(node("input", "Data"), node("trans_Cast_0", "Cast", "input"),
                         node("Relu_2", "Relu", "trans_Cast_0"))
    network = facts_for(tmp_path, rows, graph=graph).network
    assert network["unmatched_ops"] == 1 and network["npu_only_names"] == "trans_Cast_0"
    assert "unmatched_ops" not in facts_for(tmp_path, rows).network   # graph facts need --graph


def test_a_graph_that_shares_no_name_is_ignored_with_a_warning(tmp_path):
    graph = target_graph(node("x", "Data"), node("y", "Relu", "x"))
    facts = facts_for(tmp_path, BRANCHES, graph=graph)
    assert facts.join is None and "graph_known" not in facts.network
    assert any("shares no op name" in w for w in facts.warnings)


SCENARIOS = Path(__file__).resolve().parents[1] / "data" / "scenarios"


def test_join_maps_golden_names_of_an_onnx_graph():
    folder = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"
    graph = read_graph(folder / "model.onnx")
    assert graph_side(graph) == "golden"
    import pandas as pd
    ops = pd.DataFrame({"op": pd.array(["Conv_3", "trans_Cast_0"], dtype="string"),
                        "golden_ops": pd.array(["Conv_3,PRelu_4", None], dtype="string")})
    join = join_graph(ops, graph)
    assert [graph.nodes[i].name for i in join.nodes_of(0)] == ["Conv_3", "PRelu_4"] and join.nodes_of(1) == []


WITH_ONNX = sorted(p.parent.name for p in SCENARIOS.glob("*/model.onnx"))


@pytest.mark.parametrize("name", WITH_ONNX)
def test_scenarios_keep_their_verdict_with_the_graph(name):
    folder = SCENARIOS / name
    csv = next(folder.glob("result_*.csv"))
    plain = analyse(AnalysisOptions(comparison=csv, plugins=False))
    with_graph = analyse(AnalysisOptions(comparison=csv, graph=folder / "model.onnx", plugins=False))
    assert with_graph.inputs["graph"] == str(folder / "model.onnx")
    same_op = (plain.root_cause.index if plain.root_cause else None) == (
        with_graph.root_cause.index if with_graph.root_cause else None)
    assert same_op, (plain.root_cause, with_graph.root_cause)
    if plain.root_cause is None:
        assert with_graph.root_cause is None and with_graph.neighbourhood is None
    elif plain.root_cause.kind == "problem_node" and with_graph.root_cause.kind == "fused_op_problem":
        generic = next(f for f in with_graph.findings if f.kind == "problem_node")
        assert generic.explained_by == with_graph.root_cause.id


def test_fused_problem_node_end_to_end():
    folder = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"
    diagnosis = analyse(AnalysisOptions(comparison=folder / "result_20240506205445.csv",
                                        graph=folder / "model.onnx", plugins=False))
    root = diagnosis.root_cause
    assert root.kind == "fused_op_problem" and root.op == "Conv_3"
    assert root.values["fused_from"] == "Conv_3,PRelu_4"
    kinds = {f.kind: f for f in diagnosis.findings}
    assert kinds["problem_node"].explained_by == root.id
    assert kinds["narrowing_cast"].op == "trans_Cast_0" and kinds["narrowing_cast"].severity == "warning"
    assert kinds["unmatched_ops"].severity == "info" and "trans_Cast_0" in kinds["unmatched_ops"].evidence["en"]
    hood = diagnosis.neighbourhood
    assert hood.focus == "Conv_3"
    roles = {n.name: n.role for n in hood.nodes}
    assert roles == {"MaxPool_2": "input", "Conv_3": "focus", "Conv_5": "output"}
    focus = next(n for n in hood.nodes if n.role == "focus")
    assert focus.fused_from == ["Conv_3", "PRelu_4"] and focus.deviates is True


def _realdata(pattern: str) -> Path:
    found = sorted(REALDATA.glob(pattern))
    assert found, f"no {pattern} under {REALDATA}"
    return found[0]


def test_realdata_ge_build_graph_and_fusion_result_join():
    graph_file = _realdata("*/*ge_proto_00000000_Build.txt")
    fusion_file = _realdata("*/fusion_result.json")
    folder = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"
    diagnosis = analyse(AnalysisOptions(comparison=folder / "result_20240506205445.csv", graph=graph_file,
                                        fusion=fusion_file, plugins=False))
    # Another model's graph: nothing joins, the run says so and keeps the table's diagnosis.
    assert diagnosis.inputs["graph"] == str(graph_file) and diagnosis.inputs["fusion"] == str(fusion_file)
    assert any("shares no op name" in w for w in diagnosis.warnings)
    assert diagnosis.root_cause.kind == "problem_node" and diagnosis.neighbourhood is None


def test_realdata_ge_build_graph_joins_its_own_op_names(tmp_path):
    graph = read_graph(_realdata("*/*ge_proto_00000000_Build.txt"))
    named = graph.nodes[:3]
    if len(named) < 2:
        pytest.skip("the graph has too few connected ops")
    rows = [row(i, n.op_type or "Op", n.name, "output", 1.0 if i == 0 else 0.5, 0.9)
            for i, n in enumerate(named)]
    facts = facts_for(tmp_path, rows, graph=graph)
    assert facts.network["graph_side"] == "target" and facts.network["graph_ops_matched"] == len(named)
