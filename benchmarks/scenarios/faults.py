"""Faults injected into the emulated target run, one class per way a deployment goes wrong.

A fault may change what the target is fed (:meth:`Fault.target_feeds`), change how one target op
computes (:meth:`Fault.run_op`), and says where the root cause is (:meth:`Fault.locate`) and which
build knobs a user would have set (:attr:`Fault.build_knobs`). ``kind`` is the true root-cause kind
written to ``label.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.scenarios.emulation import OpContext, OpOverride, TargetOp, TargetPlan, TargetRun

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

    def touches(self, op: TargetOp) -> bool:
        """Whether this fault changes how ``op`` computes (composite faults dispatch on it)."""
        return False

    def symptoms(self, plan: TargetPlan, run: TargetRun) -> list[Symptom]:
        """Other findings the scenario is built to show besides the root cause (mixtures)."""
        return []

    def harmless_parts(self) -> list[Fault]:
        """Faults of a mixture that must leave the network output intact when injected alone."""
        return []

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        """Problems with the fault's own mechanism in this run (empty when it is what it claims)."""
        return []

    def fixed(self) -> Fault | None:
        """The same deployment with the root cause fixed (per-channel instead of per-tensor...), when
        the label claims a fix: the generator checks that the labelled op then agrees."""
        return None


@dataclass(frozen=True)
class Symptom:
    """A finding a mixture scenario shows besides its root cause.

    ``relation``: ``"explained"`` when the root cause causes it (it comes after the root cause and
    must be reported as a consequence), ``"harmless"`` when it is an earlier, independent deviation
    the network recovers from (it must not be taken for the root cause).
    """

    kind: str
    op: str
    relation: str


