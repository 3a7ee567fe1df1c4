"""Four small networks of the real-tool corpus, each with its real input, built the same way in the
reference and the target run (seeded weights) so that only the pair's fault or precision differs.

- ``masked_transformer``: token ids (int64) of two sentences, right-padded with id 0, through an
  embedding (``padding_idx=0``: the padding rows are exact zeros), a written-out RMS normalisation
  of the embeddings (``x / (sqrt(mean(x^2)) + eps)``), learned positions, one encoder block whose
  attention masks the padding keys (``masked_fill(-inf)`` before the softmax), a GELU MLP with
  dropout, and a cosine head tied to the embedding (``F.normalize`` of the table and of the states).
- ``detector``: three conv-BatchNorm-ReLU stages (stride 2) on a 64x64 crop of the photo, then a
  class head and a box head (1x1 convs, two anchors): two network outputs.
- ``mlp``: Linear-ReLU-Linear-ReLU-dropout-Linear on 8x8 grey patches of the photo (batch 8).
- ``decoder``: a conv encoder (stride 2, BatchNorm) and an upsampling decoder (``nn.Upsample``
  bilinear, a conv, a ``ConvTranspose2d``) back to the 32x32 image, sigmoid output.

Train steps hook ``TrainStep(net, criterion)``: its forward returns the loss, so the criterion is a
module msprobe sees at L0 too (``Module.criterion...``) and the network's modules are under ``net.``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.scenarios import inputs

PAD = 0
VOCAB = 257                                   # byte b -> id b + 1; id 0 pads
SENTENCES = (inputs.SENTENCE, "It was the age of wisdom.")
TOKENS = 56


class RMSEmbeddingNorm(nn.Module):
    """``x / (sqrt(mean(x^2)) + eps)`` written out: the square root of an exact zero on padding rows."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + self.eps)


