from __future__ import annotations

import json

import pytest

from advisor.cli import main
from advisor.cli.node import node_text
from advisor.diagnosis import Finding
from advisor.errors import UsageError
from advisor.graph import read_graph
from advisor.ingest import read_comparison
from advisor.inspect.node import inspect_node

from .conftest import GE_PROTO_11, OM_TDNN, PRELU, result_csv, write_comparison


class _Diagnosis:
    def __init__(self, findings):
        self.findings = findings


def _finding(op, index, evidence=""):
    return Finding(id=f"x@{index}", rule="problem-node", pack="core", kind="problem_node", severity="error",
                   title={"en": "Problem node"}, root_cause=True, op=op, index=index, evidence={"en": evidence})


def test_node_on_scenario_with_onnx_graph_and_findings():
    csv = result_csv(PRELU)
    diagnosis = _Diagnosis([_finding("Conv_3", 5, "error enters at Conv_3"), _finding("Conv_8", 8),
                            _finding(None, None, "after PRelu_4 everything deviates")])
    report = inspect_node("conv_3", read_comparison(csv), read_graph(PRELU / "model.onnx"), depth=2,
                          diagnosis=diagnosis)
    assert report.name == "Conv_3" and report.index == 5 and report.op_type == "Conv2D"
    assert report.fused_from == ["Conv_3", "PRelu_4"]
    assert report.attributes["kernel_shape"] == [3, 3]
    assert [t.tensor for t in report.tensors] == ["Conv_3:input:0", "Conv_3:output:0"]
    assert report.tensors[1].metrics["cosine"] == pytest.approx(0.777905)
    assert [(n.name, n.distance) for n in report.predecessors] == [("MaxPool_2", 1), ("PRelu_1", 2)]
    assert [(n.name, n.distance) for n in report.successors] == [("PRelu_4", 1), ("Conv_5", 2)]
    assert report.successors[1].index == 6                       # joined back to the comparison
    assert [f["id"] for f in report.findings] == ["x@5", "x@None"]   # its own, and one naming a fused op
    assert report.findings[0]["root_cause"]
    text = node_text(report)
    assert "predecessors" in text and "problem_node" in text


def test_node_by_index_and_without_graph():
    table = read_comparison(result_csv(PRELU))
    report = inspect_node("6", table)
    assert report.name == "Conv_5" and report.in_graph is None and report.predecessors == []
    assert "give --graph" in node_text(report)


def test_ambiguous_and_unknown_names_are_usage_errors():
    table = read_comparison(result_csv(PRELU))
    with pytest.raises(UsageError, match="matches"):
        inspect_node("conv", table)
    with pytest.raises(UsageError, match="no op matches"):
        inspect_node("nothing_like_it", table)


def test_cli_json_and_exit_codes(capsys):
    csv = str(result_csv(PRELU))
    assert main(["node", "Conv_3", csv, "--graph", str(PRELU / "model.onnx"), "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["index"] == 5 and data["successors"][0]["name"] == "PRelu_4"
    if "warning: no findings" not in captured.err:  # the built-in rules loaded: the analysis names it
        assert data["findings"][0]["rule"] == "problem-node"
    # msaccucmp 26 floors both distributions at the float32 epsilon: finite (it prints 0.005529 too)
    assert data["tensors"][1]["metrics"]["kl_divergence"] == pytest.approx(0.005529)
    assert main(["node", "conv", csv, "--no-findings"]) == 2
    assert "matches" in capsys.readouterr().err


@pytest.mark.parametrize("name", [OM_TDNN, GE_PROTO_11])
def test_node_on_real_graphs(realdata, tmp_path, name):
    graph = read_graph(realdata(name))
    order = graph.topological_order()
    middle = next(n for n in order if graph.predecessors(n) and graph.successors(n))
    chosen = [graph.node(n) for n in order]
    csv = write_comparison(tmp_path / "result_1.csv",
                           [(n.op_type, n.name, ",".join(n.fused_from) or n.name, 1.0) for n in chosen])
    report = inspect_node(middle, read_comparison(csv), graph, depth=2)
    node = graph.node(middle)
    assert report.in_graph and report.op_type == node.op_type
    assert report.passes == list(node.passes)
    assert {n.name for n in report.predecessors if n.distance == 1} == set(graph.predecessors(middle))
    assert {n.name for n in report.successors if n.distance == 1} == set(graph.successors(middle))
    assert all(n.index is not None for n in report.predecessors + report.successors)
    assert main(["node", middle, str(csv), "--graph", str(realdata(name)), "--depth", "2", "--no-findings"]) == 0
