"""Symmetric int8 on one-sided activations beyond the transformer: a convolution fed by a ReLU (the
CNN case). The target computes the conv on its input quantised to symmetric int8 with the range a
calibrator recorded on other data (heavy-tailed: 8-15x this input's own max), independently of the
advisor's quantisation code. The layer evidence recomputes the conv from its golden input as the
MagicMind config says (its range found under the ONNX tensor's name, as TensorRT and ONNX Runtime
calibrators key it; ``activation_quant_algo: symmetric``), sees that this reproduces the target's
error and that the zero point is what helps, and quant-symmetric names the conv and the knob."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from advisor.engine.loading import load_packs  # noqa: E402
from advisor.engine.runner import run_rules  # noqa: E402
from advisor.evidence.layer_sim import conv2d  # noqa: E402
from advisor.evidence.layers import LayerInputs, layer_facts  # noqa: E402
from advisor.evidence.quant_config import quant_settings  # noqa: E402
from advisor.facts.thresholds import load_thresholds  # noqa: E402
from advisor.graph import read_graph  # noqa: E402
from advisor.tensors.metrics import cosine_similarity, relative_euclidean_distance  # noqa: E402

from ..facts.test_builder import facts_for, row  # noqa: E402

RULES = [r for r in load_packs(installed=False).rules if r.id in ("quant-symmetric", "quant-backend-issue")]
#: As MagicMind's samples write it; the calibration range is what the calibrator recorded.
SYMMETRIC = {"tool": "magicmind", "precision_config": {"precision_mode": "qint8_mixed_float16",
                                                       "activation_quant_algo": "symmetric",
                                                       "weight_quant_granularity": "per_axis"}}
PADS = {"pads": [1, 1, 1, 1]}


def _relu_conv(tmp_path, seed: int):
    rng = np.random.default_rng(seed)
    w = (rng.normal(size=(16, 8, 3, 3)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="Relu_0"),
             helper.make_node("Conv", ["r", "w"], ["y"], name="Conv_1", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph), str(path))
    # ReLU of a heavy-tailed pre-activation: never negative, most values small, a few large
    x = np.maximum(rng.standard_t(df=3, size=(1, 8, 12, 12)), 0).astype(np.float32)
    # what a calibrator recorded on 32 other inputs with heavier tails
    calibrated = float(np.maximum(rng.standard_t(df=2, size=(32, 8, 12, 12)), 0).max())
    return path, x, w, calibrated


def _target_output(x: np.ndarray, w: np.ndarray, high: float) -> np.ndarray:
    """The target's conv: input in signed int8, zero point 0, scale high / 127 (written out here,
    not the advisor's fake_quantize)."""
    step = high / 127.0
    return conv2d(np.clip(np.round(x / step), -128, 127) * step, w, PADS)


def _diagnose(tmp_path, config, x, path, target):
    golden = conv2d(x, np.asarray(numpy_helper.to_array(onnx.load(str(path)).graph.initializer[0])), PADS)
    cos, red = cosine_similarity(target, golden), relative_euclidean_distance(target, golden)
    rows = [row(0, "Data", "x", "output", 1.0, dtype="DT_FLOAT"), row(1, "Relu", "Relu_0", "output", 1.0),
            row(2, "Conv2D", "Conv_1", "input", 1.0), row(2, "Conv2D", "Conv_1", "output", cos, red),
            row(3, "NaN", "Node_Output", "output", cos, red, golden="out.npy")]
    facts = facts_for(tmp_path, rows)
    sources = LayerInputs(read_graph(path), path, lambda name, slot: x if (name, slot) == ("Conv_1", 0) else None)
    layers = layer_facts(quant_settings(config), facts.ops, load_thresholds(), sources)
    return layers, run_rules(RULES, facts.all_facts() + layers).findings


def _with_range(config: dict, tensor: str, low: float, high: float) -> dict:
    return {**config, "calibration": {"custom_ranges": {tensor: [low, high]}}}


