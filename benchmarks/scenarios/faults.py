"""Faults injected into the emulated target run, one class per way a deployment goes wrong.

A fault may change what the target is fed (:meth:`Fault.target_feeds`), change how one target op
computes (:meth:`Fault.run_op`), and says where the root cause is (:meth:`Fault.locate`) and which
build knobs a user would have set (:attr:`Fault.build_knobs`). ``kind`` is the true root-cause kind
written to ``label.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.scenarios.emulation import OpContext, OpOverride, TargetPlan, TargetRun

FP16_MAX = 65504.0


@dataclass
class Fault:
    """No fault: the target differs from the golden run only by its precision policy."""

    kind: str = "consistent"
    description: str = "no fault: only the precision policy differs from the golden run"
    build_knobs: dict = field(default_factory=dict)

    def target_feeds(self, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return feeds

    def run_op(self, context: OpContext) -> torch.Tensor:
        return context.run()

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        """The target op where the fault enters (None for a consistent run)."""
        return None


@dataclass
class InputFault(Fault):
    """The target is fed a differently pre-processed input (wrong crop, flip, channel order...)."""

    input_name: str = ""
    make_input: Callable[[torch.Tensor], torch.Tensor] | None = None

    def target_feeds(self, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        changed = dict(feeds)
        changed[self.input_name] = self.make_input(feeds[self.input_name]).contiguous()
        return changed

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op(self.input_name).name


@dataclass
class OpFault(Fault):
    """One golden op computes differently on the target (its fused target op is the culprit)."""

    golden_op: str = ""
    override: OpOverride | None = None

    def run_op(self, context: OpContext) -> torch.Tensor:
        if self.golden_op in context.op.golden_ops:
            return context.run(overrides={self.golden_op: self.override})
        return context.run()

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op_containing(self.golden_op).name


@dataclass
class OutputFault(Fault):
    """The target op holding ``golden_op`` post-processes its result (e.g. saturates it)."""

    golden_op: str = ""
    post: Callable[[torch.Tensor], torch.Tensor] | None = None

    def run_op(self, context: OpContext) -> torch.Tensor:
        out = context.run()
        return self.post(out) if self.golden_op in context.op.golden_ops else out

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op_containing(self.golden_op).name


@dataclass
class InputQuantFault(Fault):
    """The op holding ``golden_op`` quantises its activation input to int8 before computing."""

    golden_op: str = ""
    symmetric: bool = True

    def run_op(self, context: OpContext) -> torch.Tensor:
        if self.golden_op not in context.op.golden_ops:
            return context.run()
        quantised = [fake_quant_activation(context.inputs[0], self.symmetric), *context.inputs[1:]]
        return context.run(inputs=quantised)

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op_containing(self.golden_op).name


@dataclass
class OverflowFault(Fault):
    """No injected computation: the network's own large activations overflow float16.

    The culprit is the first target op whose inputs are finite and below 65504 but whose output is
    not; ``expected_type`` guards that it is the op the scenario was built around.
    """

    expected_type: str = "Pow"

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        for op in plan.ops:
            if op.role != "compute":
                continue
            inputs_ok = all(_below_fp16_max(r.value) for r in run.inputs[op.name])
            if inputs_ok and not all(_below_fp16_max(r.value) for r in run.outputs[op.name]):
                if op.op_type != self.expected_type:
                    raise AssertionError(f"first overflow at {op.name} ({op.op_type}), "
                                         f"expected a {self.expected_type}")
                return op.name
        raise AssertionError("no op overflowed float16")


def _below_fp16_max(value: np.ndarray) -> bool:
    magnitude = np.abs(value.astype(np.float64))
    return bool(np.all(magnitude[~np.isnan(magnitude)] < FP16_MAX))


# --- op overrides ---------------------------------------------------------------------------

def bn_variance_not_rooted(op, args, module) -> torch.Tensor:
    """BatchNorm folded with the variance where the standard deviation belongs."""
    shape = (1, -1, 1, 1)
    scale = module.weight / (module.running_var + module.eps)
    return (args[0] - module.running_mean.view(shape)) * scale.view(shape) + module.bias.view(shape)


def softmax_over(axis: int) -> OpOverride:
    """Softmax computed over ``axis`` instead of the model's axis."""
    def override(op, args, module) -> torch.Tensor:
        return torch.softmax(args[0], dim=axis)
    return override


def prelu_slopes_reversed(op, args, module) -> torch.Tensor:
    """PReLU whose per-channel slopes were laid out in reverse channel order."""
    return F.prelu(args[0], module.weight.flip(0))


def per_tensor_int8_weights(op, args, module) -> torch.Tensor:
    """Conv/Gemm with weights quantised to int8 with one scale for the whole tensor."""
    weight = module.weight
    scale = weight.abs().max() / 127.0
    quantised = torch.clamp(torch.round(weight / scale), -127, 127) * scale
    if isinstance(module, torch.nn.Conv2d):
        return F.conv2d(args[0], quantised, module.bias, module.stride, module.padding,
                        module.dilation, module.groups)
    return F.linear(args[0], quantised, module.bias)


def fake_quant_activation(x: torch.Tensor, symmetric: bool) -> torch.Tensor:
    """int8 quantise-dequantise of an activation with min/max calibration.

    Symmetric: scale = max|x| / 127, zero point 0 (half the codes are wasted on an all-positive
    tensor). Asymmetric: scale = (max - min) / 255 with a zero point.
    """
    if symmetric:
        scale = x.abs().max().clamp_min(1e-12) / 127.0
        return torch.clamp(torch.round(x / scale), -128, 127) * scale
    low, high = x.min(), x.max()
    scale = (high - low).clamp_min(1e-12) / 255.0
    zero = torch.round(-low / scale) - 128
    return (torch.clamp(torch.round(x / scale) + zero, -128, 127) - zero) * scale