class CosineHead(nn.Module):
    """Logits as scaled cosines between the states and the (tied) embedding table."""

    def __init__(self, scale: float = 12.0, eps: float = 1e-6) -> None:
        super().__init__()
        self.scale, self.eps = scale, eps

    def forward(self, x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        weight = F.normalize(table, dim=-1, eps=self.eps)
        return torch.matmul(F.normalize(x, dim=-1, eps=self.eps), weight.t()) * self.scale


class MaskedAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(w // self.heads)
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(context.transpose(1, 2).reshape(b, t, w))


class MaskedTransformer(nn.Module):
    def __init__(self, width: int = 32, heads: int = 4, dropout: float = 0.1) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width, padding_idx=PAD)
        self.embed_norm = RMSEmbeddingNorm()
        self.position = nn.Parameter(torch.randn(1, TOKENS, width) * 0.1)
        self.norm1 = nn.LayerNorm(width)
        self.attention = MaskedAttention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(4 * width, width)
        self.norm = nn.LayerNorm(width)
        self.head = CosineHead()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        keep = tokens.ne(PAD)
        x = self.embed_norm(self.embed(tokens)) + self.position
        x = x + self.attention(self.norm1(x), keep)
        x = x + self.fc2(self.dropout(F.gelu(self.fc1(self.norm2(x)))))
        return self.head(self.norm(x), self.embed.weight)

    @torch.no_grad()
    def scale_attention_logits(self, tokens: torch.Tensor, largest: float) -> None:
        """Scale the query and key projections so the largest attention logit on ``tokens`` is
        ``largest`` (a model trained without QK normalisation grows logits of 1e4-1e5)."""
        keep = tokens.ne(PAD)
        h = self.norm1(self.embed_norm(self.embed(tokens)) + self.position)
        b, t, w = h.shape
        q, k, _ = self.attention.qkv(h).reshape(b, t, 3, self.attention.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(w // self.attention.heads)
        now = scores.masked_fill(~keep[:, None, None, :], 0).abs().max().item()
        factor = math.sqrt(largest / now)
        self.attention.qkv.weight[:2 * w] *= factor
        self.attention.qkv.bias[:2 * w] *= factor


def token_batch(fault: str | None = None) -> torch.Tensor:
    """The two sentences as ids (byte + 1), padded with ``PAD`` to ``TOKENS``. Faults a migrated
    tokenizer makes: ``ids_off_by_one`` (no reserved padding id: ids are the raw bytes),
    ``left_padding`` (padding put before the text), ``end_of_text_padding`` (padded with the
    end-of-text id, ``VOCAB - 1``, which the model's mask does not treat as padding)."""
    rows = []
    for sentence in SENTENCES:
        ids = [b + (0 if fault == "ids_off_by_one" else 1) for b in sentence.encode("utf-8")]
        padding = [VOCAB - 1 if fault == "end_of_text_padding" else PAD] * (TOKENS - len(ids))
        rows.append(padding + ids if fault == "left_padding" else ids + padding)
    return torch.tensor(rows, dtype=torch.int64)


class Detector(nn.Module):
    def __init__(self, anchors: int = 2, classes: int = 3) -> None:
        super().__init__()
        self.backbone = nn.Sequential(*(stage for c_in, c_out in ((3, 8), (8, 16), (16, 32))
                                        for stage in (nn.Conv2d(c_in, c_out, 3, stride=2, padding=1),
                                                      nn.BatchNorm2d(c_out), nn.ReLU())))
        self.cls_head = nn.Conv2d(32, anchors * classes, 1)
        self.box_head = nn.Conv2d(32, anchors * 4, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.backbone(x)
        return self.cls_head(features), self.box_head(features)


class MLP(nn.Module):
    def __init__(self, features: int = 64, hidden: int = 64, classes: int = 4, dropout: float = 0.1) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)
        self.fc3 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(self.dropout(F.relu(self.fc2(F.relu(self.fc1(x))))))


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.enc2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")
        self.dec1 = nn.Conv2d(32, 16, 3, padding=1)
        self.deconv = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.out = nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.enc2(F.relu(self.bn1(self.enc1(x)))))
        x = F.relu(self.deconv(F.relu(self.dec1(self.up(x)))))
        return torch.sigmoid(self.out(x))


def _photo_batch(crops: tuple[tuple[int, int], ...], size: int, box: int = 160) -> torch.Tensor:
    pixels = [inputs.resize(inputs.image_to_nchw(inputs.astronaut()[t:t + box, c:c + box]), size)
              for t, c in crops]
    return (torch.cat(pixels) - 127.5) / 127.5


PATCHES = ((40, 168), (300, 60), (200, 300), (0, 0), (340, 340), (120, 40), (60, 350), (260, 200))


def mlp_batch() -> torch.Tensor:
    grey = _photo_batch(PATCHES, 8).mean(1)
    return grey.flatten(1)


@dataclass(frozen=True)
class NetworkSpec:
    make: Callable[[], nn.Module]
    feeds: Callable[[str | None], tuple[torch.Tensor, ...]]    # input fault -> the network's inputs
    criterion: Callable[[], nn.Module]
    targets: Callable[[], torch.Tensor]


def _generator_targets(shape: tuple[int, ...], seed: int = 11, classes: int | None = None) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if classes is not None:
        return torch.randint(0, classes, shape, generator=generator)
    return torch.randn(shape, generator=generator)


class DetectionLoss(nn.Module):
    """Class cross-entropy over anchors plus a smooth-L1 box loss (targets are one tensor: the
    class ids in channel 0, the box offsets in channels 1-4 of each anchor)."""

    def __init__(self, classes: int = 3, reduction: str = "mean") -> None:
        super().__init__()
        self.classes, self.reduction = classes, reduction

    def forward(self, outputs: tuple[torch.Tensor, torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
        logits, boxes = outputs
        b, _, h, w = logits.shape
        logits = logits.reshape(b, -1, self.classes, h, w).transpose(1, 2)
        classes = targets[:, :, 0].round().long()
        loss = F.cross_entropy(logits, classes, reduction=self.reduction)
        return loss + F.smooth_l1_loss(boxes.reshape(b, -1, 4, h, w), targets[:, :, 1:], reduction=self.reduction)


def _detector_targets() -> torch.Tensor:
    classes = _generator_targets((1, 2, 1, 8, 8), classes=3).float()
    return torch.cat([classes, _generator_targets((1, 2, 4, 8, 8))], dim=2)


NETWORKS: dict[str, NetworkSpec] = {
    "masked_transformer": NetworkSpec(
        MaskedTransformer, lambda fault: (token_batch(fault),), lambda: nn.CrossEntropyLoss(ignore_index=PAD),
        lambda: torch.roll(token_batch(), -1, dims=1)),
    "detector": NetworkSpec(Detector, lambda fault: (_photo_batch(((40, 168),), 64),), DetectionLoss,
                            _detector_targets),
    "mlp": NetworkSpec(MLP, lambda fault: (mlp_batch(),), nn.CrossEntropyLoss,
                       lambda: torch.tensor([0, 1, 2, 3, 0, 1, 2, 3])),
    "decoder": NetworkSpec(Decoder, lambda fault: (_photo_batch(PATCHES[:2], 32),), nn.MSELoss,
                           lambda: (_photo_batch(PATCHES[:2], 32) + 1) / 2),
}


class TrainStep(nn.Module):
    """What a training script hooks: the network and its loss (``forward`` returns the loss)."""

    def __init__(self, net: nn.Module, criterion: nn.Module) -> None:
        super().__init__()
        self.net, self.criterion = net, criterion

    def forward(self, *feeds: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        outputs = self.net(*feeds)
        if isinstance(self.criterion, nn.CrossEntropyLoss) and outputs.dim() == 3:
            outputs = outputs.transpose(1, 2)          # (batch, classes, tokens), as cross_entropy takes it
        return self.criterion(outputs, targets)
