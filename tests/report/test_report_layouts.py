"""The page and the terminal show the metrics each comparison layout has: msprobe's statistics (its
default summary mode) and MD5 mode hold no cosine, and used to give an empty "no values" plot and a
table of "—" cells. Real msprobe files (tests/data/realtool, tests/data/training, tests/data/msprobe_faults)."""

from __future__ import annotations

import html as markup
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from advisor.cli.node import node_text
from advisor.cli.ops import ops_text
from advisor.diagnosis.layout import STATISTICS, layout_of
from advisor.ingest import read_comparison, read_dump_pair
from advisor.inspect.node import inspect_node
from advisor.inspect.ops import list_ops
from advisor.pipeline import AnalysisOptions, analyse
from advisor.report import render, write_reports
from advisor.report.labels import labels_for
from advisor.report.plot import GEOMETRIES, WIDE
from advisor.report.plot_layouts import render_plot
from advisor.report.view import build_view

DATA = Path(__file__).resolve().parent.parent / "data"
EPS = next((DATA / "realtool" / "msprobe_argument_mismatch__small_convnet__layer_norm_eps__L1_statistics")
           .glob("compare_result_*.csv"))
FAULTS = DATA / "msprobe_faults"
SVG = "{http://www.w3.org/2000/svg}"
STATISTICS_FILES = sorted((DATA / "realtool").glob("*_statistics/compare_result_*.csv"))[:6] + \
    [DATA / "training" / "eps.csv", FAULTS / "fp16_overflow_statistics.csv"]


@pytest.fixture(autouse=True)
def advice_pages() -> None:
    """These tests analyse real files with the built-in packs: the shipped advice pages, not conftest's."""


@pytest.fixture(scope="module")
def eps():
    return analyse(AnalysisOptions(comparison=EPS))


def _numbers(cells: list[str]) -> list[str]:
    return [c for c in cells if c not in ("—", "")]


@pytest.mark.parametrize("path", STATISTICS_FILES, ids=lambda p: p.parent.name[:50] + "/" + p.name)
def test_a_statistics_comparison_plots_the_relative_error_of_each_statistic(path: Path) -> None:
    diagnosis = analyse(AnalysisOptions(comparison=path))
    series = diagnosis.series
    assert series is not None and series.layout == STATISTICS
    assert set(series.metrics) == {"max_rel_diff", "min_rel_diff", "mean_rel_diff", "norm_rel_diff"}
    drawn = [v for p in series.points for v in p.values.values() if v is not None]
    assert drawn, "no relative error to draw"
    labels = labels_for("en")
    view = build_view(diagnosis, "en")
    for geometry in GEOMETRIES:
        svg = render_plot(view.series, view.markers, labels, geometry)
        assert svg is not None and "no values" not in svg
        root = ET.fromstring(svg)
        texts = [t.text for t in root.iter(f"{SVG}text")]
        # Every plot names its metric: the legend lists the four statistics, each panel its calls.
        assert {"relative error of:", "max", "min", "mean", "norm"} <= set(texts)
        assert any(t.startswith("Forward calls") for t in texts)
        if any(p.direction == "backward" for p in series.points):
            assert any(t.startswith("Backward calls") for t in texts)
        assert len(list(root.iter(f"{SVG}polyline"))) + len(list(root.iter(f"{SVG}circle"))) >= 4


def test_the_ops_table_of_a_statistics_comparison_shows_its_numbers(eps) -> None:
    view = build_view(eps, "en")
    assert [label for _, label in view.key_op_columns] == ["Max rel. error", "Min rel. error", "Mean rel. error",
                                                           "Norm rel. error"]
    root = next(op for op in view.key_ops if "root" in op.roles)
    assert _numbers([text for _, text in root.metrics]) == [text for _, text in root.metrics]
    assert all(op.status != "unknown" for op in view.key_ops)
    html = render(eps, "html", "en")
    start = html.index('<section class="key-ops"')
    table = html[start:html.index("</section>", start)]
    cells = re.findall(r'<td class="num" data-label="(?:Max|Min|Mean|Norm) rel\. error"[^>]*>([^<]*)</td>', table)
    assert len(cells) == 4 * len(view.key_ops) and len(_numbers(cells)) >= len(cells) // 2


