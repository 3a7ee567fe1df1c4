"""Faults injected into the emulated target run, one class per way a deployment goes wrong.

A fault may change what the target is fed (:meth:`Fault.target_feeds`), change how one target op
computes (:meth:`Fault.run_op`), and says where the root cause is (:meth:`Fault.locate`) and which
build knobs a user would have set (:attr:`Fault.build_knobs`). ``kind`` is the true root-cause kind
written to ``label.json``.

Remedies: :func:`apply_remedy` turns a fault into the same deployment rebuilt with an advisor
remedy step (``report.json`` ``remedy.steps[i]``: generic build ``settings`` and ops to ``keep`` out
of the quantised / FP16 path). Each fault class applies the settings it involves
(:meth:`Fault.remedied`); every fault honours ``keep`` (:attr:`Fault.keep`). :meth:`Fault.fixed`,
the label's counterfactual, is the particular remedy :attr:`Fault.fix_settings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.scenarios.emulation import FP16_MAX, OpContext, OpOverride, TargetOp, TargetPlan, TargetRun

#: The generic remedy knobs (report.json ``remedy.steps[].settings``) and the values they take.
#: ``activation_percentile`` is a number (0-100]; the others are listed.
REMEDY_KNOBS: dict[str, tuple[Any, ...] | None] = {
    "weight_quant_granularity": ("per_tensor", "per_channel"),
    "weight_quant_symmetric": (True, False),
    "activation_quant_algo": ("symmetric", "asymmetric"),
    "activation_calibration": ("minmax", "percentile", "kl", "mse"),
    "activation_percentile": None,
}
KEEP_PRECISIONS = ("float16", "float32")


@dataclass(frozen=True)
class Keep:
    """One op a remedy keeps out of the quantised / FP16 path (a ``remedy.steps[].keep`` item).

    It matches a target op by name (``op``) or by any of the original model's op names it was
    built from (``golden``). ``precision``: ``float16`` runs the op in the run's normal policy
    without quantisation; ``float32`` also computes and stores it unrounded (the emulator's
    per-op precision, :meth:`Emulator.op_precision`).
    """

    op: str | None = None
    golden: tuple[str, ...] = ()
    precision: str = "float32"

    def __post_init__(self) -> None:
        if self.precision not in KEEP_PRECISIONS:
            raise ValueError(f"keep precision must be one of {KEEP_PRECISIONS}, not {self.precision!r}")

    @classmethod
    def from_report(cls, item: Mapping[str, Any]) -> Keep:
        """From a report.json keep item: ``{"op", "golden", "op_type", "precision", "finding"}``."""
        return cls(op=item.get("op"), golden=tuple(item.get("golden") or ()),
                   precision=item.get("precision") or "float32")

    def matches(self, op: TargetOp) -> bool:
        return op.name == self.op or any(g in op.golden_ops for g in self.golden)


@dataclass
class Fault:
    """No fault: the target differs from the golden run only by its precision policy."""

    kind: str = "consistent"
    description: str = "no fault: only the precision policy differs from the golden run"
    build_knobs: dict = field(default_factory=dict)
    keep: tuple[Keep, ...] = ()             # ops a remedy keeps out of quantisation / FP16

    #: The remedy settings that fix this fault's root cause (what the label claims as its fix).
    fix_settings: ClassVar[dict[str, Any]] = {}

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

    def hidden_parts(self) -> list[Fault]:
        """Faults of a mixture the root cause hides in the comparison (their inputs already deviate), each
        of which, injected alone, must show where it enters and break the network output."""
        return []

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        """Problems with the fault's own mechanism in this run (empty when it is what it claims)."""
        return []

    def folded_normalization(self) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
        """Input name -> (mean, std) the build folds into the model (MagicMind
        insert_bn_before_firstnode): the target graph then normalises that input in an inserted op."""
        return {}

    def declared_nhwc(self) -> tuple[str, ...]:
        """Inputs the build declares NHWC (MagicMind convert_input_layout NCHW -> NHWC): the target graph then
        transposes that input to the model's NCHW in the TransData it inserts after it."""
        return ()

    def nhwc_outputs(self) -> tuple[int, ...]:
        """Positions of the network outputs the build hands over NHWC (the TransData it inserts before the
        output transposes them from the model's NCHW)."""
        return ()

    def saturates(self) -> bool:
        """The device runs in saturation mode: FP16 overflow clamps at +-65504 instead of giving
        inf (the emulator's cast of a float32 tensor into FP16 clamps too)."""
        return False

    def fixed(self) -> Fault | None:
        """The same deployment with the root cause fixed (:attr:`fix_settings`: per-channel instead
        of per-tensor...), when the label claims a fix and the fault is not fixed already: the
        generator checks that the labelled op then agrees."""
        if not self.fix_settings:
            return None
        fixed = self.remedied(self.fix_settings)
        return None if fixed is self else fixed

    # --- remedies ---------------------------------------------------------------------------

    def remedied(self, settings: Mapping[str, Any]) -> Fault:
        """This fault rebuilt with the generic ``settings`` (knob -> value); ``self`` when none of
        them changes it (settings a fault does not involve leave it as it is)."""
        return self

    def with_keep(self, keep: Iterable[Keep]) -> Fault:
        """This fault with more ops kept out of the quantised / FP16 path."""
        keep = tuple(keep)
        return replace(self, keep=self.keep + keep) if keep else self

    def kept(self, op: TargetOp) -> Keep | None:
        """The keep item matching ``op`` (the float32 one when several do)."""
        matching = [k for k in self.keep if k.matches(op)]
        return max(matching, key=lambda k: k.precision == "float32") if matching else None

    def kept_precision(self, op: TargetOp) -> str | None:
        """``float32``/``float16`` when a remedy keeps ``op``, else None (the policy)."""
        kept = self.kept(op)
        return kept.precision if kept is not None else None


