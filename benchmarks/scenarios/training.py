"""A small real training step for the real-tool corpus: convolutions with BatchNorm, a LayerNorm,
dropout, a cross-entropy loss and SGD with momentum, on crops of the astronaut photo.

Everything is seeded: two runs built with the same :class:`TrainSetup` produce bit-identical
tensors on the CPU (dropout masks included, since the generator is re-seeded before each step),
so whatever differs between a reference and a target run is the injected fault or the precision
policy, as when a user compares a migrated training script against the original.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.scenarios import inputs
from benchmarks.scenarios.realtool_runs import reinitialise

#: Crops of the photo that make the batches: (top, left) of a 128x128 box, resized to 32x32.
CROPS: tuple[tuple[int, int], ...] = ((40, 168), (300, 60), (200, 300), (0, 0), (380, 380), (120, 40),
                                      (60, 360), (260, 200))
CLASSES = 4
BATCH = 4


class SmallConvNet(nn.Module):
    """conv-BN-ReLU-pool twice, then Linear -> LayerNorm -> GELU -> dropout -> Linear."""

    def __init__(self, layer_norm_eps: float = 1e-5, dropout: float = 0.3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32, eps=layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(32, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        x = self.dropout(F.gelu(self.norm(self.fc1(x))))
        return self.fc2(x)


def batch(index: int, flip: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch ``index`` (BATCH crops, normalised to [-1, 1]) and its labels.

    ``flip`` mirrors every crop: a random-flip augmentation left on where the reference has none.
    """
    crops = []
    for i in range(BATCH):
        top, left = CROPS[(index * BATCH + i) % len(CROPS)]
        image = inputs.astronaut()[top:top + 128, left:left + 128]
        crop = inputs.resize(inputs.image_to_nchw(image), 32)
        crops.append(crop.flip(3) if flip else crop)
    pixels = torch.cat(crops)
    labels = torch.tensor([(index * BATCH + i) % CLASSES for i in range(BATCH)])
    return (pixels - 127.5) / 127.5, labels


@dataclass(frozen=True)
class TrainSetup:
    """One run's knobs: seed of the weights, which batch the dumped step sees, how many optimizer
    steps ran before it, and the faults a migrated script may carry."""

    seed: int = 0
    batch_index: int = 0
    steps_before: int = 0
    layer_norm_eps: float = 1e-5
    perturbed_layer: str | None = None      # a parameter whose weights differ (e.g. "conv2.weight")
    flip: bool = False                      # augmentation left on in the dumped batch
    dropout_in_eval: bool = False           # eval forward with the dropout still in training mode


def build(setup: TrainSetup) -> tuple[SmallConvNet, torch.optim.Optimizer]:
    """The network and its optimizer, ``setup.steps_before`` steps into training."""
    torch.manual_seed(setup.seed)
    model = SmallConvNet(layer_norm_eps=setup.layer_norm_eps)
    if setup.perturbed_layer is not None:
        reinitialise(model.get_parameter(setup.perturbed_layer), setup.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(setup.steps_before):
        train_step(model, optimizer, *batch(100 + step), seed=setup.seed + step)
    return model, optimizer


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, images: torch.Tensor, labels: torch.Tensor,
               seed: int = 0, autocast: torch.dtype | None = None) -> torch.Tensor:
    """One forward/backward/update; returns the loss. ``autocast``: run the forward under CPU
    autocast at that dtype (the mixed-precision target)."""
    torch.manual_seed(seed)
    model.train()
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        loss = F.cross_entropy(model(images), labels, reduction="mean")
    loss.backward()
    optimizer.step()
    return loss.detach()


def evaluate(model: nn.Module, images: torch.Tensor, dropout_in_eval: bool = False,
             autocast: torch.dtype | None = None) -> torch.Tensor:
    """An inference forward (model.eval()); ``dropout_in_eval`` leaves the dropout in training mode."""
    torch.manual_seed(0)
    model.eval()
    if dropout_in_eval:
        model.dropout.train()
    with torch.no_grad(), torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        return model(images)