def test_a_dump_json_pair_is_plotted_by_its_statistics_too() -> None:
    table = read_dump_pair(FAULTS / "fp16_overflow_bench_dump.json", FAULTS / "fp16_overflow_target_dump.json")
    assert layout_of(table) == STATISTICS
    diagnosis = analyse(AnalysisOptions(comparison=None, bench=FAULTS / "fp16_overflow_bench_dump.json",
                                        target=FAULTS / "fp16_overflow_target_dump.json"))
    svg = render_plot(diagnosis.series, (), labels_for("en"), WIDE)
    assert svg is not None and "no values" not in svg
    # The overflowing call's infinite relative error is drawn (a mark at the panel's top), not left out.
    assert "<path" in svg


@pytest.mark.parametrize("name", ["batchmd5.csv", "weightmd5.csv", "bf16md5.csv"])
def test_an_md5_comparison_names_the_first_differing_call_and_the_count(name: str) -> None:
    diagnosis = analyse(AnalysisOptions(comparison=DATA / "training" / name))
    network = diagnosis.network
    series = diagnosis.series
    assert series is not None and series.layout == "checksum"
    assert series.checksums == (network["checksums_compared"], network["checksums_differ"])
    view = build_view(diagnosis, "en")
    table = read_comparison(DATA / "training" / name).frame
    differing = table[table["md5_match"].eq(False).fillna(False)]
    first = differing.sort_values("op_index").iloc[0]
    assert view.plot_caption == (f"{network['checksums_differ']} of {network['checksums_compared']} checksums differ; "
                                 f"the first differing call is {first['op_name']} (op {first['op_index']}).")
    html = render(diagnosis, "html", "zh")
    assert "第一个不同的调用是" in html and "no values" not in html and "无数据" not in html
    assert [label for _, label in view.key_op_columns] == ["Differing checksums", "Checksums compared"]


def test_the_terminal_lists_the_statistics_of_each_op() -> None:
    table = read_comparison(EPS)
    text = ops_text(list_ops(table, limit=14), width=200)
    header = text.splitlines()[0]
    assert "out norm rel" in header and "out cos" not in header
    root = next(line for line in text.splitlines() if "Functional.layer_norm.0.forward" in line)
    assert "1.25" in root                                  # the mean's relative error of the eps call
    node = node_text(inspect_node("Functional.layer_norm.0.forward", table), width=200)
    output = next(line for line in node.splitlines() if line.startswith("Functional.layer_norm.0.forward.output.0"))
    assert "0.00638077" in output and " - " not in output


def test_the_terminal_lists_the_differing_checksums_of_each_op() -> None:
    table = read_comparison(DATA / "training" / "batchmd5.csv")
    text = ops_text(list_ops(table, limit=3), width=200)
    assert "md5 differs" in text.splitlines()[0]
    assert text.splitlines()[2].split()[-1] == "1"         # the first call's input batch differs


def test_a_shared_report_embeds_its_rows_and_names_no_absolute_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    diagnosis = analyse(AnalysisOptions(comparison=EPS.resolve()))
    out = tmp_path / "shared" / "report"
    write_reports(diagnosis, out, ["html", "json", "md"], "en")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "file:" not in html and str(DATA) not in html and str(EPS.parent) not in html
    payload = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert payload["inputs"]["comparison"] == EPS.name          # far from the report: named by its file name
    assert all(not pack["source"].startswith("/") for pack in payload["packs"])
    # The root cause's rows are in the page, as the file holds them (a long row cut with "…").
    lines = EPS.read_text(encoding="utf-8").splitlines()
    root = payload["root_cause"]["index"]
    block = html[html.index(f'id="src-op-{root}"'):]
    block = block[:block.index("</details>")]
    for number in next(f for f in payload["findings"] if f["index"] == root)["source_lines"]:
        shown = markup.unescape(re.search(rf'id="src-L{number}">{number}</span>([^\n]*)', block).group(1))
        assert lines[number - 1].startswith(shown.rstrip("…")) and len(shown) > 40
    # Near the report, a path is relative to its folder.
    near = tmp_path / "shared" / "result.csv"
    near.write_bytes(EPS.read_bytes())
    write_reports(analyse(AnalysisOptions(comparison=near)), out, ["json"], "en")
    assert json.loads((out / "report.json").read_text())["inputs"]["comparison"] == "../result.csv"