@dataclass(frozen=True)
class Symptom:
    """A finding a mixture scenario shows besides its root cause.

    ``relation``: ``"explained"`` when the root cause causes it (it comes after the root cause and
    must be reported as a consequence), ``"harmless"`` when it is an earlier, independent deviation
    the network recovers from (it must not be taken for the root cause), ``"hidden"`` when it is a
    second, independent fault after the root cause, which the root cause's error hides in the
    comparison (its inputs already deviate) but which breaks the output on its own.
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
    folded: tuple[tuple[float, ...], tuple[float, ...]] | None = None   # (mean, std) inserted after the input
    nhwc: bool = False                      # the build declares the input NHWC (a transposing TransData after it)

    def folded_normalization(self) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
        return {self.input_name: self.folded} if self.folded else {}

    def declared_nhwc(self) -> tuple[str, ...]:
        return (self.input_name,) if self.nhwc else ()

    def target_feeds(self, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        changed = dict(feeds)
        changed[self.input_name] = self.make_input(feeds[self.input_name]).contiguous()
        return changed

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return None if self.kind == "consistent" else plan.op(self.input_name).name

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
class OutputLayoutFault(Fault):
    """The build hands network output ``position`` over NHWC while the golden output is NCHW: every op agrees,
    the output as handed over does not (the op that transposes it has no golden counterpart)."""

    position: int = 0

    def nhwc_outputs(self) -> tuple[int, ...]:
        return (self.position,)

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        tensor = plan.outputs[self.position]
        return next(op.name for op in plan.ops if op.output == tensor and op.role == "compute")


@dataclass
class WeightQuantFault(OpFault):
    """The op holding ``golden_op`` computes ``x @ W`` with ``W`` quantised to int8 (weight-only).

    ``weight`` is the float32 projection (output channels on ``channel_axis``); ``per_tensor``
    chooses one scale for the whole tensor instead of one per output channel.
    """

    weight: torch.Tensor | None = None
    per_tensor: bool = True
    channel_axis: int = -1
    symmetric: bool = True

    fix_settings: ClassVar[dict[str, Any]] = {"weight_quant_granularity": "per_channel"}

    def __post_init__(self) -> None:
        quantised = int8_weights(self.weight.detach(), self.per_tensor, self.channel_axis, self.symmetric)

        def override(op, args, module) -> torch.Tensor:
            return args[0] @ quantised
        self.override = override

    def touches(self, op: TargetOp) -> bool:
        """A kept op runs with its float weights (no int8 kernel)."""
        return super().touches(op) and self.kept(op) is None

    def remedied(self, settings: Mapping[str, Any]) -> Fault:
        granularity = settings.get("weight_quant_granularity")
        per_tensor = self.per_tensor if granularity is None else granularity == "per_tensor"
        symmetric = settings.get("weight_quant_symmetric", self.symmetric)
        if (per_tensor, symmetric) == (self.per_tensor, self.symmetric):
            return self
        return replace(self, per_tensor=per_tensor, symmetric=bool(symmetric))


@dataclass
class InputQuantFault(Fault):
    """The ops holding ``golden_ops`` quantise activation input ``slot`` to int8 before computing.

    The range is static, as a post-training calibration fixes it. ``calibration``: ``fixed`` (the
    default) uses ``high`` (and ``low``, used only when asymmetric), a range set by hand
    (``custom_ranges``); ``minmax``, ``percentile`` (at ``percentile``), ``kl`` and ``mse`` choose it
    from the op's input on the calibration data (:attr:`OpContext.calibration`, the golden
    activation), see :func:`calibrated_range`. Symmetric: scale = max(|low|, |high|) / 127, zero
    point 0, so a tensor that is never negative uses only the 128 non-negative codes.
    The first op in execution order is the root cause (where error enters).
    """

    golden_ops: tuple[str, ...] = ()
    slot: int = 0
    symmetric: bool = True
    low: float = 0.0
    high: float = 1.0
    calibration: str = "fixed"
    percentile: float = 99.99
    _ranges: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    fix_settings: ClassVar[dict[str, Any]] = {"activation_quant_algo": "asymmetric"}

    def run_op(self, context: OpContext) -> torch.Tensor:
        if not self.touches(context.op):
            return context.run()
        inputs = list(context.inputs)
        low, high = self.range_for(context)
        inputs[self.slot] = fake_quant_activation(inputs[self.slot], self.symmetric, low, high)
        return context.run(inputs=inputs)

    def range_for(self, context: OpContext) -> tuple[float, float]:
        """The calibrated (low, high) of the quantised input of ``context.op``."""
        if self.calibration == "fixed":
            return self.low, self.high
        if context.op.name not in self._ranges:
            if context.calibration is None:
                raise ValueError(f"{self.calibration} calibration needs the calibration activations "
                                 "(Emulator(..., calibration=golden))")
            self._ranges[context.op.name] = calibrated_range(
                context.calibration[self.slot], self.calibration, self.symmetric, self.percentile)
        return self._ranges[context.op.name]

    def touches(self, op: TargetOp) -> bool:
        return any(g in op.golden_ops for g in self.golden_ops) and self.kept(op) is None

    def remedied(self, settings: Mapping[str, Any]) -> Fault:
        algo = settings.get("activation_quant_algo")
        changes: dict[str, Any] = {}
        if algo is not None and (algo == "symmetric") != self.symmetric:
            changes["symmetric"] = algo == "symmetric"
        calibration = settings.get("activation_calibration")
        if calibration is not None and calibration != self.calibration:
            changes["calibration"] = calibration
        percentile = settings.get("activation_percentile")
        if percentile is not None and float(percentile) != self.percentile:
            changes["percentile"] = float(percentile)
        return replace(self, **changes) if changes else self

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
class CalibrationFault(InputQuantFault):
    """:class:`InputQuantFault` whose range a calibration chose badly: too narrow a percentile clips
    the input's largest values. The fix is min/max calibration (keep the whole range)."""

    fix_settings: ClassVar[dict[str, Any]] = {"activation_calibration": "minmax"}

    def fixed(self) -> Fault | None:
        return Fault.fixed(self)

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        """A calibration fault clips: check that part of the quantised input lies outside its range."""
        problems = []
        for op in plan.ops:
            if op.role == "compute" and self.touches(op):
                value = run.inputs[op.name][self.slot].value
                low, high = self._ranges.get(op.name, (self.low, self.high))
                clipped = float(np.mean((value < low) | (value > high)))
                if clipped < 0.001:
                    problems.append(f"{op.name}: the calibrated range clips only {clipped:.4%} of the input")
        return problems