@dataclass
class InputFault(Fault):
    """The target is fed a differently pre-processed input (wrong crop, flip, channel order, scale...).

    ``then_overflows``: the input's scale error makes a later FP16 op overflow (a mixture whose
    overflow is explained by the input).
    """

    input_name: str = ""
    make_input: Callable[[torch.Tensor], torch.Tensor] | None = None
    then_overflows: bool = False

    def target_feeds(self, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        changed = dict(feeds)
        changed[self.input_name] = self.make_input(feeds[self.input_name]).contiguous()
        return changed

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op(self.input_name).name

    def symptoms(self, plan: TargetPlan, run: TargetRun) -> list[Symptom]:
        if not self.then_overflows:
            return []
        return [Symptom("fp16_overflow", first_overflow(plan, run), "explained")]


@dataclass
class OpFault(Fault):
    """One golden op computes differently on the target (its fused target op is the culprit)."""

    golden_op: str = ""
    override: OpOverride | None = None

    def run_op(self, context: OpContext) -> torch.Tensor:
        if self.touches(context.op):
            return context.run(overrides={self.golden_op: self.override})
        return context.run()

    def touches(self, op: TargetOp) -> bool:
        return self.golden_op in op.golden_ops

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op_containing(self.golden_op).name


@dataclass
class OutputFault(Fault):
    """The target op holding ``golden_op`` post-processes its result (e.g. saturates it)."""

    golden_op: str = ""
    post: Callable[[torch.Tensor], torch.Tensor] | None = None

    def run_op(self, context: OpContext) -> torch.Tensor:
        out = context.run()
        return self.post(out) if self.touches(context.op) else out

    def touches(self, op: TargetOp) -> bool:
        return self.golden_op in op.golden_ops

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return plan.op_containing(self.golden_op).name


@dataclass
class WeightQuantFault(OpFault):
    """The op holding ``golden_op`` computes ``x @ W`` with ``W`` quantised to int8 (weight-only).

    ``weight`` is the float32 projection (output channels on ``channel_axis``); ``per_tensor``
    chooses one scale for the whole tensor instead of one per output channel.
    """

    weight: torch.Tensor | None = None
    per_tensor: bool = True
    channel_axis: int = -1

    def __post_init__(self) -> None:
        quantised = int8_weights(self.weight.detach(), self.per_tensor, self.channel_axis)

        def override(op, args, module) -> torch.Tensor:
            return args[0] @ quantised
        self.override = override

    def fixed(self) -> Fault | None:
        return replace(self, per_tensor=False) if self.per_tensor else None


@dataclass
class InputQuantFault(Fault):
    """The ops holding ``golden_ops`` quantise activation input ``slot`` to int8 before computing.

    The range is static, as a post-training calibration fixes it: ``high`` (and ``low``, used only
    when asymmetric) is what the calibration found. Symmetric: scale = max(|low|, |high|) / 127,
    zero point 0, so a tensor that is never negative uses only the 128 non-negative codes.
    The first op in execution order is the root cause (where error enters).
    """

    golden_ops: tuple[str, ...] = ()
    slot: int = 0
    symmetric: bool = True
    low: float = 0.0
    high: float = 1.0

    def run_op(self, context: OpContext) -> torch.Tensor:
        if not self.touches(context.op):
            return context.run()
        inputs = list(context.inputs)
        inputs[self.slot] = fake_quant_activation(inputs[self.slot], self.symmetric, self.low, self.high)
        return context.run(inputs=inputs)

    def touches(self, op: TargetOp) -> bool:
        return any(g in op.golden_ops for g in self.golden_ops)

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return next(op.name for op in plan.ops if op.role == "compute" and self.touches(op))

    def fixed(self) -> Fault | None:
        return replace(self, symmetric=False) if self.symmetric else None

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        """Symmetric quantisation is only wasteful on one-sided data: check the input is."""
        problems = []
        for op in plan.ops:
            if op.role == "compute" and self.touches(op) and self.symmetric:
                low = float(np.min(run.inputs[op.name][self.slot].value))
                if low < 0:
                    problems.append(f"{op.name}: quantised input is not one-sided (min {low:g})")
        return problems


@dataclass
class OverflowFault(Fault):
    """No injected computation: the network's own large activations overflow float16.

    The culprit is the first target op whose inputs are finite and below 65504 but whose output is
    not; ``expected_type`` guards that it is the op the scenario was built around.

    ``saturate``: the device runs in saturation mode (Ascend ``aclrtSetDeviceSatMode(
    ACL_RT_OVERFLOW_MODE_SATURATION)``, the default on Atlas training parts): an overflowing
    result is clamped to +-65504 instead of becoming inf, so the overflowing op's output stays
    finite and may still look right. ``then_golden_op``: the golden op of the later,
    problem-node-like symptom the overflow causes (a mixture).
    """

    expected_type: str = "Pow"
    saturate: bool = False
    then_golden_op: str | None = None

    def run_op(self, context: OpContext) -> torch.Tensor:
        out = context.run()
        if self.saturate and out.is_floating_point():
            return out.clamp(-FP16_MAX, FP16_MAX)
        return out

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        culprit = first_overflow(plan, run)
        op_type = plan.op(culprit).op_type
        if op_type != self.expected_type:
            raise AssertionError(f"first overflow at {culprit} ({op_type}), expected a {self.expected_type}")
        return culprit

    def symptoms(self, plan: TargetPlan, run: TargetRun) -> list[Symptom]:
        if self.then_golden_op is None:
            return []
        return [Symptom("problem_node", plan.op_containing(self.then_golden_op).name, "explained")]


@dataclass
class CompositeFault(Fault):
    """Several faults in one target run (a mixture): ``root`` is the one the label names; the
    others are symptoms of their own kind, located where they enter."""

    root: Fault | None = None
    others: tuple[tuple[Fault, str], ...] = ()       # (fault, relation) pairs

    @property
    def parts(self) -> list[Fault]:
        return [self.root, *(fault for fault, _ in self.others)]

    def target_feeds(self, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        for fault in self.parts:
            feeds = fault.target_feeds(feeds)
        return feeds

    def run_op(self, context: OpContext) -> torch.Tensor:
        chosen = [fault for fault in self.parts if fault.touches(context.op)]
        if len(chosen) > 1:
            raise AssertionError(f"two faults change {context.op.name}")
        return chosen[0].run_op(context) if chosen else context.run()

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return self.root.locate(plan, run)

    def symptoms(self, plan: TargetPlan, run: TargetRun) -> list[Symptom]:
        found = list(self.root.symptoms(plan, run))
        for fault, relation in self.others:
            found.append(Symptom(fault.kind, fault.locate(plan, run), relation))
        return found

    def harmless_parts(self) -> list[Fault]:
        return [fault for fault, relation in self.others if relation == "harmless"]

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        return [problem for fault in self.parts for problem in fault.verify(plan, run)]


def first_overflow(plan: TargetPlan, run: TargetRun) -> str:
    """The first compute op whose inputs are below 65504 in magnitude and whose output is not."""
    for op in plan.ops:
        if op.role != "compute":
            continue
        inputs_ok = all(_below_fp16_max(r.value) for r in run.inputs[op.name])
        if inputs_ok and not all(_below_fp16_max(r.value) for r in run.outputs[op.name]):
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


def int8_weights(weight: torch.Tensor, per_tensor: bool, channel_axis: int = 0) -> torch.Tensor:
    """Symmetric int8 quantise-dequantise of a weight tensor (what an int8 kernel multiplies by).

    Per-tensor: one scale, max|w| / 127, for the whole tensor. Per-channel: one scale per slice
    along ``channel_axis`` (the output channels).
    """
    if per_tensor:
        scale = weight.abs().max() / 127.0
    else:
        dims = [d for d in range(weight.dim()) if d != channel_axis % weight.dim()]
        scale = weight.abs().amax(dim=dims, keepdim=True) / 127.0
    scale = scale.clamp_min(1e-12)
    return torch.clamp(torch.round(weight / scale), -127, 127) * scale


def per_tensor_int8_weights(op, args, module) -> torch.Tensor:
    """Conv/Gemm with weights quantised to int8 with one scale for the whole tensor."""
    quantised = int8_weights(module.weight, per_tensor=True)
    if isinstance(module, torch.nn.Conv2d):
        return F.conv2d(args[0], quantised, module.bias, module.stride, module.padding,
                        module.dilation, module.groups)
    return F.linear(args[0], quantised, module.bias)


def fake_quant_activation(x: torch.Tensor, symmetric: bool, low: float | None = None,
                          high: float | None = None) -> torch.Tensor:
    """int8 quantise-dequantise of an activation.

    The range is the calibrated ``low``/``high`` when given, else the tensor's own min/max.
    Symmetric: scale = max(|low|, |high|) / 127, zero point 0 (half the codes are wasted on an
    all-positive tensor). Asymmetric: scale = (high - low) / 255 with a zero point.
    """
    low = float(x.min()) if low is None else low
    high = float(x.max()) if high is None else high
    if symmetric:
        scale = max(abs(low), abs(high), 1e-12) / 127.0
        return torch.clamp(torch.round(x / scale), -128, 127) * scale
    scale = max(high - low, 1e-12) / 255.0
    zero = round(-low / scale) - 128
    return (torch.clamp(torch.round(x / scale) + zero, -128, 127) - zero) * scale
