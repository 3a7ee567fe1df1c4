"""An encoder whose LayerNorms the target fuses (ATC's LayerNormONNXFusionPass: one LayerNorm op for
nine golden ops): `advisor compare` pairs no tensor by guess, whatever it is given, and `compare`
then `run` names the same root cause as the generator's own comparison of the same dumps, on clean
and faulty builds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from advisor.compare.runner import CompareOptions, compare_dumps
from advisor.pipeline import AnalysisOptions, analyse
from advisor.tensors.dump_names import safe_name
from tests.compare.generated import generated_scenario
from tests.conftest import scenario_csv

pytestmark = pytest.mark.scenarios

CLEAN = "clean_fp16__byte_transformer__fused_layernorm__s0"
SCENARIOS = [CLEAN, "clean_bf16__byte_transformer__fused_layernorm__s0",
             "problem_node__byte_transformer__softmax_axis_fused_layernorm__s0",
             "problem_node__byte_transformer__layernorm_eps_first__s0",
             "problem_node__byte_transformer__layernorm_eps_block1__s1"]
# What each run is given: nothing (names), the golden ONNX graph, the target's GE graph, or all three
# with the build's fusion report.
GIVEN = {
    "names": lambda d: {},
    "onnx": lambda d: {"graphs": (d / "model.onnx",)},
    "ge": lambda d: {"graphs": (next(d.glob("ge_proto_*_Build.txt")),)},
    "all": lambda d: {"graphs": (d / "model.onnx", next(d.glob("ge_proto_*_Build.txt"))),
                      "fusion": d / "fusion_result.json"},
}


def read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"], dtype={"OverFlow": str})


def root_cause(csv: Path) -> tuple[str, str | None]:
    root = analyse(AnalysisOptions(comparison=csv, plugins=False)).root_cause
    return ("consistent", None) if root is None else (root.kind, safe_name(root.op or ""))


def compare(directory: Path, out: Path, **given):
    return compare_dumps(CompareOptions(directory / "golden", directory / "target", out, jobs=1, progress=False,
                                        **given))


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("given", list(GIVEN))
def test_compare_then_run_names_the_root_cause_of_the_generators_csv(name, given, tmp_path, tmp_path_factory):
    directory = generated_scenario(name, tmp_path_factory)
    label = json.loads((directory / "label.json").read_text())
    vendor = scenario_csv(directory)
    summary = compare(directory, tmp_path / "result.csv", **GIVEN[given](directory))
    assert "shape" not in summary.coverage                       # nothing paired by shape alone
    got, expected = read(summary.output), read(vendor)
    # Every row pairs as the generator paired it (by construction): same tensors, same metrics.
    expected["TensorIndex"] = expected["TensorIndex"].map(safe_name)
    got["TensorIndex"] = got["TensorIndex"].map(safe_name)
    assert list(got["TensorIndex"]) == list(expected["TensorIndex"])
    assert list(got["GroundTruth"]) == list(expected["GroundTruth"])
    a, b = got["CosineSimilarity"].to_numpy(float), expected["CosineSimilarity"].to_numpy(float)
    assert ((np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= 1e-5)).all()
    # The weights the fused LayerNorm reads (gamma, beta) have no golden dump: counted, not guessed.
    weights = got[got["TensorIndex"].str.contains(r"LayerNorm:input:[12]$")]
    assert len(weights) == 10 and weights["CompareFailReason"].str.startswith("not compared").all()
    assert summary.coverage[""] == 10
    verdict = root_cause(summary.output)
    assert verdict == root_cause(vendor)
    assert verdict == (label["kind"], safe_name(label["op"]) if label["op"] else None)


def test_with_the_target_graph_rows_carry_its_op_names(tmp_path, tmp_path_factory):
    directory = generated_scenario(SCENARIOS[3], tmp_path_factory)
    summary = compare(directory, tmp_path / "result.csv", **GIVEN["all"](directory))
    frame = read(summary.output)
    fused = frame[frame["OpType"] == "LayerNorm"]
    assert set(fused["NPUDump"]) == {"Add_10/LayerNorm", "Add_40/LayerNorm", "Add_59/LayerNorm",
                                     "Add_89/LayerNorm", "Add_108/LayerNorm"}
    assert analyse(AnalysisOptions(comparison=summary.output, plugins=False)).root_cause.op == "Add_10/LayerNorm"


@pytest.fixture
def renamed(tmp_path, tmp_path_factory) -> Path:
    """The clean scenario as a compiler that names its LayerNorm ops ``norm_<k>`` would dump it: no
    name says which golden ops they computed."""
    directory = tmp_path / "renamed"
    shutil.copytree(generated_scenario(CLEAN, tmp_path_factory), directory)
    for path in (directory / "target").glob("LayerNorm.*"):
        op = path.name.split(".")[1]
        path.rename(path.with_name(path.name.replace(f".{op}.", f".norm_{op.split('_')[1]}.")))
    return directory


def test_a_fused_op_without_a_name_link_pairs_through_the_golden_graph(renamed, tmp_path):
    summary = compare(renamed, tmp_path / "result.csv", graphs=(renamed / "model.onnx",))
    frame = read(summary.output).set_index("TensorIndex")
    assert frame.loc["norm_10:output:0", "GroundTruth"] == ("ReduceMean_2,Sub_3,Pow_4,ReduceMean_5,Add_6,Sqrt_7,"
                                                            "Div_8,Mul_9,Add_10")
    assert frame.loc["norm_10:output:0", "CosineSimilarity"] > 0.999
    assert frame.loc["MatMul_11:input:0", "CosineSimilarity"] > 0.999
    assert summary.coverage["pattern"] == 5 and summary.coverage[""] == 10
    assert root_cause(summary.output) == ("consistent", None)


def test_without_a_graph_an_unlinked_fused_op_and_what_reads_it_are_not_compared(renamed, tmp_path):
    summary = compare(renamed, tmp_path / "result.csv")
    frame = read(summary.output).set_index("TensorIndex")
    fused = frame.loc["norm_10:output:0"]
    assert fused["GroundTruth"] == "*" and fused["CompareFailReason"].startswith("not compared")
    reader = frame.loc["MatMul_11:input:0"]      # its input is the LayerNorm's output: nothing to compare it with
    assert np.isnan(reader["CosineSimilarity"]) and reader["CompareFailReason"].startswith("not compared")
    assert frame.loc["MatMul_11:output:0", "GroundTruth"] == "MatMul_11,Add_12"   # the LayerNorm's ops not taken
    assert frame.loc["MatMul_11:output:0", "CosineSimilarity"] > 0.999
    assert summary.coverage[""] == 29 and "shape" not in summary.coverage
    assert root_cause(summary.output) == ("consistent", None)
