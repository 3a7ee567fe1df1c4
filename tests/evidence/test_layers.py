"""Layer evidence on synthetic ONNX models: conv (grouped), Gemm, 3-D MatMul weights, and the inputs that
must not crash a run (no weight, an int8 weight, a golden input of the wrong shape, non-finite values).

The comparison rows are written as a real msaccucmp CSV (tests/facts/test_builder.py helpers); the
weights come from an ONNX file made with onnx.helper; golden inputs are handed over like dumps."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from advisor.evidence.layer_sim import conv2d  # noqa: E402
from advisor.evidence.layers import LayerInputs, layer_facts  # noqa: E402
from advisor.evidence.quant_config import quant_settings  # noqa: E402
from advisor.facts.schema import FACT_FIELDS  # noqa: E402
from advisor.facts.thresholds import load_thresholds  # noqa: E402
from advisor.graph import read_graph  # noqa: E402

from ..facts.test_builder import facts_for, row  # noqa: E402

RNG = np.random.default_rng(3)
INT8 = {"precision_config": {"precision_mode": "qint8_mixed_float16", "weight_quant_granularity": "per_tensor"}}


def _model(tmp_path, nodes, initializers):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(a, name) for name, a in initializers.items()])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return path


def _layers(tmp_path, op_type, op, path, inputs, config=INT8):
    rows = [row(0, "Data", "x", "output", 1.0, dtype="DT_FLOAT"),
            row(1, op_type, op, "input", 1.0), row(1, op_type, op, "output", 0.95, 0.3),
            row(2, "NaN", "Node_Output", "output", 0.95, 0.3, golden="out.npy")]
    facts = facts_for(tmp_path, rows)
    sources = LayerInputs(read_graph(path), path, lambda name, slot: inputs.get((name, slot)))
    found = layer_facts(quant_settings(config), facts.ops, load_thresholds(), sources)
    for fact in found:
        assert set(fact) <= set(FACT_FIELDS["layer"]), set(fact) - set(FACT_FIELDS["layer"])
    return {f["op"]: f for f in found}


def test_grouped_conv_is_recomputed_and_per_channel_found(tmp_path):
    w = RNG.normal(size=(8, 2, 3, 3)).astype(np.float32)
    w[0] *= 40                                           # one output channel with a far wider range
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="Conv_1", group=2, pads=[1, 1, 1, 1], strides=[2, 2])
    path = _model(tmp_path, [conv], {"w": w})
    x = RNG.normal(size=(1, 4, 10, 10)).astype(np.float32)
    weight_only = {"precision_config": {**INT8["precision_config"], "weight_only": True}}
    fact = _layers(tmp_path, "Conv2D", "Conv_1", path, {("Conv_1", 0): x}, weight_only)["Conv_1"]
    assert fact["sim_level"] == "output" and fact["w_channels"] == 8 and fact["w_channel_ratio"] > 20
    assert fact["fix_alternative"] == "per_channel" and fact["fix_gain"] > 2   # the rule's min_gain


def test_conv2d_matches_a_direct_convolution():
    x = RNG.normal(size=(1, 2, 5, 5))
    w = RNG.normal(size=(3, 2, 3, 3))
    got = conv2d(x, w, {"pads": [1, 1, 1, 1]})
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.array([[[[np.sum(padded[0, :, i:i + 3, j:j + 3] * w[o]) for j in range(5)] for i in range(5)]
                      for o in range(3)]])
    assert np.allclose(got, want)


def test_gemm_with_trans_b_uses_the_rows_as_output_channels(tmp_path):
    w = RNG.normal(size=(6, 16)).astype(np.float32)     # [out, in] with transB
    gemm = helper.make_node("Gemm", ["x", "w"], ["y"], name="Gemm_1", transB=1)
    path = _model(tmp_path, [gemm], {"w": w})
    fact = _layers(tmp_path, "Gemm", "Gemm_1", path, {("Gemm_1", 0): RNG.normal(size=(4, 16)).astype(np.float32)})
    assert fact["Gemm_1"]["w_channels"] == 6 and fact["Gemm_1"]["sim_level"] == "output"


def test_a_batched_matmul_weight_has_its_channels_last(tmp_path):
    w = RNG.normal(size=(1, 32, 16)).astype(np.float32)
    path = _model(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["y"], name="MatMul_1")], {"w": w})
    fact = _layers(tmp_path, "BatchMatMulV2", "MatMul_1", path,
                   {("MatMul_1", 0): RNG.normal(size=(1, 5, 32)).astype(np.float32)})["MatMul_1"]
    assert fact["w_channels"] == 16 and fact["sim_level"] == "output"


@pytest.mark.parametrize("weight", [np.arange(-8, 8, dtype=np.int8).reshape(4, 4),     # already quantised
                                    np.ones(4, dtype=np.float32)])                      # 1-D
def test_a_layer_without_a_usable_weight_is_not_recomputed(tmp_path, weight):
    path = _model(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["y"], name="MatMul_1")], {"w": weight})
    fact = _layers(tmp_path, "MatMul", "MatMul_1", path, {("MatMul_1", 0): RNG.normal(size=(2, 4)).astype(np.float32)})
    assert not fact["MatMul_1"]["has_weights"] and "sim_level" not in fact["MatMul_1"]
    assert "no numpy recomputation" in fact["MatMul_1"]["sim_note"]


def test_a_golden_input_that_does_not_fit_falls_back_to_the_weights(tmp_path):
    w = RNG.normal(size=(16, 8)).astype(np.float32)
    path = _model(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["y"], name="MatMul_1")], {"w": w})
    fact = _layers(tmp_path, "MatMul", "MatMul_1", path,
                   {("MatMul_1", 0): RNG.normal(size=(2, 4, 4)).astype(np.float32)})["MatMul_1"]   # flattened away
    assert fact["sim_level"] == "weights" and "does not fit weight (16, 8)" in fact["sim_note"]


def test_non_finite_golden_values_are_counted_not_simulated(tmp_path):
    w = RNG.normal(size=(16, 8)).astype(np.float32)
    path = _model(tmp_path, [helper.make_node("MatMul", ["x", "w"], ["y"], name="MatMul_1")], {"w": w})
    x = RNG.normal(size=(4, 16)).astype(np.float32)
    x[0, 0], x[1, 1] = np.nan, np.inf
    config = {"precision_config": {"precision_mode": "qint8_mixed_float16", "activation_quant_algo": "symmetric"}}
    fact = _layers(tmp_path, "MatMul", "MatMul_1", path, {("MatMul_1", 0): x}, config)["MatMul_1"]
    assert fact["a_nonfinite"] == 2 and np.isfinite(fact["a_max"]) and fact["sim_level"] == "weights"