@dataclass
class SensitiveQuantFault(InputQuantFault):
    """:class:`InputQuantFault` on an op int8 handles badly (a Softmax, a normalisation): no int8 setting is
    its fix; keeping the op in float is."""

    fix_settings: ClassVar[dict[str, Any]] = {}

    def fixed(self) -> Fault | None:
        return self.with_keep([Keep(golden=self.golden_ops, precision="float16")])

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        """Its input may have either sign (logits): nothing to check beyond the labelled signature."""
        return []


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
        # Saturation mode clamps an FP16 result; an op kept in float32 does not overflow.
        if self.saturate and out.is_floating_point() and context.precision.torch_dtype == torch.float16:
            return out.clamp(-FP16_MAX, FP16_MAX)
        return out

    def saturates(self) -> bool:
        return self.saturate

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

    def hidden_parts(self) -> list[Fault]:
        return [fault for fault, relation in self.others if relation == "hidden"]

    def saturates(self) -> bool:
        return any(fault.saturates() for fault in self.parts)

    def remedied(self, settings: Mapping[str, Any]) -> Fault:
        root = self.root.remedied(settings)
        others = tuple((fault.remedied(settings), relation) for fault, relation in self.others)
        if root is self.root and all(new is old for (new, _), (old, _) in zip(others, self.others, strict=True)):
            return self
        return replace(self, root=root, others=others)

    def with_keep(self, keep: Iterable[Keep]) -> Fault:
        keep = tuple(keep)
        if not keep:
            return self
        return replace(self, keep=self.keep + keep, root=self.root.with_keep(keep),
                       others=tuple((fault.with_keep(keep), relation) for fault, relation in self.others))

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


