"""The emulation's arithmetic on small ONNX models: where it rounds, overflows, saturates, accumulates,
keeps float32 and quantises, checked against numpy doing the same by hand."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime", reason="onnxruntime is a dependency of advisor run --verify")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from advisor.evidence.quant import Scheme, fake_quantize  # noqa: E402
from advisor.evidence.quant_config import QuantSettings  # noqa: E402
from advisor.verify.emulate import Emulator, round_array  # noqa: E402
from advisor.verify.numerics import Numerics  # noqa: E402
from advisor.verify.onnxgraph import Group, OnnxModel  # noqa: E402
from advisor.verify.qdq import QuantPlan  # noqa: E402


def _model(nodes, inputs, outputs, weights=()) -> OnnxModel:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                              [numpy_helper.from_array(np.asarray(a, dtype=np.float32), n) for n, a in weights])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return OnnxModel(proto, "model.onnx")


def _groups(model: OnnxModel) -> list[Group]:
    return [Group(key, n, (key,)) for n, key in enumerate(model.keys)]


@pytest.fixture
def square_twice() -> OnnxModel:
    """y = (x * 300) * 300: 90000 for x = 1, beyond float16's 65504."""
    return _model([helper.make_node("Mul", ["x", "k"], ["a"], name="first"),
                   helper.make_node("Mul", ["a", "k"], ["y"], name="second")], [("x", [4])], ["y"],
                  [("k", np.array(300.0))])


def test_float16_storage_overflows_where_the_target_would(square_twice):
    emulator = Emulator(square_twice, _groups(square_twice), {"x": np.array([1, 0.5, 0.1, 0.01], np.float32)})
    exact = emulator.run(None)["y"]
    emulated = emulator.run(Numerics("float16"))["y"]
    assert exact[0] == 90000 and np.isinf(emulated[0])
    np.testing.assert_array_equal(emulated[1:], np.float16(exact[1:]).astype(np.float32))


def test_saturation_clamps_at_65504(square_twice):
    emulator = Emulator(square_twice, _groups(square_twice), {"x": np.array([1, -1, 0.1, 0], np.float32)})
    emulated = emulator.run(Numerics("float16", saturate=True))["y"]
    assert list(emulated[:2]) == [65504.0, -65504.0]


def test_an_op_kept_in_float32_stores_unrounded_and_its_float16_reader_rounds(square_twice):
    emulator = Emulator(square_twice, _groups(square_twice), {"x": np.full(4, 1 / 3, np.float32)})
    kept = emulator.run(Numerics("float16").with_keep({"first"}, ()))
    plain = emulator.run(Numerics("float16"))
    x = np.float32(np.float16(1 / 3))                                       # the input Cast rounds the network input
    assert kept["a"][0] == x * np.float32(300)                              # stored as float32
    assert plain["a"][0] == np.float16(kept["a"][0])                        # stored as float16
    assert kept["y"][0] == np.float16(np.float16(kept["a"][0]) * np.float32(300))   # read through a Cast


def test_a_fused_groups_inner_tensor_stays_unrounded(square_twice):
    emulator = Emulator(square_twice, [Group("first", 0, ("first", "second"))], {"x": np.full(4, 1 / 3, np.float32)})
    values = emulator.run(Numerics("float16"))
    assert values["a"][0] == np.float32(np.float16(1 / 3)) * np.float32(300)
    assert values["y"][0] == np.float16(values["a"][0] * np.float32(300))


@pytest.mark.parametrize(("accumulate", "finite"), [(True, False), (False, True)])
def test_reducemean_sums_in_float16_when_asked(accumulate, finite):
    """64 squares of 40: each 1600, their sum 102400 overflows a float16 accumulator, their mean does not."""
    model = _model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=1, name="mean")],
                   [("x", [1, 64])], ["y"])
    emulator = Emulator(model, _groups(model), {"x": np.full((1, 64), 1600.0, np.float32)})
    value = emulator.run(Numerics("float16", fp16_accumulation=accumulate))["y"]
    assert bool(np.isfinite(value).all()) is finite
    if finite:
        assert value.item() == 1600.0


def test_bfloat16_rounding_is_round_to_nearest_even_like_onnxruntimes_cast():
    values = np.random.default_rng(0).normal(scale=100, size=4096).astype(np.float32)
    model = _model([helper.make_node("Identity", ["x"], ["y"], name="id")], [("x", [4096])], ["y"])
    emulated = Emulator(model, _groups(model), {"x": values}).run(Numerics("bfloat16"))["y"]
    np.testing.assert_array_equal(emulated, round_array(values, "bfloat16"))
    np.testing.assert_array_equal(round_array(np.float32([1 + 2 ** -8]), "bfloat16"), [1.0])   # a tie: to even


def test_an_int8_layer_is_quantised_as_the_build_config_says():
    """A MatMul layer with a calibrated input range [0, 1], symmetric (scale 1/127), per-tensor weights."""
    rng = np.random.default_rng(1)
    weight = rng.normal(size=(8, 4)).astype(np.float32)
    x = rng.uniform(0, 0.2, size=(2, 8)).astype(np.float32)
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="MatMul_1")], [("x", [2, 8])], ["y"],
                   [("w", weight)])
    settings = QuantSettings(precision="int8", float_precision="float32", ranges={"MatMul_1:input:0": (0.0, 1.0)},
                             activation_symmetric=True)
    group = Group("MatMul_1", 0, ("MatMul_1",))
    emulator = Emulator(model, [group], {"x": x}, QuantPlan(model, {"w": -1}, dict, 99.99))
    got = emulator.run(Numerics("float32", quant=settings))["y"]
    xq = np.clip(np.round(x.astype(np.float64) * 127), -128, 127) / 127
    want = xq @ fake_quantize(weight, Scheme(per_channel=False, symmetric=True), -1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    asymmetric = emulator.run(Numerics("float32", quant=settings).with_settings(
        {"activation_quant_algo": "asymmetric"}))
    assert np.abs(asymmetric["y"] - x @ weight).max() < np.abs(got - x @ weight).max()


def test_a_listed_layer_of_a_type_without_weights_has_its_input_quantised():
    """A hand-written int8 layer list that names a Softmax: the build computes it on int8 logits, so the
    emulation quantises its input (min/max calibrated on the float run) before the exponentials."""
    logits = np.array([[0.0, 0.3, 0.6, 1.0, -100.0]], dtype=np.float32)    # one int8 step: 100 / 127
    model = _model([helper.make_node("Softmax", ["x"], ["y"], name="Softmax_1", axis=-1)], [("x", [1, 5])], ["y"])
    emulator = Emulator(model, [Group("Softmax_1", 0, ("Softmax_1",))], {"x": logits},
                        QuantPlan(model, {}, lambda: {"x": logits}, 99.99))
    settings = QuantSettings(precision="int8", float_precision="float32", layers=("Softmax_1",),
                             activation_symmetric=True, calibration="minmax")
    got = emulator.run(Numerics("float32", quant=settings))["y"]
    step = 100.0 / 127
    codes = np.clip(np.round(logits.astype(np.float64) / step), -128, 127) * step
    want = np.exp(codes - codes.max()) / np.exp(codes - codes.max()).sum()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    unlisted = QuantSettings(precision="int8", float_precision="float32", activation_symmetric=True,
                             calibration="minmax")
    np.testing.assert_allclose(emulator.run(Numerics("float32", quant=unlisted))["y"],
                               np.exp(logits) / np.exp(logits).sum(), rtol=1e-5, atol=1e-7)
