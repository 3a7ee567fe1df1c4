"""`advisor run --graph/--fusion`: the graph joins the comparison end to end, the inputs are
recorded and the HTML report draws the root cause's graph neighbourhood."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.cli import main

SCENARIO = Path(__file__).resolve().parents[1] / "data" / "scenarios" / "problem_node__mtcnn_pnet__prelu_layout__s0"
CSV = SCENARIO / "result_20240506205445.csv"
REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"


def test_run_with_an_onnx_graph(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["run", str(CSV), "--graph", str(SCENARIO / "model.onnx"), "-o", str(out), "-q"]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["root_cause"]["kind"] == "fused_op_problem" and report["root_cause"]["op"] == "Conv_3"
    assert report["inputs"]["graph"] == str(SCENARIO / "model.onnx")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'class="graph-neighbourhood"' in html and "Graph neighbourhood of Conv_3" in html
    assert "PRelu_4" in html and "fusion_switch_file" in html
    assert html.count("<script") == 1 and "<script>/* advisor HTML report: sort a table" in html   # the sorter only


def test_run_without_a_graph_draws_no_neighbourhood(tmp_path):
    out = tmp_path / "report"
    assert main(["run", str(CSV), "-o", str(out), "-q", "--format", "html,json"]) == 0
    assert "graph-neighbourhood" not in (out / "report.html").read_text(encoding="utf-8")
    assert "graph" not in json.loads((out / "report.json").read_text(encoding="utf-8"))["inputs"]


def test_run_with_a_fusion_result(tmp_path):
    fusion = sorted(REALDATA.glob("*/fusion_result.json"))
    out = tmp_path / "report"
    assert main(["run", str(CSV), "--graph", str(SCENARIO / "model.onnx"), "--fusion", str(fusion[0]),
                 "-o", str(out), "-q", "--format", "json"]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["inputs"]["fusion"] == str(fusion[0])
    assert report["root_cause"]["kind"] == "fused_op_problem"


def test_a_fusion_result_given_as_graph_is_an_input_error(tmp_path, capsys):
    fusion = tmp_path / "fusion_result.json"
    fusion.write_text('{"graph_fusion": {"A": {"match_times": "1", "effect_times": "1"}}}', encoding="utf-8")
    assert main(["run", str(CSV), "--graph", str(fusion), "-o", str(tmp_path / "r"), "-q"]) != 0
    assert "fusion" in capsys.readouterr().err
