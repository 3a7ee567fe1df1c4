"""msprobe in its own process: ``python -m benchmarks.scenarios.msprobe_dump dump|compare BATCH.json``.

``dump``: ``{"config": "<msprobe config.json>", "jobs": [JOB, ...]}``, each job one run to dump
(:mod:`benchmarks.scenarios.msprobe_tool` writes the batch)::

    {"network": "small_convnet" | one of cases.NETWORKS | one of realtool_networks.NETWORKS,
     "seed": 0,
     "mode": "train_step" | "eval" (small_convnet) | "inference" (the other networks)
             | "train_step" (realtool_networks, see benchmarks.scenarios.realtool_runs),
     "autocast": null | "bf16" | "fp16",              # CPU autocast of the forward
     "cast": null | "bf16" | "fp16",                  # the whole model cast (not small_convnet)
     "setup": {...},                                   # small_convnet: training.TrainSetup fields
     "input_fault": null | "<catalog input-fault factory>",   # other networks: flipped_face...
     "perturbed_parameter": null | "<parameter name>",        # other networks: one layer's weights
     "argument": null | {"module": "<path>", "name": "eps", "value": 0.001}}  # a module attribute

Each run is what a user's training or inference loop does for one step: ``PrecisionDebugger(
config_path=...)`` once, then ``start(model)``, the forward (and backward, optimizer step),
``stop()``, ``step()``. ``compare``: ``{"compares": [[arg, ...], ...]}``, each the arguments of one
``msprobe compare`` command, run by msprobe's own command-line entry.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from benchmarks.scenarios import realtool_runs
from benchmarks.scenarios.realtool_networks import NETWORKS


def build_run(job: dict) -> tuple[torch.nn.Module, Callable[[], None]]:
    """The model to hook and the run to dump, as ``job`` describes them."""
    autocast = realtool_runs.DTYPES[job.get("autocast")]
    if job["network"] == "small_convnet":
        from benchmarks.scenarios import training

        setup = training.TrainSetup(**job.get("setup", {}))
        model, optimizer = training.build(setup)
        images, labels = training.batch(setup.batch_index, flip=setup.flip)
        if job["mode"] == "train_step":
            return model, lambda: training.train_step(model, optimizer, images, labels, seed=setup.seed + 7,
                                                      autocast=autocast)
        return model, lambda: training.evaluate(model, images, setup.dropout_in_eval, autocast=autocast)
    if job["network"] in NETWORKS:
        return realtool_runs.build_run(job)
    from benchmarks.scenarios import catalog
    from benchmarks.scenarios.cases import build_case

    torch.manual_seed(job.get("seed", 0))
    case = build_case(job["network"], job.get("seed", 0))
    model = case.module.eval()
    feeds = dict(case.feeds)
    if job.get("input_fault"):
        feeds = getattr(catalog, job["input_fault"])(case).target_feeds(feeds)
    if job.get("perturbed_parameter"):
        realtool_runs.reinitialise(model.get_parameter(job["perturbed_parameter"]), job.get("seed", 0))
    if job.get("argument"):
        argument = job["argument"]
        setattr(model.get_submodule(argument["module"]), argument["name"], argument["value"])
    cast = realtool_runs.DTYPES[job.get("cast")]
    if cast is not None:
        model.to(cast)
        feeds = {k: v.to(cast) if v.is_floating_point() else v for k, v in feeds.items()}

    def run() -> None:
        with torch.no_grad(), torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            model(*feeds.values())
    return model, run


def dump_runs(batch: dict) -> None:
    """Dump every job of ``batch["jobs"]`` as one step of one debugger (step i = job i): msprobe
    resets its call counters at each ``step()``, so each step's dump.json is that run's own."""
    from msprobe.pytorch import PrecisionDebugger

    _single_rank_group()
    debugger = PrecisionDebugger(config_path=batch["config"])
    for job in batch["jobs"]:
        model, run = build_run(job)
        debugger.start(model)
        run()
        debugger.stop()
        debugger.step()


def _single_rank_group() -> None:
    """A one-process gloo group, as a launcher (torchrun) sets up: msprobe then names the dump folder
    ``rank0`` as on a device, instead of ``proc<pid>``, and ``compare -da`` (which looks for rank
    folders) can analyse it."""
    import socket

    import torch.distributed as dist

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)


def compare_all(batch: dict) -> None:
    """Run ``msprobe compare`` for each argument list of ``batch["compares"]`` (as typed after
    ``msprobe``), in this one process; one that fails is reported and the next one runs."""
    from msprobe.msprobe import main as msprobe_main

    for args in batch["compares"]:
        sys.argv = ["msprobe", *args]
        try:
            msprobe_main()
            print("COMPARE-OK " + json.dumps(args), flush=True)
        except BaseException as exc:  # noqa: BLE001 - msprobe exits or raises its own exceptions
            print("COMPARE-FAILED " + json.dumps({"args": args, "error": f"{type(exc).__name__}: {exc}"}),
                  flush=True)


def main(argv: list[str]) -> int:
    what, path = argv
    batch = json.loads(Path(path).read_text(encoding="utf-8"))
    {"dump": dump_runs, "compare": compare_all}[what](batch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