def epsilon_added(eps: float) -> OpOverride:
    """A LayerNorm's ``variance + eps`` computed with another epsilon (the attribute read wrongly)."""
    def override(op, args, module) -> torch.Tensor:
        return args[0] + eps
    return override


def prelu_slopes_reversed(op, args, module) -> torch.Tensor:
    """PReLU whose per-channel slopes were laid out in reverse channel order."""
    return F.prelu(args[0], module.weight.flip(0))


def int8_weights(weight: torch.Tensor, per_tensor: bool, channel_axis: int = 0,
                 symmetric: bool = True) -> torch.Tensor:
    """int8 quantise-dequantise of a weight tensor (what an int8 kernel multiplies by).

    Per-tensor: one scale for the whole tensor. Per-channel: one scale per slice along
    ``channel_axis`` (the output channels). Symmetric: scale max|w| / 127, codes -127..127.
    Asymmetric: scale (max - min) / 255 with a zero point, codes -128..127.
    """
    if per_tensor:
        dims = list(range(weight.dim()))
    else:
        dims = [d for d in range(weight.dim()) if d != channel_axis % weight.dim()]
    if symmetric:
        scale = (weight.abs().amax(dim=dims, keepdim=True) / 127.0).clamp_min(1e-12)
        return torch.clamp(torch.round(weight / scale), -127, 127) * scale
    low = weight.amin(dim=dims, keepdim=True).clamp_max(0.0)
    high = weight.amax(dim=dims, keepdim=True).clamp_min(0.0)
    scale = ((high - low) / 255.0).clamp_min(1e-12)
    zero = torch.round(-low / scale) - 128
    return (torch.clamp(torch.round(weight / scale) + zero, -128, 127) - zero) * scale


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


# --- calibration --------------------------------------------------------------------------

def calibrated_range(values: torch.Tensor, method: str, symmetric: bool,
                     percentile: float = 99.99) -> tuple[float, float]:
    """The (low, high) range a post-training calibration picks for an activation's int8 codes.

    ``minmax``: the observed min and max. ``percentile``: the ``percentile``-th percentile of |x|
    (symmetric) or the (100 - p)-th and p-th percentiles (asymmetric), clipping rare outliers.
    ``kl``: TensorRT's entropy calibration: the clipping threshold of |x| whose 128-level
    quantised histogram is closest (Kullback-Leibler) to the 2048-bin original. ``mse``: the
    clipping (a fraction of the min/max range) with the least mean squared quantisation error.
    """
    x = values.detach().to(torch.float64).flatten().numpy()
    x = x[np.isfinite(x)]
    low, high = (float(x.min()), float(x.max())) if len(x) else (0.0, 0.0)
    if method == "minmax":
        return low, high
    if method == "percentile":
        if symmetric:
            amax = float(np.percentile(np.abs(x), percentile))
            return -amax, amax
        return float(np.percentile(x, 100.0 - percentile)), float(np.percentile(x, percentile))
    if method == "kl":
        threshold = _kl_threshold(np.abs(x))
        return max(low, -threshold), min(high, threshold)
    if method == "mse":
        return _mse_range(torch.from_numpy(x).to(torch.float32), symmetric, low, high)
    raise ValueError(f"unknown calibration method {method!r}; known: fixed, "
                     f"{', '.join(REMEDY_KNOBS['activation_calibration'])}")


