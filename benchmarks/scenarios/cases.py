"""Network cases: a real network, the real input the golden run gets, and the target's build facts.

A case is built from (network name, seed). The seed moves the input a little (crop position,
audio frame) and seeds the transformer's weights, so each seed is a different but realistic run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from benchmarks.scenarios import inputs, networks

NETWORKS: tuple[str, ...] = ("mtcnn_pnet", "mtcnn_rnet", "mtcnn_onet", "crepe_tiny", "byte_transformer")


@dataclass
class NetworkCase:
    """What one scenario runs: module, golden feeds and the knobs of its pre-processing."""

    network: str
    seed: int
    module: nn.Module
    feeds: dict[str, torch.Tensor]              # golden inputs by graph input name
    raw: torch.Tensor | None = None             # image before normalisation (for input faults)
    crop_args: dict = field(default_factory=dict)
    description: str = ""

    @property
    def input_name(self) -> str:
        return next(iter(self.feeds))

    def input_shape_arg(self) -> str:
        """``--input_shape`` as ATC takes it: ``name:d0,d1,...``."""
        return ";".join(f"{k}:{','.join(str(d) for d in v.shape)}" for k, v in self.feeds.items())


def _jitter(seed: int, amplitude: int) -> tuple[int, int]:
    generator = torch.Generator().manual_seed(seed)
    shift = torch.randint(-amplitude, amplitude + 1, (2,), generator=generator)
    return int(shift[0]), int(shift[1])


def build_case(network: str, seed: int, *, outlier_scale: float = 1.0,
               outlier_block: int | None = None, text_bytes: int | None = None,
               super_weights: dict | None = None, outlier_weights: dict | None = None,
               output_logits: float | None = None, attention_logits: dict | list[dict] | None = None,
               outlier_token: int | None = None, size: dict | None = None, batch: int | None = None) -> NetworkCase:
    """The case for ``network`` and ``seed``; the keyword arguments only apply to the transformer.

    ``outlier_*``: massive activations in ``ByteTransformer.OUTLIER_DIMS`` (from the embedding, or
    from block ``outlier_block``'s MLP bias). ``text_bytes``: run on the first ``text_bytes`` bytes
    of the novel's opening sentence instead of its first clause. ``super_weights``: arguments of
    :func:`networks.plant_super_weights` (block, ratio, row); ``outlier_weights``: of
    :func:`networks.plant_outlier_weights` (block, ratio, share, seed). ``output_logits``: the median runner-up
    output logit after :func:`networks.grow_output_logits`. ``attention_logits``: arguments of
    :func:`networks.grow_attention_logits` (block, peak), or a list of them. ``outlier_token``: the massive activations
    (``outlier_scale``) sit on this byte's embedding only (:func:`networks.plant_token_outliers`).
    ``size``: the transformer's ``width``, ``heads`` and ``layers`` (default 64, 4, 2). ``batch`` (R-Net,
    O-Net): a batch of that many candidate windows, the face box and boxes a few pixels around it (what P-Net
    hands the next stage), instead of the face box alone.
    """
    if network == "mtcnn_pnet":
        offset = tuple(abs(s) for s in _jitter(seed, 8))
        raw = inputs.whole_photo(96, offset)
        return NetworkCase(network, seed, networks.mtcnn("pnet"), {"images": inputs.mtcnn_normalise(raw)},
                           raw, {"offset": offset}, "MTCNN P-Net on the astronaut photo at 96x96")
    if network in ("mtcnn_rnet", "mtcnn_onet"):
        size = 24 if network == "mtcnn_rnet" else 48
        shift = _jitter(seed, 3)
        shifts = [shift] + [_jitter(seed * 100 + i, 8) for i in range(1, batch or 1)]
        raw = torch.cat([inputs.face_crop(size, shift=s) for s in shifts])
        net = networks.mtcnn(network.split("_")[1])
        net.batch = len(shifts)
        windows = f"a batch of {len(shifts)} candidate windows around " if batch else ""
        return NetworkCase(network, seed, net, {"images": inputs.mtcnn_normalise(raw)}, raw,
                           {"size": size, "shift": shift, **({"shifts": shifts} if batch else {})},
                           f"MTCNN {network[-4:].upper()} on {windows}the astronaut's face cropped to {size}x{size}")
    if network == "crepe_tiny":
        start = 32000 + 160 * (seed % 50)
        return NetworkCase(network, seed, networks.crepe_tiny(), {"frames": inputs.crepe_frames(8, start)},
                           None, {"start": start},
                           f"CREPE tiny on 8 frames of CMU ARCTIC a0007 speech from sample {start}")
    if network == "byte_transformer":
        if text_bytes is None:
            tokens, text = inputs.sentence_tokens(), "a Dickens sentence"
        else:
            tokens, text = inputs.opening_tokens(text_bytes), f"the first {text_bytes} bytes of Dickens' opening"
        embedding_scale = outlier_scale if outlier_block is None and outlier_token is None else 1.0
        module = networks.byte_transformer(tokens.shape[1], seed, embedding_scale, **(size or {}))
        if outlier_block is not None:
            with torch.no_grad():
                for dim in networks.ByteTransformer.OUTLIER_DIMS:
                    module.blocks[outlier_block].b2[dim] = outlier_scale
        notes = []
        if outlier_token is not None:
            networks.plant_token_outliers(module, outlier_token, outlier_scale)
            notes.append(f"massive activations ({outlier_scale:g}) on the embedding of byte {chr(outlier_token)!r} "
                         "only")
        for grown in [attention_logits] if isinstance(attention_logits, dict) else attention_logits or []:
            factor = networks.grow_attention_logits(module, tokens, **grown)
            notes.append(f"block {grown['block']}'s query and key projections scaled x{factor:.1f}: "
                         f"its largest attention logit is {grown['peak']:g}")
        if super_weights is not None:
            value = networks.plant_super_weights(module, **super_weights)
            notes.append(f"super weights of {value:.2f} in block {super_weights['block']}'s MLP down-projection")
        if outlier_weights is not None:
            count = networks.plant_outlier_weights(module, tokens, **outlier_weights)
            notes.append(f"one outlier weight ({outlier_weights['ratio']:g}x the largest other) in each of {count} "
                         f"output channels of block {outlier_weights['block']}'s MLP down-projection")
        if output_logits is not None:
            factor = networks.grow_output_logits(module, tokens, output_logits)
            notes.append(f"output head scaled x{factor:.0f}, an exaggerated output-logit drift: the runner-up "
                         f"logit of the median position is {output_logits:g}")
        extra = "".join(f"; {note}" for note in notes)
        return NetworkCase(network, seed, module, {"tokens": tokens}, None, {},
                           f"2-block byte transformer (seeded weights{extra}) on {text}")
    raise KeyError(f"unknown network '{network}'; known: {', '.join(NETWORKS)}")
