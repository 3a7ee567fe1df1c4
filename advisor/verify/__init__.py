"""``advisor run --verify``: the diagnosis checked on the CPU, with the ONNX model and the dumps.

After the rules have named a root cause, ONNX Runtime's CPU provider

- **replays** each blamed op (its original subgraph, cut out of the model) on the target's own dumped
  inputs: is the op wrong on the target, is its error inherited, or were the tensors mis-paired
  (:mod:`.replay`, with a repro pack per op);
- **emulates** the target's numerics from the build config and dtypes - float16/bfloat16 storage,
  float16 accumulation in reductions, saturation or inf/NaN, int8 with the build's ranges (:mod:`.emulate`,
  :mod:`.qdq`) - says how faithfully (the *fidelity*), and judges the comparison again with the emulated
  run as the reference: what remains is error precision does not explain (:mod:`.residual`);
- **applies each remedy step** under emulation, and the int8 alternatives when the root cause's fix does
  not restore the output (:mod:`.checks`).

Each measurement is a fact (:mod:`.facts`); the rules in ``rules/core/verification/`` judge them in a
second pass of the engine, so a fix that does not restore the output demotes its finding, a verified
alternative takes the lead and an inherited error moves the blame. What cannot be checked says so in
one line, never failing the run. docs/verify.md describes what is emulated and what is not.

========================  =====================================================================
``onnxgraph``             the model: nodes, float tensors, shapes, weights, the target's fused groups
``numerics``              how the target computes (storage dtype, overflow, int8, kept ops)
``emulate``, ``qdq``      the emulated model on ONNX Runtime CPU
``replay``                one op on the target's inputs, and its repro pack
``residual``              the comparison judged again against the emulation
``checks``, ``facts``     the checks a diagnosis calls for, as facts
``model``                 what report.json's ``verification`` holds
========================  =====================================================================
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .model import Verification, judged

if TYPE_CHECKING:
    from ..diagnosis import Finding
    from ..evidence.facts import GoldenInputs
    from ..evidence.quant_config import QuantSettings
    from ..facts.builder import FactSet
    from ..facts.thresholds import Thresholds
    from ..graph import Graph
    from ..ingest.table import ComparisonTable
    from ..remedy import Remedy

__all__ = ["Conclusion", "Verification", "VerifyInputs", "verify_run"]

#: root cause, findings in rank order, remedy: what the engine concluded
Conclusion = tuple["Finding | None", list["Finding"], "Remedy | None"]


@dataclass
class VerifyInputs:
    """What a run read that the checks need."""

    model: Path | None                       # --graph (an ONNX model is needed)
    graph: Graph | None
    dumps: GoldenInputs | None               # --dumps, scanned once for the whole run
    table: ComparisonTable
    facts: FactSet
    thresholds: Thresholds
    settings: QuantSettings | None           # the build config's quantisation settings (--config)
    fact_options: dict[str, Any] = field(default_factory=dict)   # how the comparison's facts were built


def verify_run(inputs: VerifyInputs, first: Conclusion,
               conclude: Callable[[list[dict[str, Any]]], Conclusion]) -> tuple[Conclusion, Verification]:
    """Run the checks ``first`` calls for; ``conclude(facts)`` runs the rules again with their facts
    added. Returns the new conclusion and the verification (verdicts filled in from its findings)."""
    from ..compare.tuning import single_threaded_blas

    # numpy's metrics on many small tensors: BLAS threads only contend (ONNX Runtime has its own pool).
    with single_threaded_blas():
        return _verify(inputs, first, conclude)


def _verify(inputs: VerifyInputs, first: Conclusion,
            conclude: Callable[[list[dict[str, Any]]], Conclusion]) -> tuple[Conclusion, Verification]:
    from .checks import first_line
    from .setup import prepare

    started = time.perf_counter()
    verification = Verification()
    checks = prepare(inputs, verification)
    if checks is None:
        verification.seconds = time.perf_counter() - started
        return first, verification
    root, findings, remedy = first
    facts: list[dict[str, Any]] = []
    if checks.emulator is not None:
        try:
            facts.append(checks.check_fidelity(verification))
            facts += checks.residual(verification, **inputs.fact_options)
        except Exception as exc:  # noqa: BLE001 - an op ONNX Runtime cannot run emulated: said, never raised
            verification.skip("the emulation (fidelity, residual, remedy steps)",
                              f"ONNX Runtime could not run the emulated model ({first_line(exc)})")
            checks.emulator, facts = None, []
    facts += checks.replays(_blamed(root, findings), verification)
    if checks.emulator is not None:
        fixed = checks.fix_checks(root, findings, remedy)
        facts += fixed + checks.alternatives(root, fixed, remedy)
    elif remedy is not None:
        verification.skip("the remedy steps", "the target's numerics could not be emulated (see above)")
    verification.facts = facts
    second = conclude(facts) if facts else first
    if checks.emulator is not None:
        verification.remedy_steps = checks.steps(second[2])
    verification = judged(verification, second[1])
    verification.seconds = time.perf_counter() - started
    return second, verification


def _blamed(root: Finding | None, findings: list[Finding]) -> list[Finding]:
    """The root cause first, then the other findings in rank order."""
    return ([root] if root is not None else []) + [f for f in findings if root is None or f.id != root.id]
