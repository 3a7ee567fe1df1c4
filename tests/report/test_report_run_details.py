"""The lower half of the report: human labels for every field, settings without empty values, the
table of the ops that matter, and no raw field names or empty code in any format."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from advisor.diagnosis import Diagnosis, KeyOp, SourceRows
from advisor.facts.schema import FACT_FIELDS
from advisor.report import build_view, render
from advisor.report.labels import labels_for
from advisor.report.run_details import HIDDEN_NETWORK, network_rows

SCRIPT = "<script>alert(1)</script>"


def key_op(index: int, op: str, roles: list[str], cosine: float | None = 0.5, **kwargs) -> KeyOp:
    fields = {"op_type": "Pow", "dtype": "float16", "in_cosine": 1.0, "out_cosine": cosine, "out_red": 0.3,
              "out_max_abs_error": 2.0, "deviates": True, "overflow": False, "source_line": 2 * index + 3}
    return KeyOp(index=index, op=op, roles=roles, **{**fields, **kwargs})


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_network_field_has_a_human_label_or_stays_in_report_json(lang: str) -> None:
    labels = labels_for(lang)
    unlabelled = [key for key in FACT_FIELDS["network"] if key not in HIDDEN_NETWORK
                  and f"network.{key}" not in labels]
    assert unlabelled == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_run_details_read_as_words_not_field_names(root_cause: Diagnosis, lang: str) -> None:
    root_cause.network.update({"compute_dtype": "float16", "has_fp16": True, "output_known": True,
                               "output_source": "Node_Output", "output_op": "Softmax_111", "output_line": 223,
                               "keep_fp32_all": "Pow_4,ReduceMean_5"})
    root_cause.inputs.update({"golden_dumps": "dumps/golden", "target_dumps": "dumps/npu"})
    view = build_view(root_cause, lang)
    labels = labels_for(lang)
    shown = {row.key: row for row in view.network_summary}
    assert {"output_known", "output_line", "keep_fp32_all", "id", "fact"}.isdisjoint(shown)
    assert shown["has_fp16"].text == labels["yes"] and shown["output_deviates"].text == labels["yes"]
    assert shown["output_source"].text == labels["output_source.Node_Output"]
    assert shown["compute_dtype"].label == labels["network.compute_dtype"] != "compute_dtype"
    assert [row.label for row in view.inputs if row.key == "golden_dumps"] == [labels["input.golden_dumps"]]
    html = render(root_cause, "html", lang)
    for raw in ("compute_dtype", "has_fp16", "output_known", "keep_fp32_all", "golden_dumps", ">fp16_overflow<"):
        assert raw not in html
    assert report_json_keeps(root_cause, lang, "keep_fp32_all")


def report_json_keeps(diagnosis: Diagnosis, lang: str, key: str) -> bool:
    import json
    return key in json.loads(render(diagnosis, "json", lang))["network"]


def test_settings_show_what_the_user_changed_and_nothing_empty(root_cause: Diagnosis) -> None:
    root_cause.overrides = {"thresholds": [], "params": {"problem-node": {"min_confidence": 0.99}, "other": {}},
                            "input_nodes": [], "disabled": ["network-consistent"], "severity": {}, "settings": None}
    view = build_view(root_cause, "en")
    assert [(row.label, row.text) for row in view.settings] == [
        ("Rule parameters: problem-node", "min_confidence = 0.99"), ("Disabled rules", "network-consistent")]
    html = render(root_cause, "html", "en")
    run = html[html.index('<section class="run">'):]
    assert "{}" not in run and "[]" not in run and "<td></td>" not in run
    markdown = render(root_cause, "md", "en")
    assert "- Rule parameters: problem-node: `min_confidence = 0.99`" in markdown
    assert "{}" not in markdown[markdown.index("## Run details"):]
    assert not re.search(r"(?<!`)``(?!`)", markdown)                          # no empty code spans
    assert {row.key: row.value for row in view.overrides}["thresholds"] == []  # report.json keeps them all


def test_the_ops_table_links_each_op_to_its_finding_and_its_embedded_rows(root_cause: Diagnosis) -> None:
    root_cause.key_ops = [key_op(11, "LayerNorm_3/Mean", ["neighbour"], 1.0, deviates=False),
                          key_op(12, "LayerNorm_3/Pow", ["entry", "root"], None, overflow=True),
                          key_op(57, "Conv_57", ["worst"], 0.962)]
    root_cause.source_rows = SourceRows("/home/someone/runs/result_20240101120000.csv", "Index,OpType",
                                        {12: [(27, "12,Pow"), (28, "12,Pow")]})
    view = build_view(root_cause, "zh")
    rows = {op.index: op for op in view.key_ops}
    assert rows[12].roles == ("root", "entry") and rows[12].role_labels == ("根因", "误差引入")
    assert rows[12].status == "overflow" and rows[11].status == "agrees"
    assert rows[12].finding == "fp16-overflow@12" and rows[57].finding == "problem-node@57"
    assert rows[11].finding is None
    # The line links to the op's rows, embedded in the page; an op whose rows are not embedded shows its number.
    assert rows[12].source_href == "#src-L27" and rows[12].source_title.startswith("第 27 行")
    assert rows[11].source_href is None and rows[11].source_line is not None
    assert [op.anchor for op in view.source.ops] == ["src-op-12"] and view.source.ops[0].rows[0] == (27, "12,Pow")
    assert rows[12].metrics[1] == (None, "—") and rows[57].metrics[1] == (0.962, "0.962")
    root_cause.source_rows = None
    assert all(op.source_href is None for op in build_view(root_cause, "en").key_ops)


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False


def test_hostile_op_names_in_the_ops_table_stay_text(root_cause: Diagnosis) -> None:
    root_cause.key_ops = [key_op(12, SCRIPT, ["root"]), key_op(13, '"><img src=x onerror=alert(2)>', ["worst"],
                                                                 op_type="</td><b>x")]
    html = render(root_cause, "html", "en")
    parser = _Scripts()
    parser.feed(html)
    sort_js = (Path(__file__).parents[2] / "reports" / "static" / "sort.js").read_text(encoding="utf-8")
    assert parser.scripts == [sort_js]                  # one script: the table sorter, nothing from the data
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<img" not in html and "<b>x" not in html
    assert "fetch(" not in sort_js and "XMLHttpRequest" not in sort_js and "http" not in sort_js


def test_without_ops_to_show_the_page_has_no_script(consistent: Diagnosis) -> None:
    assert "<script" not in render(consistent, "html", "en")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_has_no_empty_code_spans_or_html_code(root_cause: Diagnosis, lang: str) -> None:
    root_cause.findings[1].op_type = ""
    root_cause.key_ops = [key_op(12, "LayerNorm_3/Pow", ["root"], op_type=None)]
    markdown = render(root_cause, "md", lang)
    assert not re.search(r"(?<!`)``(?!`)", markdown) and "<code>" not in markdown


def test_training_counts_show_only_where_they_mean_something() -> None:
    labels = labels_for("en")
    inference = {"ops": 3, "training": False, "argument_rows": 0, "checksums_compared": 0, "judged_tensors": 5}
    shown = [row.key for row in network_rows(inference, labels)]
    assert "argument_rows" not in shown and "checksums_compared" not in shown and "judged_tensors" in shown
    training = {**inference, "training": True}
    assert "argument_rows" in [row.key for row in network_rows(training, labels)]
    differing = {**inference, "checksums_compared": 54}
    assert "checksums_compared" in [row.key for row in network_rows(differing, labels)]
