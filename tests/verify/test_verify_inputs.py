"""What ``--verify`` does with the inputs a user really has: a committed scenario (the model and only the
network-input dumps), no graph, no dumps, another network's model, no onnxruntime. Whatever cannot be
checked is one line in the report saying what and why; the run never fails for it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REPO, SCENARIOS

pytest.importorskip("onnxruntime", reason="onnxruntime is a dependency of advisor run --verify")

PNET = SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"      # model.onnx and the input dumps only
RNET = SCENARIOS / "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0"
SCHEMA = json.loads((REPO / "reports" / "report.schema.json").read_text(encoding="utf-8"))


def _csv(folder: Path) -> Path:
    return next(folder.glob("result_*.csv"))


def _verify(run_cli, folder: Path, *extra: str) -> dict:
    run = run_cli(_csv(folder), "--verify", "--format", "json,txt", *extra)
    assert run.code == 0, run.err
    report = run.report()
    jsonschema.validate(report, SCHEMA)
    return report


def test_the_model_and_the_input_dumps_give_the_fidelity_and_say_what_else_is_missing(run_cli):
    report = _verify(run_cli, PNET, "--graph", str(PNET / "model.onnx"), "--dumps",
                     f"{PNET / 'golden'}:{PNET / 'target'}", "--config", str(PNET / "build.json"))
    verification = report["verification"]
    fidelity = verification["fidelity"]
    # float16 precision alone keeps P-Net's output (0.999998); the target's is 0.796: not precision.
    assert fidelity["emulated_output_cosine"] == pytest.approx(0.999998, abs=2e-6)
    assert fidelity["target_output_cosine"] == pytest.approx(0.79611, abs=1e-5) and not fidelity["holds"]
    assert verification["replay"] == [] and verification["residual"] == []
    assert verification["not_verified"] == [
        {"what": "the residual",
         "why": "no op's target dump pairs with a tensor of the model (were only the network inputs dumped?)"},
        {"what": "replay of Conv_3", "why": "no target dump pairs with input MaxPool_2 of Conv_3"}]
    assert report["root_cause"]["op"] == "Conv_3"        # the diagnosis stands as it was


@pytest.mark.parametrize(("options", "why"), [
    ((), "--verify needs --graph model.onnx, the float model the golden run used (no graph given)"),
    (("--graph", str(PNET / "model.onnx")), "--verify needs --dumps GOLDEN_DIR:TARGET_DIR"),
])
def test_without_the_model_or_the_dumps_nothing_is_verified_and_the_report_says_why(run_cli, options, why):
    report = _verify(run_cli, PNET, *options)
    verification = report["verification"]
    assert verification["fidelity"] is None and verification["replay"] == [] and verification["remedy_steps"] == []
    (line,) = verification["not_verified"]
    assert line["what"] == "the diagnosis on the CPU (replay, emulation, remedy steps)"
    assert line["why"].startswith(why)
    assert report["root_cause"]["op"] == "Conv_3"


def test_another_networks_model_is_said_not_to_fit(run_cli):
    report = _verify(run_cli, RNET, "--graph", str(PNET / "model.onnx"), "--dumps",
                     f"{RNET / 'golden'}:{RNET / 'target'}")
    (line,) = report["verification"]["not_verified"]
    assert line["what"] == "the emulation (fidelity, residual, remedy steps)"
    assert line["why"].startswith("ONNX Runtime cannot run model.onnx on the CPU")
    assert report["verdict"] == "consistent"


def test_without_onnxruntime_the_report_says_how_to_install_it(run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)      # import onnxruntime raises ImportError
    report = _verify(run_cli, PNET, "--graph", str(PNET / "model.onnx"), "--dumps",
                     f"{PNET / 'golden'}:{PNET / 'target'}")
    (line,) = report["verification"]["not_verified"]
    assert line["why"] == "onnxruntime is not installed (pip install onnxruntime)"


def test_without_verify_report_json_says_null(run_cli):
    run = run_cli(_csv(PNET), "--format", "json")
    assert run.report()["verification"] is None
