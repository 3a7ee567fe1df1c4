"""Symmetric int8 on one-sided activations beyond the transformer: a convolution fed by a ReLU (the
CNN case) and a speech-like feature map that sits far from zero. The layer evidence recomputes the conv
from its golden input as the MagicMind config says (``activation_quant_algo: symmetric``, per_axis
weights), finds the zero point is what helps, and quant-symmetric names the conv and the knob."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from advisor.engine.loading import load_packs  # noqa: E402
from advisor.engine.runner import run_rules  # noqa: E402
from advisor.evidence.layers import LayerInputs, layer_facts  # noqa: E402
from advisor.evidence.quant_config import quant_settings  # noqa: E402
from advisor.facts.thresholds import load_thresholds  # noqa: E402
from advisor.graph import read_graph  # noqa: E402

from ..facts.test_builder import facts_for, row  # noqa: E402

RULES = [r for r in load_packs(installed=False).rules if r.id == "quant-symmetric"]
#: As MagicMind's samples write it; the calibration range is what the calibrator recorded.
SYMMETRIC = {"tool": "magicmind", "precision_config": {"precision_mode": "qint8_mixed_float16",
                                                       "activation_quant_algo": "symmetric",
                                                       "weight_quant_granularity": "per_axis"}}


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
    return path, x


def _diagnose(tmp_path, config, x, path, out_cosine=0.95):
    rows = [row(0, "Data", "x", "output", 1.0, dtype="DT_FLOAT"), row(1, "Relu", "Relu_0", "output", 1.0),
            row(2, "Conv2D", "Conv_1", "input", 1.0), row(2, "Conv2D", "Conv_1", "output", out_cosine, 0.3),
            row(3, "NaN", "Node_Output", "output", out_cosine, 0.3, golden="out.npy")]
    facts = facts_for(tmp_path, rows)
    sources = LayerInputs(read_graph(path), path, lambda name, slot: x if (name, slot) == ("Conv_1", 0) else None)
    layers = layer_facts(quant_settings(config), facts.ops, load_thresholds(), sources)
    return layers, run_rules(RULES, facts.all_facts() + layers).findings


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_conv_after_relu_in_symmetric_int8_is_named_with_the_knob(tmp_path, seed):
    path, x = _relu_conv(tmp_path, seed)
    layers, findings = _diagnose(tmp_path, SYMMETRIC, x, path)
    (layer,) = layers
    assert layer["a_one_sided"] and layer["producer_type"] == "Relu" and layer["cfg_activation_algo"] == "symmetric"
    assert layer["fix_alternative"] == "asymmetric" and layer["fix_gain"] >= 1.5
    assert layer["fix_settings"] == "activation_quant_algo=asymmetric"
    (finding,) = findings
    assert (finding.kind, finding.op, finding.index) == ("quant_symmetric", "Conv_1", 2)
    assert "never negative" in finding.evidence["en"] and "Relu" in finding.evidence["en"]


def test_the_same_conv_built_asymmetric_is_no_symmetric_problem(tmp_path):
    path, x = _relu_conv(tmp_path, 0)
    asymmetric = {**SYMMETRIC, "precision_config": {**SYMMETRIC["precision_config"],
                                                     "activation_quant_algo": "asymmetric"}}
    _, findings = _diagnose(tmp_path, asymmetric, x, path)
    assert findings == []


def test_a_centred_input_to_the_conv_gains_nothing_from_a_zero_point(tmp_path):
    path, x = _relu_conv(tmp_path, 0)
    centred = np.random.default_rng(5).normal(size=x.shape).astype(np.float32)
    layers, findings = _diagnose(tmp_path, SYMMETRIC, centred, path)
    assert not layers[0]["a_one_sided"] and findings == []
