"""Faults made for the built-in rules' input cases (catalog.RULE_CASES), outside the scored corpus.

Each is built by how a deployment goes wrong, never by what the advisor should say about it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from benchmarks.scenarios import faults, inputs
from benchmarks.scenarios.cases import NetworkCase

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
            build_knobs={"tool": "magicmind", "precision_config": {
                "precision_mode": "qint8_mixed_float16", "activation_quant_algo": "symmetric"},
                "quantized_layers": list(softmaxes), "calibration": {"algorithm": "minmax"}})
    return make
