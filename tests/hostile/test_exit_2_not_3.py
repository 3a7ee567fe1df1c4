"""A user's bad file is exit 2 with one line, never exit 3: ONNX external data outside the model's folder,
JSON nested past the bound on every JSON path, subnormal metrics on the plot's axes, templates that only
fail when rendered, and a rule-pack plugin that exits at import."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE

from .conftest import model_with_external_weights

MSPROBE = "Ascend__msprobe/test__msprobe_test__resources__compare_result_20230703104808.csv"


@pytest.mark.parametrize("location", ["/etc/hostname", "../../outside.bin", "link.bin", "sub/../../outside.bin"])
def test_onnx_external_data_outside_the_models_folder_is_refused(advisor, tmp_path, location):
    """onnx refuses these with its own error type, which ended advisor with exit 3."""
    (tmp_path / "outside.bin").write_bytes(bytes(64))
    model = model_with_external_weights(tmp_path / "a" / "b" / "model.onnx", location)
    if location == "link.bin":
        os.symlink(tmp_path / "outside.bin", model.parent / "link.bin")
    line = advisor("run", EXAMPLE, "--graph", model, "-o", tmp_path / "out", "-q").one_line_error(str(model))
    assert "ONNX external data refused" in line and location in line


def test_onnx_external_data_inside_the_folder_is_read(tmp_path):
    from advisor.graph import read_graph

    model = model_with_external_weights(tmp_path / "model.onnx", "weights.bin")
    graph = read_graph(model)
    assert not graph.warnings
    assert graph.initializers["w"].shape == (16,)


def test_onnx_external_data_that_is_missing_is_a_warning(tmp_path, monkeypatch):
    from advisor.graph import read_graph

    model = model_with_external_weights(tmp_path / "model.onnx", "weights.bin")
    (tmp_path / "weights.bin").unlink()
    monkeypatch.chdir(tmp_path)         # onnx's own loader looked here: nothing may be read from the cwd
    graph = read_graph(model)
    assert any("external weight data not loaded" in w for w in graph.warnings)


def deep_json(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_a_dump_json_nested_100k_deep_is_refused(advisor, tmp_path):
    bench, target = tmp_path / "bench" / "dump.json", tmp_path / "target" / "dump.json"
    for path in (bench, target):
        path.parent.mkdir()
        path.write_text('{"task": "statistics", "level": "L1", "data": ' + deep_json(100_000) + "}", encoding="utf-8")
    line = advisor("run", "--bench", bench, "--target", target, "-o", tmp_path / "out", "-q").one_line_error()
    assert "nested more than" in line and "dump.json" in line


def test_a_first_difference_json_nested_deep_is_refused(advisor, tmp_path):
    path = tmp_path / "compare_result_20240101.json"
    path.write_text('{"Functional.conv2d.0.forward": {"is_same": false, "op_items": [{"NPU Name": "x", "Cosine": '
                    + deep_json(100_000) + "}]}}", encoding="utf-8")
    advisor("run", path, "-o", tmp_path / "out", "-q").one_line_error(str(path), "nested more than")


def with_metric(source: Path, out: Path, column: str, values: list[str]) -> Path:
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    index = rows[0].index(column)
    for number, row in enumerate(rows[1:]):
        row[index] = values[number % len(values)]
    with out.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return out


@pytest.mark.parametrize("values", [["5e-324", "0"], ["0", "5e-324", "5e-324"], ["1e-320", "3e-320"],
                                    ["5e-324"], ["2.2e-308", "5e-324", "1"]])
def test_subnormal_metrics_in_an_msprobe_csv_give_a_plot(advisor, realdata, tmp_path, values):
    """MaxAbsErr 5e-324 beside 0 in an msprobe CSV ended in the plot's axis: 'math domain error'."""
    path = with_metric(realdata(MSPROBE), tmp_path / "compare_result.csv", "MaxAbsErr", values)
    result = advisor("run", path, "-o", tmp_path / "out", "--format", "html,json", "-q")
    assert result.code in (0, 1), result.err
    assert "<svg" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("column, values", [("MaxAbsoluteError", ["5e-324", "0"]), ("CosineSimilarity", ["5e-324"]),
                                            ("RelativeEuclideanDistance", ["0", "5e-324"])])
def test_subnormal_metrics_in_an_msaccucmp_csv_give_a_plot(advisor, tmp_path, column, values):
    path = with_metric(EXAMPLE, tmp_path / EXAMPLE.name, column, values)
    result = advisor("run", path, "-o", tmp_path / "out", "--format", "html", "-q")
    assert result.code in (0, 1), result.err


def rule_pack(tmp_path: Path, evidence: str) -> tuple[Path, int]:
    """The scaffolded pack with ``evidence`` as its rule's evidence text; (rule file, line of 'en:')."""
    from advisor.engine.scaffold import scaffold_pack

    pack = scaffold_pack("team", tmp_path)
    (rule,) = [p for p in pack.glob("*.yaml") if p.name != "pack.yaml"]
    lines = rule.read_text(encoding="utf-8").splitlines()
    at = lines.index("  evidence:") + 1
    lines[at:at + 2] = [f"    en: {json.dumps(evidence)}", f"    zh: {json.dumps(evidence)}"]
    rule.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rule, at + 1


@pytest.mark.parametrize("evidence, problem", [
    ("{% include 'x.html' %}", "include"),
    ("{% import 'x.html' as x %}", "import"),
    ("{% extends 'x.html' %}", "extends"),
    ("{% for i in range(10**9) %}{% endfor %}", "OverflowError"),
    ("{{ (range(10**9)) | list | length }}", "OverflowError"),
    ("{{ 1 // (params | length - params | length) }}", "ZeroDivisionError"),
])
def test_rules_validate_renders_each_template_once_and_names_the_line(advisor, tmp_path, evidence, problem):
    """`rules validate` called these valid, and every run then crashed on them (exit 3)."""
    rule, line = rule_pack(tmp_path, evidence)
    result = advisor("rules", "validate", rule.parent)
    assert result.code == 2 and "internal error" not in result.err, result.err
    assert f"{rule}:{line}" in result.err and problem in result.err, result.err


def test_a_plugin_that_exits_at_import_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    """sys.exit(0) in a rule-pack plugin's import made advisor exit 0 with no report and no message."""
    from importlib import metadata

    from advisor.cli import main
    from advisor.engine import loading

    (tmp_path / "exiting_pack.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = metadata.EntryPoint("exiting", "exiting_pack", loading.ENTRY_POINT_GROUP)
    monkeypatch.setattr(loading.metadata, "entry_points", lambda group: [entry] if group == entry.group else [])
    code = main(["run", str(EXAMPLE), "-o", str(tmp_path / "out"), "--format", "json", "-q"])
    assert code in (0, 1)
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert any("exiting" in w and "SystemExit" in w for w in report["warnings"]), report["warnings"]
