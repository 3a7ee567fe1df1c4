"""What the checks on the CPU found: the ``verification`` of report.json, and the files of a repro pack.

Numbers only, measured by the other modules of this package; what they *mean* (the op is wrong on the
target, the error is inherited, the target saturates, a residual fault) is decided by the rules in
``rules/core/verification/``, and :func:`judged` copies their verdicts back in after the engine ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

#: finding kinds of the replay rules -> the replay verdict report.json carries
REPLAY_VERDICTS = {"replay_op_wrong": "op_wrong", "replay_inherited": "inherited", "replay_pairing": "pairing"}
#: finding kinds of the residual rules
RESIDUAL_KINDS = ("residual_fault",)


@dataclass(frozen=True)
class Fidelity:
    """The emulated target against the measured one, both as network-output cosines with the golden run."""

    emulated_output_cosine: float | None
    target_output_cosine: float | None
    holds: bool
    mode: str = "ieee"                    # ieee | saturation: how the emulation treats FP16 overflow
    storage: str = "float16"              # the dtype tensors are stored in on the target
    quantised: bool = False               # int8 layers were emulated (QDQ)
    ieee_output_cosine: float | None = None     # with IEEE overflow (inf), when saturation was chosen
    seconds: float = 0.0


@dataclass(frozen=True)
class ReplayCheck:
    """One op cut out of the model and run on ONNX Runtime CPU with the target's own inputs."""

    op: str
    index: int
    golden_ops: tuple[str, ...]
    cpu_vs_golden_cosine: float | None
    cpu_vs_target_cosine: float | None
    target_vs_golden_cosine: float | None
    target_finite: bool
    pack: str = ""                        # the repro pack's folder, relative to the output folder
    emulated: bool = False                # cpu_vs_target compares the op computed in the target's precision
    verdict: str | None = None            # op_wrong | inherited | pairing, as the rules judged it


@dataclass(frozen=True)
class StepCheck:
    """One remedy step applied under emulation (cumulative, as the remedy's steps are)."""

    step: int
    output_cosine_before: float | None
    output_cosine_after: float | None
    restores: bool                        # the output is back within its dtype's thresholds
    seconds: float = 0.0


@dataclass(frozen=True)
class Residual:
    """An op where the target departs from its emulation: error precision does not explain."""

    op: str
    index: int
    kind: str


@dataclass(frozen=True)
class NotVerified:
    what: str
    why: str


@dataclass(frozen=True)
class ReproFile:
    path: str                             # relative to the output folder
    content: bytes


@dataclass
class Verification:
    """Everything ``--verify`` measured. ``facts`` are what the rules judge; ``files`` the repro packs."""

    fidelity: Fidelity | None = None
    replay: list[ReplayCheck] = field(default_factory=list)
    remedy_steps: list[StepCheck] = field(default_factory=list)
    residual: list[Residual] = field(default_factory=list)
    not_verified: list[NotVerified] = field(default_factory=list)
    residual_checked: bool = False        # the comparison was judged again against the emulation
    files: list[ReproFile] = field(default_factory=list, repr=False)
    facts: list[dict[str, Any]] = field(default_factory=list, repr=False)
    seconds: float = 0.0

    def skip(self, what: str, why: str) -> None:
        """Say what was not verified and why (never a silent skip)."""
        self.not_verified.append(NotVerified(what, why))

    @property
    def smallest_restoring_step(self) -> int | None:
        return next((s.step for s in self.remedy_steps if s.restores), None)

    def to_dict(self) -> dict[str, Any]:
        """report.json's ``verification`` (reports/report.schema.json)."""
        fidelity = self.fidelity
        return {
            "fidelity": None if fidelity is None else {
                "emulated_output_cosine": fidelity.emulated_output_cosine,
                "target_output_cosine": fidelity.target_output_cosine,
                "holds": fidelity.holds, "mode": fidelity.mode, "storage": fidelity.storage},
            "replay": [{"op": r.op, "index": r.index, "cpu_vs_golden_cosine": r.cpu_vs_golden_cosine,
                        "cpu_vs_target_cosine": r.cpu_vs_target_cosine, "verdict": r.verdict,
                        "target_vs_golden_cosine": r.target_vs_golden_cosine, "pack": r.pack or None}
                       for r in self.replay],
            "remedy_steps": [{"step": s.step, "output_cosine_before": s.output_cosine_before,
                              "output_cosine_after": s.output_cosine_after, "restores": s.restores}
                             for s in self.remedy_steps],
            "residual": [{"op": r.op, "index": r.index, "kind": r.kind} for r in self.residual],
            "not_verified": [{"what": n.what, "why": n.why} for n in self.not_verified],
        }


def judged(verification: Verification, findings: list[Any]) -> Verification:
    """The verification with the rules' verdicts: each replay's (from the replay finding at its op) and
    the residual faults the rules reported (findings of RESIDUAL_KINDS), but those an earlier residual
    fault explains."""
    verdicts = {f.index: REPLAY_VERDICTS[f.kind] for f in findings if f.kind in REPLAY_VERDICTS}
    replay = [replace(r, verdict=verdicts.get(r.index)) for r in verification.replay]
    kinds = {f.id: f.kind for f in findings}
    residual = [Residual(f.op or "", int(f.index), f.kind) for f in findings
                if f.kind in RESIDUAL_KINDS and f.index is not None and kinds.get(f.explained_by) not in RESIDUAL_KINDS]
    return replace(verification, replay=replay, residual=sorted(residual, key=lambda r: r.index))