def _kl_threshold(magnitudes: np.ndarray, bins: int = 2048, levels: int = 128) -> float:
    """TensorRT-style entropy calibration of |x| (returns the clipping threshold)."""
    amax = float(magnitudes.max()) if len(magnitudes) else 0.0
    if amax <= 0.0:
        return 0.0
    hist, edges = np.histogram(magnitudes, bins=bins, range=(0.0, amax))
    hist = hist.astype(np.float64)
    best, best_end = np.inf, bins
    for end in range(levels, bins + 1):
        kept = hist[:end]
        reference = kept.copy()
        reference[-1] += hist[end:].sum()             # what the clipping folds into the last bin
        # ``levels`` chunks as np.array_split makes them; each spreads its count over its used bins.
        small, extra = divmod(end, levels)
        sizes = np.full(levels, small)
        sizes[:extra] += 1
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        used = kept > 0
        sums = np.add.reduceat(kept, starts)
        counts = np.add.reduceat(used.astype(np.float64), starts)
        chunk = np.repeat(np.arange(levels), sizes)
        quantised = np.where(used, sums[chunk] / np.maximum(counts[chunk], 1.0), 0.0)
        p = reference / reference.sum()
        q = quantised / max(quantised.sum(), 1e-300)
        mask = p > 0
        divergence = float(np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-12))))
        if divergence < best:
            best, best_end = divergence, end
    return float(edges[best_end])


def _mse_range(x: torch.Tensor, symmetric: bool, low: float, high: float,
               steps: int = 100) -> tuple[float, float]:
    """The clipped range (a fraction f of [low, high]) with the least squared int8 error."""
    best, chosen = np.inf, (low, high)
    for fraction in np.linspace(1.0, 0.01, steps):
        lo, hi = low * fraction, high * fraction
        error = float(((fake_quant_activation(x, symmetric, lo, hi) - x) ** 2).mean())
        if error < best:
            best, chosen = error, (float(lo), float(hi))
    return chosen


# --- remedies -----------------------------------------------------------------------------

def magicmind_int8(layers: Iterable[str], calibration: Mapping[str, Any] | None = None,
                   **precision: Any) -> dict[str, Any]:
    """The build knobs of a MagicMind int8 build (``qint8_mixed_float16``) that quantises ``layers``, with its
    other ``precision`` settings and, when given, the ``calibration`` section."""
    knobs: dict[str, Any] = {"tool": "magicmind",
                             "precision_config": {"precision_mode": "qint8_mixed_float16", **precision},
                             "quantized_layers": list(layers)}
    if calibration is not None:
        knobs["calibration"] = dict(calibration)
    return knobs


def check_settings(settings: Mapping[str, Any]) -> list[str]:
    """The generic knobs in ``settings`` the emulation does not know (others are ignored by it).

    Raises ValueError on a known knob with a value it cannot take.
    """
    unknown = []
    for knob, value in settings.items():
        if knob not in REMEDY_KNOBS:
            unknown.append(knob)
            continue
        allowed = REMEDY_KNOBS[knob]
        if allowed is None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) <= 100:
                raise ValueError(f"remedy setting {knob}={value!r}: expected a number in (0, 100]")
        elif value not in allowed:
            raise ValueError(f"remedy setting {knob}={value!r}: expected one of {', '.join(map(str, allowed))}")
    return unknown


def apply_remedy(fault: Fault, settings: Mapping[str, Any] | None = None,
                 keep: Iterable[Keep | Mapping[str, Any]] = ()) -> Fault:
    """The deployment of ``fault`` rebuilt with a remedy step: ``settings`` (generic knob ->
    value, :data:`REMEDY_KNOBS`) and ``keep`` (:class:`Keep` items or report.json keep dicts).

    A fault applies the settings it involves (per-channel or asymmetric weights, the activation
    algorithm and calibration) and leaves the others alone; a kept op is not quantised, and runs
    in float32 when its precision says so. Knobs the emulation does not know are ignored (see
    :func:`check_settings`). The result is a new fault; ``fault`` is unchanged.
    """
    settings = dict(settings or {})
    check_settings(settings)
    keeps = tuple(k if isinstance(k, Keep) else Keep.from_report(k) for k in keep)
    return fault.remedied(settings).with_keep(keeps)
