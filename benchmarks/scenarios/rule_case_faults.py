"""Faults made for the built-in rules' input cases (catalog.RULE_CASES), outside the scored corpus.

Each is built by how a deployment goes wrong, never by what the advisor should say about it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import torch

from benchmarks.scenarios import faults, inputs
from benchmarks.scenarios.cases import NetworkCase
from benchmarks.scenarios.emulation import OpContext, TargetPlan, TargetRun

#: The training transform's choices, one drawn per sample (torchvision's RandomChoice; TrivialAugmentWide
#: also applies exactly one operation per image, identity among them).
AUGMENTATIONS: tuple[str, ...] = ("identity", "hflip", "translate", "brightness")
PADDING = 3                  # RandomCrop(size, padding=3): the window moves up to 3 px, the border filled black
BRIGHTNESS = (0.6, 1.4)      # ColorJitter(brightness=0.4)


def augment(pixels: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, str]:
    """One raw sample (C, H, W, 0..255) through one augmentation drawn from ``generator``: (sample, name)."""
    choice = AUGMENTATIONS[int(torch.randint(len(AUGMENTATIONS), (1,), generator=generator))]
    if choice == "hflip":
        return pixels.flip(-1), choice
    if choice == "translate":
        top, left = (int(v) for v in torch.randint(2 * PADDING + 1, (2,), generator=generator))
        padded = torch.nn.functional.pad(pixels, (PADDING,) * 4)
        height, width = pixels.shape[-2:]
        return padded[:, top:top + height, left:left + width], f"translate({PADDING - top},{PADDING - left})"
    if choice == "brightness":
        low, high = BRIGHTNESS
        factor = low + (high - low) * float(torch.rand((1,), generator=generator))
        return (pixels * factor).clamp(0, 255), f"brightness({factor:.2f})"
    return pixels, choice


def train_transform_left_on(seed: int) -> Callable[[NetworkCase], faults.Fault]:
    """The target's data loader still runs the training transform: every sample of the batch goes through one
    augmentation drawn at random (seeded), before the usual normalisation."""
    def make(case: NetworkCase) -> faults.Fault:
        def draws() -> tuple[torch.Tensor, list[str]]:
            generator = torch.Generator().manual_seed(seed)
            samples, names = zip(*(augment(sample, generator) for sample in case.raw), strict=True)
            return torch.stack(samples), list(names)

        return faults.InputFault(
            kind="random_preprocessing", input_name="images",
            make_input=lambda _: inputs.mtcnn_normalise(draws()[0]),
            description=("the target's data loader keeps the training transform (one of identity, horizontal flip, "
                         f"RandomCrop with padding {PADDING}, ColorJitter brightness {BRIGHTNESS[0]:g}-"
                         f"{BRIGHTNESS[1]:g} drawn per sample, seed {seed}) where the golden run uses the evaluation "
                         f"transform: the {len(case.raw)} samples became {', '.join(draws()[1])}"))
    return make


def batch_flipped(case: NetworkCase) -> faults.Fault:
    """A deterministic pre-processing mistake: every sample of the batch mirrored alike."""
    return faults.InputFault(
        kind="input_mismatch", input_name="images", make_input=lambda x: x.flip(-1),
        description=f"the target's pre-processing mirrors every one of the {len(case.raw)} candidate windows")


def int8_attention_softmax(blocks: tuple[int, ...]) -> Callable[[NetworkCase], faults.Fault]:
    """A hand-written int8 layer list that names the attention Softmax of ``blocks``: its input (the scaled
    attention logits) is quantised to symmetric int8 with min/max calibration before the exponentials."""
    def make(case: NetworkCase) -> faults.Fault:
        from benchmarks.scenarios.catalog import _attention_ops

        softmaxes = tuple(_attention_ops(case, block)[1] for block in blocks)
        return faults.SensitiveQuantFault(
            kind="quant_sensitive_op", golden_ops=softmaxes, slot=0, symmetric=True, calibration="minmax",
            description=(f"the build's hand-written int8 layer list names the attention {', '.join(softmaxes)}: "
                         "their input, the scaled attention logits, is quantised to symmetric int8 with min/max "
                         "calibration. The logits span a wide range (attention logit growth), so one int8 step is "
                         "a large change of a logit and of its exponential; toolchains keep Softmax in float"),
            build_knobs=faults.magicmind_int8(softmaxes, {"algorithm": "minmax"}, activation_quant_algo="symmetric"))
    return make


@dataclass
class Int8KernelFault(faults.InputQuantFault):
    """One layer computed by an int8 kernel as its build config says, in integer arithmetic: per-channel symmetric
    int8 weights, symmetric int8 activations at their calibrated range, int32 dot products, then each output
    channel rescaled by its activation and weight scales. ``one_scale``: a backend bug, the kernel rescales every
    output channel with channel 0's weight scale (it handles one scale per tensor and reads the first of the
    per-channel list). The framework's int8 simulation of the same settings has no such bug."""

    weight: torch.Tensor | None = None
    one_scale: bool = True

    fix_settings: ClassVar[dict[str, Any]] = {}

    def run_op(self, context: OpContext) -> torch.Tensor:
        if not self.touches(context.op):
            return context.run()
        low, high = self.range_for(context)
        x_scale = max(abs(low), abs(high), 1e-12) / 127.0
        x_codes = torch.clamp(torch.round(context.inputs[self.slot].double() / x_scale), -128, 127)
        weight = self.weight.detach().double()
        w_scale = weight.abs().amax(dim=0).clamp(min=1e-12) / 127.0           # per output channel (columns)
        accumulated = x_codes @ torch.round(weight / w_scale)
        return (accumulated * x_scale * (w_scale[0] if self.one_scale else w_scale)).float()

    def locate(self, plan: TargetPlan, run: TargetRun) -> str | None:
        return None if self.kind == "consistent" else super().locate(plan, run)

    def fixed(self) -> faults.Fault | None:
        return None

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        return []


