"""One run of a :mod:`benchmarks.scenarios.realtool_networks` network, as a job of
:mod:`benchmarks.scenarios.msprobe_dump` describes it: the module msprobe hooks and the run.

Job keys beside ``network``, ``mode`` (``inference`` | ``train_step``), ``seed``, ``autocast``:

- ``cast``: ``fp16`` / ``bf16``: the whole model and its floating inputs cast (``model.half()``,
  ``model.bfloat16()``), as a user porting a model to a half-precision device does;
- ``setup`` (the network's build, the same in both runs of a pair unless it is the fault):
  ``attention_logits`` (the largest attention logit, by scaling the query and key projections),
  ``grow_output: [module, feeder, largest]`` (scale a layer and the one feeding it so the
  layer's largest output is that, every weight within FP16's range),
  ``forget_eval`` (inference with the model left in training mode), ``grad_scale: [module,
  factor]`` (a hook multiplying the gradient that flows into that module's output), ``kernel:
  sqrt_x_rsqrt`` (the run's CPU ``sqrt`` kernel computes ``x * rsqrt(x)``: NaN at exact zeros);
- ``input_fault`` (``masked_transformer``: ``ids_off_by_one``, ``left_padding``),
  ``perturbed_parameter`` (re-initialised weights), ``argument: {module, name, value}`` (a module
  attribute, e.g. ``eps``, ``mode``, ``p``, ``reduction``). Module paths are those of the hooked
  model: the network's own for inference, ``net.<path>`` / ``criterion`` in a train step.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator

import torch
from torch import nn

from benchmarks.scenarios.realtool_networks import NETWORKS, TrainStep, token_batch

DTYPES = {None: None, "bf16": torch.bfloat16, "fp16": torch.float16}


def build_run(job: dict) -> tuple[nn.Module, Callable[[], None]]:
    spec = NETWORKS[job["network"]]
    setup = job.get("setup") or {}
    torch.manual_seed(job.get("seed", 0))
    net = spec.make()
    _shape_network(net, job["network"], setup)
    feeds = spec.feeds(job.get("input_fault"))
    train = job["mode"] == "train_step"
    model = TrainStep(net, spec.criterion()) if train else net
    targets = spec.targets() if train else None
    if job.get("perturbed_parameter"):
        reinitialise(model.get_parameter(job["perturbed_parameter"]), job.get("seed", 0))
    if job.get("argument"):
        argument = job["argument"]
        setattr(model.get_submodule(argument["module"]), argument["name"], argument["value"])
    if setup.get("grad_scale"):
        path, factor = setup["grad_scale"]
        model.get_submodule(path).register_forward_hook(_grad_multiplier(factor))
    dtype = DTYPES[job.get("cast")]
    if dtype is not None:
        model.to(dtype)
        feeds = tuple(f.to(dtype) if f.is_floating_point() else f for f in feeds)
        targets = targets.to(dtype) if targets is not None and targets.is_floating_point() else targets
    autocast = DTYPES[job.get("autocast")]

    def run() -> None:
        with _kernel(setup.get("kernel")), torch.autocast("cpu", dtype=autocast or torch.bfloat16,
                                                          enabled=autocast is not None):
            if train:
                _train_step(model, feeds, targets)
            else:
                model.train(bool(setup.get("forget_eval")))
                with torch.no_grad():
                    model(*feeds)
    return model, run


def _train_step(model: TrainStep, feeds: tuple[torch.Tensor, ...], targets: torch.Tensor) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(7)                           # the same dropout masks in both runs
    model.train()
    optimizer.zero_grad()
    model(*feeds, targets=targets).backward()
    optimizer.step()


def _shape_network(net: nn.Module, network: str, setup: dict) -> None:
    """The build knobs both runs of a pair share (large logits, a layer with large outputs)."""
    if "attention_logits" in setup:
        net.scale_attention_logits(token_batch(), setup["attention_logits"])
    if "grow_output" in setup:
        path, feeder, largest = setup["grow_output"]
        _grow_output(net, NETWORKS[network].feeds(None), path, feeder, largest)


@torch.no_grad()
def _grow_output(net: nn.Module, feeds: tuple[torch.Tensor, ...], path: str, feeder: str, largest: float) -> None:
    """Make ``path``'s largest |output| on the clean feeds ``largest`` with every weight FP16 can
    hold: ``feeder`` (the layer whose output, through ReLU, feeds it) grows by the square root of
    the factor (large activations), ``path``'s weights and bias by the rest."""
    layers = net.get_submodule(feeder), net.get_submodule(path)
    for layer, power in zip(layers, (0.5, 1.0), strict=True):
        grow = (largest / _largest_output(net, feeds, path)) ** power
        layer.weight *= grow
        layer.bias *= grow
        if max(layer.weight.abs().max().item(), layer.bias.abs().max().item()) > 6e4:
            raise ValueError(f"growing {path} to {largest:g} needs weights FP16 cannot hold")


def _largest_output(net: nn.Module, feeds: tuple[torch.Tensor, ...], path: str) -> float:
    seen: list[float] = []
    handle = net.get_submodule(path).register_forward_hook(
        lambda module, args, output: seen.append(output.abs().max().item()))
    was_training = net.training
    net.eval()
    net(*feeds)
    net.train(was_training)
    handle.remove()
    return seen[0]


def reinitialise(weight: torch.Tensor, seed: int) -> None:
    """Weights not loaded from the checkpoint: drawn again (seed ``1000 + seed``) at the same spread."""
    with torch.no_grad():
        generator = torch.Generator().manual_seed(1000 + seed)
        weight.copy_(torch.randn(weight.shape, generator=generator) * weight.std())


def _grad_multiplier(factor: float):
    """A forward hook that makes the gradient reaching the module's output ``factor`` times larger
    (a leftover layer-wise gradient multiplier): the forward is untouched."""
    def hook(module: nn.Module, args, output: torch.Tensor) -> None:
        if output.requires_grad:
            output.register_hook(lambda grad: grad * factor)
    return hook


@contextlib.contextmanager
def _kernel(fault: str | None) -> Iterator[None]:
    """The run's CPU kernel for ``aten::sqrt`` replaced, as a device whose square root is computed as
    ``x * rsqrt(x)`` (0 * inf = NaN at exact zeros). The API the network calls, its inputs and its
    arguments are those of the reference: only the kernel differs."""
    if fault is None:
        yield
        return
    if fault != "sqrt_x_rsqrt":
        raise ValueError(f"unknown kernel fault {fault!r}")
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # "overriding a previously registered kernel"
        library.impl("sqrt", lambda x: torch.ops.aten.mul.Tensor(x, torch.ops.aten.rsqrt.default(x)), "CPU")
    try:
        yield
    finally:
        library._destroy()
