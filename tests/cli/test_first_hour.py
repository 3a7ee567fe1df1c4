"""What a newcomer reads in the first hour (issue: the terminal and the reports on real files): hints
about the inputs that would sharpen a diagnosis, counts that add up, warnings on stderr, errors that
say what a wrong file looks like and never name an internal function, arguments by their names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from advisor.engine.packs import load_pack
from advisor.engine.runner import run_rules
from advisor.pipeline import AnalysisOptions, analyse
from advisor.report import render
from advisor.report.labels import labels_for
from advisor.resources import data_dir

from ..conftest import REPO, SCENARIOS, scenario_csv

DATA = REPO / "tests" / "data"
# The committed preprocessing scenarios: only the input dumps tell these faults apart.
PREPROCESSING = ("rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0", "duplicate_normalization__crepe_tiny__cmvn_twice__s0",
                 "duplicate_normalization__mtcnn_rnet__bn_inserted__s0",
                 "layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0", "input_mismatch__mtcnn_rnet__shifted_crop__s1")
CORPORA = sorted([*DATA.glob("realtool/*/compare_result_*.csv"), *DATA.glob("training/*.csv"),
                  *DATA.glob("msprobe_faults/*.csv"), *DATA.glob("scenarios/*/result_*.csv"),
                  *(REPO / "examples").glob("*/result_*.csv")])


@pytest.mark.parametrize("name", PREPROCESSING)
def test_a_preprocessing_fault_without_dumps_says_the_dumps_would_tell(run_cli, name: str) -> None:
    folder = SCENARIOS / name
    run = run_cli(scenario_csv(folder), "--format", "json,md")
    assert run.code == 0, run.err
    assert "What would sharpen this:" in run.out and "--dumps GOLDEN_DIR:TARGET_DIR" in run.out
    report = run.report()
    assert [hint["option"] for hint in report["sharpen"]][0] == "--dumps GOLDEN_DIR:TARGET_DIR"
    assert "--dumps GOLDEN_DIR:TARGET_DIR" in (run.outdir / "report.md").read_text(encoding="utf-8")
    # With the dumps (and the build config beside them) the hints about them are gone.
    given = run_cli(scenario_csv(folder), "--dumps", f"{folder / 'golden'}:{folder / 'target'}",
                    "--config", folder / "build.json", "--format", "json")
    assert "--dumps GOLDEN_DIR:TARGET_DIR" not in given.out
    assert all("--dumps" not in hint["option"] and "--config" not in hint["option"]
               for hint in given.report()["sharpen"])


def test_statistics_and_checksums_point_to_the_dump_that_measures_more(run_cli) -> None:
    statistics = run_cli(DATA / "training" / "eps.csv", "--format", "json").report()
    assert [h["id"] for h in statistics["sharpen"]] == ["tensor-mode"]
    assert '"task": "tensor"' in statistics["sharpen"][0]["option"]
    checksums = run_cli(DATA / "training" / "batchmd5.csv", "--format", "json").report()
    assert "--bench BENCH/dump.json --target TARGET/dump.json" in checksums["sharpen"][0]["option"]
    clean = run_cli(DATA / "training" / "bf16.csv", "--format", "json")
    assert clean.report()["sharpen"] == [] and "sharpen" not in clean.out


def _judged_parts(text: str) -> tuple[int, list[int]]:
    """The compared rows and the parts the terminal splits them into (advisor/cli/run.py: _judged)."""
    compared = int(re.search(r"(\d+) compared:", text).group(1))
    parts = [int(n) for n in re.findall(r"(\d+) (?:tensors judged|arguments and in-place updates|could not be "
                                        r"judged)", text)]
    return compared, parts


@pytest.mark.parametrize("path", CORPORA, ids=lambda p: f"{p.parent.name[:40]}/{p.name}")
def test_counts_in_the_summary_add_up(path: Path) -> None:
    from advisor.cli.run import _judged
    from advisor.diagnosis import CONSISTENT

    diagnosis = analyse(AnalysisOptions(comparison=path))
    network = diagnosis.network
    text = _judged(network, labels_for("en"), diagnosis.verdict == CONSISTENT)
    compared, parts = _judged_parts(text)
    assert compared == network["compared_tensors"]
    assert sum(parts) == compared, text
    assert network["judged_tensors"] + network.get("unjudged_tensors", 0) <= compared, "the parts overlap"
    if not network.get("training"):       # an inference comparison: every compared tensor is judged or listed
        assert len(parts) <= 2


def test_warnings_go_to_stderr_and_the_summary_to_stdout(run_cli) -> None:
    run = run_cli(DATA / "training" / "eps.csv", "--input-nodes", "no_such_op", "--format", "json")
    assert run.code == 0
    assert "Warning:" not in run.out
    assert "advisor: Warning:" in run.err and "no_such_op" in run.err
    assert run.out.startswith("advisor ") and "Verdict:" in run.out


def _advisor_function_names() -> set[str]:
    names = set()
    for source in (REPO / "advisor").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "_" in node.name.strip("_"):
                names.add(node.name)
    return names


def test_the_unknown_header_error_names_no_internal_function(run_cli, tmp_path: Path) -> None:
    table = tmp_path / "result.csv"
    table.write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    run = run_cli(table)
    assert run.code == 2 and "unknown header" in run.err
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", run.err))
    assert not words & _advisor_function_names(), words & _advisor_function_names()
    assert "--bench BENCH/dump.json --target TARGET/dump.json" in run.err


def test_a_wrong_kind_of_file_says_what_it_looks_like(run_cli) -> None:
    folder = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"
    result = scenario_csv(folder)
    graph = run_cli(result, "--graph", result)
    assert graph.code == 2
    assert "is a comparison CSV (msaccucmp), not a model graph" in graph.err and "protobuf" not in graph.err
    config = run_cli(result, "--config", folder / "model.onnx")
    assert config.code == 2 and "is an ONNX model, not a build config" in config.err and "--graph" in config.err
    table = run_cli(result, "--config", result)
    assert table.code == 2 and "is a comparison CSV (msaccucmp), not a build config" in table.err


def test_an_argument_passed_by_keyword_is_named(run_cli) -> None:
    run = run_cli(DATA / "msprobe_faults" / "interpolate_mode_statistics.csv", "--format", "json")
    assert "called with mode = nearest on the target and bilinear on the reference" in run.out
    assert "Set mode to the same value" in run.out
    assert "value =" not in run.out and "Set value" not in run.out


def test_the_output_source_is_said_in_words() -> None:
    pack = load_pack(data_dir("rules") / "core")
    rule = next(r for r in pack.rules if r.id == "output-deviates-without-entry")
    facts = [{"fact": "network", "id": "network", "output_deviates": True, "entry_points": 0, "input_deviates": False,
              "overflow_ops": 0, "differing_arguments": 0, "differing_parameters": 0, "output_cosine": 0.5,
              "output_red": 0.8, "output_source": "last_op", "output_op": "Functional.linear.1.forward"}]
    (finding,) = run_rules([rule], facts).findings
    assert "taken from the last op" in finding.evidence["en"] and "last_op" not in finding.evidence["en"]
    assert "最后一个算子" in finding.evidence["zh"] and "last_op" not in finding.evidence["zh"]


# Runs whose root cause explains other error findings: a changed argument (msprobe statistics of a
# transformer whose cosine head's eps is 0), a changed weight (a training step, msprobe statistics).
EXPLAINED = (DATA / "realtool" / "msprobe_argument_mismatch__masked_transformer__cosine_head_eps0__mix_statistics"
             / "compare_result_20261128120314.csv", DATA / "training" / "weight.csv")


@pytest.mark.parametrize("path", EXPLAINED, ids=lambda p: p.parent.name[:40])
def test_a_finding_explained_by_the_root_cause_never_reads_as_a_second_error(path: Path) -> None:
    diagnosis = analyse(AnalysisOptions(comparison=path))
    assert any(f.explained_by and f.severity == "error" for f in diagnosis.findings)
    html = render(diagnosis, "html", "en")
    symptoms = html[html.index('class="symptoms"'):]
    symptoms = symptoms[:symptoms.index("</details>")]
    assert "badge sev-error" not in symptoms and "explained by it" in symptoms
    markdown = render(diagnosis, "md", "en")
    table = markdown[markdown.index("| Index | Op | Op type | Finding"):]
    assert "| error |" not in table.split("\n\n")[0]


def test_a_graph_of_another_network_that_matches_a_few_ops_is_warned_about(run_cli) -> None:
    own = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"
    other = scenario_csv(SCENARIOS / "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0")
    run = run_cli(other, "--graph", own / "model.onnx", "--format", "json")
    assert run.code == 0
    assert re.search(r"model\.onnx matches 3 of the comparison's 16 ops \(19%\): is it the graph of this run\?",
                     run.err)
    assert any("matches 3 of" in w for w in run.report()["warnings"])
    matching = run_cli(scenario_csv(own), "--graph", own / "model.onnx", "--format", "json")
    assert "is it the graph of this run" not in matching.err


def test_ops_and_node_take_a_dump_json_pair(capsys) -> None:
    from advisor.cli import main

    pair = ["--bench", str(DATA / "msprobe_faults" / "fp16_overflow_bench_dump.json"),
            "--target", str(DATA / "msprobe_faults" / "fp16_overflow_target_dump.json")]
    assert main(["ops", *pair]) == 0
    listed = capsys.readouterr().out
    assert "Functional.linear.1.forward" in listed and "out norm rel" in listed
    assert main(["node", "Functional.linear.1.forward", *pair]) == 0
    node = capsys.readouterr().out
    assert "Functional.linear.1.forward.output.0" in node and "fp16_overflow" in node
    assert main(["ops", str(DATA / "training" / "eps.csv"), *pair]) == 2
    assert "not both or neither" in capsys.readouterr().err


def test_dumps_of_two_frameworks_are_said_to_be_paired_across_them(run_cli, realdata) -> None:
    bench = realdata("Ascend__msprobe/test__msprobe_test__mindspore_ut__compare__dump_file__pytorch_data__dump.json")
    target = realdata("Ascend__msprobe/test__msprobe_test__mindspore_ut__compare__dump_file__mindspore_data__dump.json")
    run = run_cli("--bench", bench, "--target", target, "--format", "json")
    assert run.code == 0
    warning = next(w for w in run.report()["warnings"] if "framework" in w)
    paired, calls = map(int, re.search(r"(\d+) of (\d+) calls paired", warning).groups())
    assert "a PyTorch dump and the target a MindSpore dump" in warning and 0 < paired <= calls
    same = run_cli("--bench", DATA / "msprobe_faults" / "fp16_overflow_bench_dump.json",
                   "--target", DATA / "msprobe_faults" / "fp16_overflow_target_dump.json", "--format", "json")
    assert not any("paired" in w for w in same.report()["warnings"])
