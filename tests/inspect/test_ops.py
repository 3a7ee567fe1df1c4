from __future__ import annotations

import json

import pytest

from advisor.cli import main
from advisor.cli.ops import ops_text
from advisor.errors import UsageError
from advisor.graph import read_graph
from advisor.ingest import read_comparison
from advisor.inspect.common import metric_name, parse_threshold
from advisor.inspect.ops import list_ops, summarise_ops

from .conftest import PRELU, result_csv, write_comparison


def test_summarise_in_execution_order_with_worst_metrics():
    ops = summarise_ops(read_comparison(result_csv(PRELU)))
    assert [op.index for op in ops] == sorted(op.index for op in ops)
    conv3 = next(op for op in ops if op.name == "Conv_3")
    assert conv3.op_type == "Conv2D"
    assert conv3.fused_from == ["Conv_3", "PRelu_4"]
    assert conv3.inputs["cosine"] == pytest.approx(1.0)
    assert conv3.outputs["cosine"] == pytest.approx(0.777905)


def test_filters_fuzzy_name_type_threshold_and_limit():
    table = read_comparison(result_csv(PRELU))
    below = list_ops(table, below=("cosine", 0.98))
    assert [op.name for op in below] == ["Conv_3", "Conv_5", "Conv_7", "Conv_8", "Softmax_9"]
    assert [op.name for op in list_ops(table, name="conv3")] == ["Conv_3"]         # case and "_" ignored
    assert [op.name for op in list_ops(table, name="PRelu_6")] == ["Conv_5"]       # fused-from matches
    assert {op.op_type for op in list_ops(table, op_type="transdata")} == {"TransData"}
    assert len(list_ops(table, op_type="conv", limit=2)) == 2
    assert [op.name for op in list_ops(table, above=("relative_euclidean_distance", 0.8))] == ["Conv_5", "Conv_7"]


def test_metric_names_and_thresholds():
    assert metric_name("cos") == "cosine"
    assert metric_name("CosineSimilarity") == "cosine"
    assert metric_name("red") == "relative_euclidean_distance"
    assert parse_threshold("cosine=0.98") == ("cosine", 0.98)
    with pytest.raises(UsageError):
        parse_threshold("cosine")
    with pytest.raises(UsageError):
        metric_name("bogus")


def test_cli_text_and_json(capsys):
    assert main(["ops", str(result_csv(PRELU)), "--below", "cosine=0.98", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "Conv_3" in out and "Conv_5" in out and "Conv_7" not in out and "\x1b[" not in out
    assert main(["ops", str(result_csv(PRELU)), "--type", "conv2d", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["count"] == 5
    assert all(op["op_type"] == "Conv2D" for op in data["ops"])
    assert data["ops"][0]["outputs"]["cosine"] == pytest.approx(1.0)


def test_cli_bad_threshold_exits_2(capsys):
    assert main(["ops", str(result_csv(PRELU)), "--below", "nope=1"]) == 2
    assert "unknown metric" in capsys.readouterr().err


def test_text_fits_the_terminal_width(tmp_path):
    long = "a/very/long/scope/" * 10 + "conv"
    table = read_comparison(write_comparison(tmp_path / "result_1.csv",
                                             [("Data", "x", "x", 1.0), ("Conv2D", long, long, 0.5)]))
    text = ops_text(list_ops(table), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" in text


def test_real_graph_adds_fusion_passes(realdata, tmp_path):
    from .conftest import OM_TDNN
    graph = read_graph(realdata(OM_TDNN))
    nodes = [n for n in graph if n.passes][:3] + [n for n in graph if not n.passes][:2]
    csv = write_comparison(tmp_path / "result_2.csv",
                           [(n.op_type, n.name, ",".join(n.fused_from) or n.name, 0.9 if i == 2 else 1.0)
                            for i, n in enumerate(nodes)])
    ops = list_ops(read_comparison(csv), graph, below=("cosine", 0.99))
    assert [op.name for op in ops] == [nodes[2].name]
    assert ops[0].passes == list(nodes[2].passes)
    assert main(["ops", str(csv), "--graph", str(realdata(OM_TDNN)), "--json"]) == 0


def test_colours_only_on_a_tty(monkeypatch):
    import io

    from advisor.inspect.common import use_colour

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(Tty()) and not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Tty())
    ops = list_ops(read_comparison(result_csv(PRELU)), below=("cosine", 0.98))
    assert "\x1b[31m" in ops_text(ops, colour=True) and "\x1b[" not in ops_text(ops, colour=False)