def _down_projection(case: NetworkCase, block: int) -> tuple[str, torch.Tensor]:
    """(golden MatMul, weight) of block ``block``'s MLP down-projection."""
    from benchmarks.scenarios.catalog import _projection_op  # the catalog imports this module

    parameter = f"blocks.{block}.w2"
    return _projection_op(case, parameter), case.module.get_parameter(parameter)


def int8_down_projection(block: int, one_scale: bool) -> Callable[[NetworkCase], faults.Fault]:
    """Block ``block``'s MLP down-projection built in int8 (per-channel weights, min/max calibrated symmetric
    activations), its kernel rescaling with one scale (a backend bug) or right."""
    def make(case: NetworkCase) -> faults.Fault:
        op, weight = _down_projection(case, block)
        settings = (f"block {block}'s MLP down-projection ({op}) is built in int8 as its config says (per-channel "
                    "symmetric weights, symmetric activations calibrated at min/max: settings under which the int8 "
                    "layer agrees with the float one)")
        bug = ("; the backend's int8 kernel rescales every output channel's int32 sums with the first channel's "
               "weight scale (it supports one scale per tensor and reads the first of the per-channel list): a "
               "kernel bug, not a setting, so no int8 knob of the build restores the layer")
        return Int8KernelFault(
            kind="quant_backend_issue" if one_scale else "consistent", golden_ops=(op,), slot=0, symmetric=True,
            calibration="minmax", weight=weight, one_scale=one_scale,
            description=settings + (bug if one_scale else ", and its kernel computes them right"),
            build_knobs=faults.magicmind_int8([op], {"algorithm": "minmax"}, weight_quant_granularity="per_channel",
                                              activation_quant_algo="symmetric"))
    return make


@dataclass
class PerTensorAndClippedFault(faults.CalibrationFault):
    """Two int8 mistakes in one layer: its weights quantised with one scale for the whole tensor (per-tensor)
    while a few channels hold super weights, and its input calibrated at a percentile that clips the largest
    activations (``calibration`` minmax: the first mistake alone). The fix is both: per-channel and min/max."""

    weight: torch.Tensor | None = None
    per_tensor: bool = True

    fix_settings: ClassVar[dict[str, Any]] = {"weight_quant_granularity": "per_channel",
                                              "activation_calibration": "minmax"}

    def run_op(self, context: OpContext) -> torch.Tensor:
        if not self.touches(context.op):
            return context.run()
        low, high = self.range_for(context)
        x = faults.fake_quant_activation(context.inputs[self.slot], self.symmetric, low, high)
        return x @ faults.int8_weights(self.weight.detach(), self.per_tensor, -1, True)

    def remedied(self, settings: dict[str, Any]) -> faults.Fault:
        fault = super().remedied(settings)
        granularity = settings.get("weight_quant_granularity")
        if granularity is not None and (granularity == "per_tensor") != fault.per_tensor:
            fault = replace(fault, per_tensor=granularity == "per_tensor")
        return fault

    def verify(self, plan: TargetPlan, run: TargetRun) -> list[str]:
        """A percentile calibration clips part of the input (min/max clips nothing)."""
        return super().verify(plan, run) if self.calibration != "minmax" else []


def per_tensor_and_clipped(block: int, percentile: float | None) -> Callable[[NetworkCase], faults.Fault]:
    """Block ``block``'s MLP down-projection (two channels of super weights) built in int8 with per-tensor weights
    and its input calibrated at ``percentile`` (None: at min/max, the per-tensor mistake alone)."""
    def make(case: NetworkCase) -> faults.Fault:
        op, weight = _down_projection(case, block)
        weights = (f"block {block}'s MLP down-projection ({op}) is built in int8 with its weights quantised per "
                   "tensor (one scale, set by the two channels that hold super weights: the other channels keep a "
                   "few int8 steps)")
        clipped = (f", and its input calibrated at the {percentile:g}th percentile of |x| (the largest activations "
                   "clipped): two mistakes at one layer. The clipping alone is mild at the layer, but with the "
                   "weights fixed it still breaks the output: the layer needs per-channel weights and min/max "
                   "calibration") if percentile is not None else ", its input calibrated at min/max"
        calibration = {"algorithm": "percentile", "percentile": percentile} if percentile is not None else \
            {"algorithm": "minmax"}
        return PerTensorAndClippedFault(
            kind="quant_per_tensor", golden_ops=(op,), slot=0, symmetric=True,
            calibration="percentile" if percentile is not None else "minmax", percentile=percentile or 99.99,
            weight=weight, description=weights + clipped,
            build_knobs=faults.magicmind_int8([op], calibration, weight_quant_granularity="per_tensor",
                                              activation_quant_algo="symmetric"))
    return make