@pytest.mark.parametrize("seed", [0, 4, 8])
def test_a_conv_after_relu_in_symmetric_int8_is_named_with_the_knob(tmp_path, seed):
    path, x, w, calibrated = _relu_conv(tmp_path, seed)
    # the range keyed by the ONNX value the ReLU writes, as a TensorRT or ONNX Runtime calibration table does
    layers, findings = _diagnose(tmp_path, _with_range(SYMMETRIC, "r", 0.0, calibrated), x, path,
                                 _target_output(x, w, calibrated))
    (layer,) = layers
    assert layer["out_deviates"], "precondition: the target's conv deviates"
    assert layer["a_one_sided"] and layer["producer_type"] == "Relu" and layer["cfg_activation_algo"] == "symmetric"
    assert layer["a_range_stated"] and layer["a_range_tensor"] == "r"
    assert layer["sim_share"] == pytest.approx(1.0, abs=0.02)      # the build's own range reproduces the error
    assert layer["fix_alternative"] == "asymmetric" and layer["fix_gain"] >= 1.5
    assert layer["fix_settings"] == "activation_quant_algo=asymmetric"
    (finding,) = findings
    assert (finding.kind, finding.op, finding.index) == ("quant_symmetric", "Conv_1", 2)
    assert "never negative" in finding.evidence["en"] and "Relu" in finding.evidence["en"]
    assert "the config's range for r" in finding.evidence["en"]


def test_a_range_the_config_does_not_give_is_found_from_the_target_error(tmp_path):
    """No range in the config: calibrated on the golden input, the layer keeps its output; a range
    ~8x the input's own (the calibrator's 7.9x) reproduces what the target adds - quantisation, not
    the backend."""
    path, x, w, calibrated = _relu_conv(tmp_path, 4)
    layers, findings = _diagnose(tmp_path, SYMMETRIC, x, path, _target_output(x, w, calibrated))
    (layer,) = layers
    assert layer["a_range_stated"] is False and layer["sim_share"] < 0.3
    assert layer["a_reproducing_range_ratio"] == pytest.approx(calibrated / float(x.max()), rel=0.15)
    assert [(f.kind, f.op) for f in findings] == [("quant_symmetric", "Conv_1")]
    assert "does not give this input's range" in findings[0].evidence["en"]


def test_a_target_worse_than_the_configs_own_range_is_a_backend_issue(tmp_path):
    """The config records the input's true max as its range; the target's error needs a range 15x
    wider: the target does not compute what the build describes."""
    path, x, w, calibrated = _relu_conv(tmp_path, 0)
    config = _with_range(SYMMETRIC, "Conv_1:input:0", 0.0, float(x.max()))
    layers, findings = _diagnose(tmp_path, config, x, path, _target_output(x, w, calibrated))
    assert layers[0]["a_range_stated"] and layers[0]["sim_share"] < 0.3
    assert [(f.kind, f.op) for f in findings] == [("quant_backend_issue", "Conv_1")]


def test_the_same_conv_built_asymmetric_is_no_symmetric_problem(tmp_path):
    path, x, w, calibrated = _relu_conv(tmp_path, 0)
    asymmetric = {**SYMMETRIC, "precision_config": {**SYMMETRIC["precision_config"],
                                                     "activation_quant_algo": "asymmetric"}}
    _, findings = _diagnose(tmp_path, _with_range(asymmetric, "r", 0.0, calibrated), x, path,
                            _target_output(x, w, calibrated))
    assert "quant_symmetric" not in {f.kind for f in findings}


def test_a_centred_input_to_the_conv_gains_nothing_from_a_zero_point(tmp_path):
    path, x, w, calibrated = _relu_conv(tmp_path, 0)
    centred = np.random.default_rng(5).normal(size=x.shape).astype(np.float32)
    layers, findings = _diagnose(tmp_path, SYMMETRIC, centred, path, _target_output(centred, w, 4 * calibrated))
    assert not layers[0]["a_one_sided"] and "quant_symmetric" not in {f.kind for f in findings}
