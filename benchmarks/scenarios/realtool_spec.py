"""What a real-tool pair is: two runs (:class:`RunSpec`) and the truth about what differs between
them (:class:`PairSpec`). The catalogs (``realtool_catalog``, ``realtool_families``) list pairs."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Whole-model or autocast precisions a target may run in (the reference is float32).
PRECISIONS: tuple[str, ...] = ("fp16", "bf16")
#: Where a pair's fault enters: the forward pass, or the backward pass of a train step (the forward
#: is identical).
PHASES: tuple[str, ...] = ("forward", "backward")


@dataclass(frozen=True)
class RunSpec:
    """One run as ``benchmarks.scenarios.msprobe_dump`` takes it (see its job format)."""

    key: str                                   # unique folder name of its dumps
    network: str
    mode: str                                  # train_step | eval | inference
    seed: int = 0
    autocast: str | None = None                # CPU autocast of the forward (one of PRECISIONS)
    setup: tuple[tuple[str, object], ...] = () # small_convnet: TrainSetup fields; others: realtool_runs knobs
    input_fault: str | None = None
    perturbed_parameter: str | None = None
    argument: tuple[str, str, object] | None = None   # (module path, attribute, value)
    cast: str | None = None                    # the whole model cast (model.half() / .bfloat16())

    def job(self) -> dict:
        job: dict = {"network": self.network, "mode": self.mode, "seed": self.seed, "autocast": self.autocast,
                     "setup": dict(self.setup), "input_fault": self.input_fault,
                     "perturbed_parameter": self.perturbed_parameter}
        if self.argument is not None:
            module, name, value = self.argument
            job["argument"] = {"module": module, "name": name, "value": value}
        if self.cast is not None:
            job["cast"] = self.cast
        return job


@dataclass(frozen=True)
class PairSpec:
    family: str
    kind: str
    network: str
    variant: str
    reference: RunSpec
    target: RunSpec
    where: str | None = None                   # module path where the fault enters; None: the input
    api: str | None = None                     # the API inside that module that takes the fault
    description: str = ""
    tasks: tuple[str, ...] = field(default=("statistics", "tensor", "md5"))
    phase: str = "forward"                     # one of PHASES: the pass the fault enters
    precision: str | None = None               # the target's precision when that is what differs (a
                                               # reference_nonfinite pair: the reference's, FP16)

    @property
    def name(self) -> str:
        return f"{self.family}__{self.network}__{self.variant}"
