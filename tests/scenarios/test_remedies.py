"""Remedies applied in the scenario generator (faults.apply_remedy, the emulator's per-op precision).

A remedy step (report.json ``remedy.steps[i]``: generic ``settings`` and ``keep`` ops) must change
the target's computation as it says, and only as it says. Needs torch; the scenarios used run on
the seeded byte transformer (no network wheels).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SCENARIO_EXTRAS

pytestmark = pytest.mark.scenarios
torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)

from benchmarks.scenarios import catalog, faults  # noqa: E402
from benchmarks.scenarios.emulation import TargetRun  # noqa: E402
from benchmarks.scenarios.faults import Keep, apply_remedy  # noqa: E402
from benchmarks.scenarios.scenario import Replay, prepare, rerun  # noqa: E402

PER_TENSOR = "quant_per_tensor__byte_transformer__super_weights_b1__s0"
SYMMETRIC = "quant_symmetric__byte_transformer__attention_int8__s0"
OVERFLOW = "fp16_overflow__byte_transformer__embedding_outliers__s0"
SATURATED = "mixed_overflow_problem__byte_transformer__output_logit_drift__s1"


def _spec(name: str) -> catalog.ScenarioSpec:
    return next(s for s in catalog.CORPUS if s.name == name)


def _replay(name: str) -> tuple[Replay, TargetRun]:
    replay = prepare(_spec(name))
    run = replay.run()
    replay.locate(run)
    return replay, run


@pytest.fixture(scope="module")
def per_tensor():
    return _replay(PER_TENSOR)


@pytest.fixture(scope="module")
def symmetric():
    return _replay(SYMMETRIC)


@pytest.fixture(scope="module")
def overflow():
    return _replay(OVERFLOW)


@pytest.fixture(scope="module")
def saturated():
    return _replay(SATURATED)


def _same_run(a: TargetRun, b: TargetRun) -> bool:
    return all(np.array_equal(a.outputs[op][0].value, b.outputs[op][0].value, equal_nan=True)
               and a.outputs[op][0].ge_dtype == b.outputs[op][0].ge_dtype for op in a.outputs)


def _labelled(replay: Replay):
    return replay.plan.ops[replay.label_index]


# --- quantisation ---------------------------------------------------------------------------------

def test_per_channel_restores_the_per_tensor_scenario(per_tensor):
    replay, _ = per_tensor
    before = replay.rerun()
    assert before.op_deviates and before.output_deviates
    after = replay.rerun(apply_remedy(replay.fault, {"weight_quant_granularity": "per_channel"}))
    assert after.op_deviates is False and after.output_deviates is False
    assert after.output_cosine > before.output_cosine


def test_fixed_is_the_remedy_of_its_fix_settings(per_tensor, symmetric):
    for replay, _ in (per_tensor, symmetric):
        fixed = replay.fault.fixed()
        remedied = apply_remedy(replay.fault, type(replay.fault).fix_settings)
        assert _same_run(replay.run(fixed), replay.run(remedied))
        assert fixed.fixed() is None                       # already fixed: no further counterfactual


@pytest.mark.parametrize("keep", [
    Keep(golden=("MatMul_97",), precision="float16"),      # by the model's op name, policy precision
    Keep(op="MatMul_97", precision="float32"),             # by the target op name, float32
], ids=["golden-float16", "op-float32"])
def test_keeping_the_labelled_op_restores_it(per_tensor, keep):
    replay, _ = per_tensor
    assert _labelled(replay).name == "MatMul_97"
    after = replay.rerun(apply_remedy(replay.fault, {}, [keep]))
    assert after.op_deviates is False and after.output_deviates is False


def test_keep_in_float32_computes_and_stores_unrounded(per_tensor):
    replay, _ = per_tensor
    op = _labelled(replay)
    run = replay.run(apply_remedy(replay.fault, {}, [{"op": op.name, "golden": [], "precision": "float32"}]))
    assert run.outputs[op.name][0].ge_dtype == "DT_FLOAT"
    assert run.outputs[op.name][0].value.dtype == np.float32
    # Its consumer runs in FP16 again: it reads the float32 tensor through a cast.
    consumer = next(o for o in replay.plan.ops if op.output in o.inputs)
    assert run.outputs[consumer.name][0].ge_dtype == "DT_FLOAT16"
    assert {r.ge_dtype for r in run.inputs[consumer.name]} == {"DT_FLOAT16"}


def test_unrelated_remedies_change_nothing(per_tensor):
    replay, run = per_tensor
    unrelated = apply_remedy(replay.fault, {"activation_quant_algo": "asymmetric",
                                            "activation_calibration": "percentile"},
                             [Keep(golden=("MatMul_26",), precision="float16")])
    assert _same_run(run, replay.run(unrelated))
    assert replay.fault.remedied({"activation_quant_algo": "asymmetric"}) is replay.fault


def test_a_remedy_leaves_the_fault_it_was_given_alone(per_tensor):
    replay, run = per_tensor
    apply_remedy(replay.fault, {"weight_quant_granularity": "per_channel"}, [Keep(op="MatMul_97")])
    assert replay.fault.per_tensor and replay.fault.keep == ()
    assert _same_run(run, replay.run())


def test_asymmetric_activations_restore_the_symmetric_scenario(symmetric):
    replay, _ = symmetric
    after = replay.rerun(apply_remedy(replay.fault, {"activation_quant_algo": "asymmetric"}))
    assert after.op_deviates is False and after.output_deviates is False


def test_percentile_calibration_uses_the_golden_activation(symmetric):
    replay, _ = symmetric
    fault = apply_remedy(replay.fault, {"activation_calibration": "percentile", "activation_percentile": 99.9})
    assert (fault.calibration, fault.percentile, fault.symmetric) == ("percentile", 99.9, True)
    after = replay.rerun(fault)
    assert after.op_deviates is False
    op = _labelled(replay)
    golden = replay.golden[op.inputs[fault.slot]].abs().flatten().numpy()
    low, high = fault._ranges[op.name]
    assert high == pytest.approx(float(np.percentile(golden, 99.9))) and low == -high
    assert high < 1.0                                      # tighter than the hand-set [-1, 1]


def test_keeping_one_of_two_quantised_ops_unquantises_only_that_one(symmetric):
    replay, run = symmetric
    first, second = (replay.plan.op_containing(g) for g in replay.fault.golden_ops)
    kept = replay.run(apply_remedy(replay.fault, {}, [Keep(golden=(first.name,), precision="float16")]))
    clean = replay.run(faults.Fault())
    assert np.array_equal(kept.outputs[first.name][0].value, clean.outputs[first.name][0].value)
    assert not np.array_equal(kept.outputs[second.name][0].value, clean.outputs[second.name][0].value)
    assert not np.array_equal(run.outputs[first.name][0].value, clean.outputs[first.name][0].value)


def test_weight_quant_settings():
    weight = torch.tensor([[1.0, 100.0], [0.004, -50.0], [0.5, 20.0]])
    fault = faults.WeightQuantFault(kind="quant_per_tensor", golden_op="MatMul_0", weight=weight)
    per_channel = apply_remedy(fault, {"weight_quant_granularity": "per_channel"})
    assert (per_channel.per_tensor, per_channel.symmetric) == (False, True)
    asymmetric = apply_remedy(fault, {"weight_quant_symmetric": False})
    assert (asymmetric.per_tensor, asymmetric.symmetric) == (True, False)
    assert apply_remedy(fault, {"weight_quant_granularity": "per_tensor"}) is fault
    x = torch.eye(3)
    # The small output channel (column 0) keeps its own scale per channel: far less error.
    errors = [float((f.override(None, [x], None)[:, 0] - weight[:, 0]).abs().max()) for f in (fault, per_channel)]
    assert errors[1] < errors[0] / 50


def test_asymmetric_int8_weights_use_the_whole_range():
    w = torch.tensor([[0.0, 1.0], [0.25, 3.0], [0.5, 2.0]])           # one-sided columns
    symmetric = faults.int8_weights(w, per_tensor=False, channel_axis=-1)
    asymmetric = faults.int8_weights(w, per_tensor=False, channel_axis=-1, symmetric=False)
    assert float((asymmetric - w).abs().max()) < float((symmetric - w).abs().max())
    np.testing.assert_allclose(asymmetric.amax(dim=0).numpy(), [0.5, 3.0], rtol=1e-6)


def test_calibrated_ranges():
    x = torch.cat([torch.linspace(0.0, 1.0, 10001), torch.tensor([50.0])])     # one outlier
    assert faults.calibrated_range(x, "minmax", True) == (0.0, 50.0)
    low, high = faults.calibrated_range(x, "percentile", True, 99.0)
    assert high == pytest.approx(float(np.percentile(x.numpy(), 99.0))) and low == -high
    low, high = faults.calibrated_range(x, "percentile", False, 99.0)
    assert low == pytest.approx(0.01, abs=1e-3) and high < 1.0
    tail = torch.empty(100000).exponential_(1.0, generator=torch.Generator().manual_seed(0))
    for method in ("kl", "mse"):
        for symmetric in (True, False):
            low, high = faults.calibrated_range(tail, method, symmetric)
            assert 0.0 <= low < 1e-3 and 5.0 < high < float(tail.max())  # the long tail is clipped
    with pytest.raises(ValueError, match="unknown calibration"):
        faults.calibrated_range(x, "entropy2", True)


def test_settings_are_checked():
    assert faults.check_settings({"weight_quant_granularity": "per_channel", "magicmind_only_knob": 1}) == \
        ["magicmind_only_knob"]
    with pytest.raises(ValueError, match="weight_quant_granularity"):
        apply_remedy(faults.Fault(), {"weight_quant_granularity": "per_row"})
    with pytest.raises(ValueError, match="activation_percentile"):
        apply_remedy(faults.Fault(), {"activation_percentile": 250})
    with pytest.raises(ValueError, match="precision"):
        Keep.from_report({"op": "Pow_4", "precision": "int4"})


def test_keep_reaches_every_part_of_a_mixture():
    early = faults.InputQuantFault(kind="single_point_deviation", golden_ops=("MatMul_26",))
    late = faults.OpFault(kind="problem_node", golden_op="Softmax_74")
    mixture = faults.CompositeFault(kind="problem_node", root=late, others=((early, "harmless"),))
    keep = Keep(golden=("MatMul_26",), precision="float16")
    kept = apply_remedy(mixture, {"activation_quant_algo": "asymmetric"}, [keep])
    assert kept.keep == (keep,) and kept.root.keep == (keep,)
    (part, relation), = kept.others
    assert part.keep == (keep,) and part.symmetric is False and relation == "harmless"


# --- FP16 overflow: keep in float32 -----------------------------------------------------------------

def test_keeping_the_layernorm_variance_in_float32_restores_the_overflow(overflow):
    replay, _ = overflow
    pows = [op.name for op in replay.plan.ops if op.op_type == "Pow"]
    means = [op.name for op in replay.plan.ops if any(p in op.inputs for p in pows)]
    only_pows = replay.rerun(apply_remedy(replay.fault, {}, [Keep(op=p) for p in pows]))
    assert only_pows.op_deviates is False and only_pows.output_deviates       # the mean casts back to inf
    both = replay.rerun(apply_remedy(replay.fault, {}, [Keep(op=n) for n in pows + means]))
    assert both.output_deviates is False
    in_float16 = replay.rerun(apply_remedy(replay.fault, {}, [Keep(op=n, precision="float16")
                                                              for n in pows + means]))
    assert in_float16.op_deviates                                             # float16 keeps the policy


def test_saturation_clamps_what_a_kept_op_hands_to_an_fp16_op(saturated):
    replay, run = saturated
    head = _labelled(replay)
    softmax = next(op for op in replay.plan.ops if head.output in op.inputs)
    head_only = replay.run(apply_remedy(replay.fault, {}, [Keep(op=head.name)]))
    assert np.abs(head_only.outputs[head.name][0].value).max() > faults.FP16_MAX    # not clamped in float32
    assert np.abs(head_only.inputs[softmax.name][0].value.astype(np.float32)).max() == faults.FP16_MAX
    assert np.array_equal(head_only.outputs[softmax.name][0].value, run.outputs[softmax.name][0].value)
    both = replay.rerun(apply_remedy(replay.fault, {}, [Keep(op=head.name), Keep(golden=(softmax.name,))]))
    assert both.output_deviates is False and both.output_cosine > 0.999


def test_rerun_regenerates_one_spec_with_a_changed_fault():
    result = rerun(_spec(PER_TENSOR), lambda f: apply_remedy(f, {"weight_quant_granularity": "per_channel"}))
    assert result.op_deviates is False and result.output_deviates is False
    assert result.output_cosine == pytest.approx(0.998392, abs=1e-5)
