"""The checks a diagnosis calls for, run on the CPU: fidelity of the emulation, the residual, a replay of
each blamed op, each fix applied under emulation, and the alternatives when a fix does not restore.

Each check measures and becomes a fact (advisor.verify.facts); the rules judge. What cannot be
checked says so in one line (``Verification.skip``). The knobs are ``knobs: verify:`` of
knowledge/thresholds.yaml.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..diagnosis import QUANT_KINDS, Finding
from ..evidence.facts import GoldenInputs
from ..evidence.layer_sim import fix_order
from ..evidence.quant import cosine, relative_distance, scale_error, within_limits
from ..facts.thresholds import Thresholds
from ..ingest.table import ComparisonTable
from ..remedy.model import KeptOp, Remedy, RemedyStep, parse_settings, setting_text
from . import facts as make
from .emulate import Emulator
from .model import Fidelity, StepCheck, Verification
from .numerics import Numerics
from .onnxgraph import Group, OnnxModel
from .qdq import QuantPlan
from .replay import Replayer, op_tensors
from .residual import residual_facts


@dataclass(frozen=True)
class Outcome:
    """The network output of one emulated variant against the golden run."""

    cosine: float | None
    restores: bool              # within the output dtype's thresholds
    finite: bool


class CpuChecks:
    """One model, its golden inputs and the target's numerics: every emulated variant and replay of a run."""

    def __init__(self, model: OnnxModel, groups: Sequence[Group], emulator: Emulator | None, numerics: Numerics,
                 golden: dict[str, np.ndarray], table: ComparisonTable, dumps: GoldenInputs,
                 thresholds: Thresholds, network: dict[str, Any]) -> None:
        self.model, self.groups, self.emulator, self.numerics = model, list(groups), emulator, numerics
        self.golden, self.table, self.dumps, self.thresholds = golden, table, dumps, thresholds
        self.network = network
        self.limits = thresholds.for_dtype(str(network.get("compute_dtype") or network.get("dtype") or "") or None)
        self._outcomes: dict[str, Outcome] = {}          # repr(numerics) -> outcome
        self.fidelity: Fidelity | None = None
        self.emulated: dict[str, np.ndarray] = {}

    def knob(self, name: str) -> float:
        return self.thresholds.knob("verify", name)

    # --- emulated runs --------------------------------------------------------------------------

    def outcome(self, numerics: Numerics, values: dict[str, np.ndarray] | None = None) -> Outcome:
        key = repr(numerics)
        if key not in self._outcomes:
            values = values if values is not None else self.emulator.run(numerics, list(self.golden))
            self._outcomes[key] = _judge(values, self.golden, self.limits)
        return self._outcomes[key]

    def check_fidelity(self, verification: Verification) -> dict[str, Any]:
        """Emulate the target with IEEE overflow (inf); when that overflows and the target holds no inf or
        NaN anywhere (``nonfinite_ops`` 0), the target saturates: emulate that instead. Returns the fidelity
        fact."""
        started = time.perf_counter()
        target = _number(self.network.get("output_cosine"))
        values = self.emulator.run(self.numerics)
        chosen, ieee = self.numerics, self.outcome(self.numerics, values)
        overflowed = self.numerics.storage == "float16" and any(
            v.dtype.kind == "f" and not np.isfinite(v).all() for v in values.values())
        if overflowed and not self.network.get("nonfinite_ops"):
            chosen = replace(self.numerics, saturate=True)
            values = self.emulator.run(chosen)
        self.numerics, self.emulated = chosen, values
        emulated = self.outcome(chosen)
        gap = _gap(emulated.cosine, target)
        self.fidelity = Fidelity(
            emulated_output_cosine=emulated.cosine, target_output_cosine=target,
            holds=gap <= self.knob("fidelity_tolerance"), mode="saturation" if chosen.saturate else "ieee",
            storage=chosen.storage, quantised=chosen.quant is not None,
            ieee_output_cosine=ieee.cosine if chosen.saturate else None, seconds=time.perf_counter() - started)
        verification.fidelity = self.fidelity
        return make.fidelity_fact(self.fidelity, ieee, chosen, emulated.restores)

    def emulated_value(self, tensor: str) -> np.ndarray | None:
        if tensor in self.emulated:
            return self.emulated[tensor]
        return self.emulator.feeds.get(tensor)

    def residual(self, verification: Verification, **options: Any) -> list[dict[str, Any]]:
        facts, judged = residual_facts(self.table, self.model, self.emulated_value, self.dumps, self.thresholds,
                                       int(self.knob("max_residuals")), **options)
        verification.residual_checked = judged > 0
        if not judged:
            verification.skip("the residual", "no op's target dump pairs with a tensor of the model (were only the "
                                              "network inputs dumped?)")
        return facts

    # --- replays --------------------------------------------------------------------------------

    def replays(self, findings: Sequence[Finding], verification: Verification) -> list[dict[str, Any]]:
        """Replay the op of each active root cause (rank order, up to ``max_replays``)."""
        replayer = Replayer(self.model)
        by_index = {g.index: g for g in self.groups if g.index is not None}
        out: list[dict[str, Any]] = []
        done: set[int] = set()
        for finding in findings:
            if not finding.root_cause or finding.explained_by or finding.index is None or finding.index in done:
                continue
            if len(done) >= self.knob("max_replays"):
                verification.skip(f"replay of {finding.op} (op {finding.index})",
                                  f"only the first {int(self.knob('max_replays'))} blamed ops are replayed "
                                  "(--threshold verify.max_replays=N)")
                continue
            done.add(finding.index)
            group = by_index.get(finding.index)
            if group is None:
                verification.skip(f"replay of {finding.op}", "the model has no op of that name: nothing to cut out")
                continue
            tensors = op_tensors(self.model, group, self.dumps, self.table.frame)
            if tensors.missing:
                verification.skip(f"replay of {finding.op}", tensors.missing)
                continue
            try:
                check, files = replayer.replay(group, tensors, self._replay_in_target_precision
                                               if self.emulator is not None else None)
            except Exception as exc:  # noqa: BLE001 - ONNX Runtime's errors name the op: said, never raised
                verification.skip(f"replay of {finding.op}", f"ONNX Runtime could not run it ({first_line(exc)})")
                continue
            verification.replay.append(check)
            verification.files.extend(files)
            out.append(make.replay_fact(check, finding, group))
        return out

    def _replay_in_target_precision(self, proto: bytes, group: Group, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """A replayed op computed as the target computes it: the emulation's numerics on the sub-model
        (its int8 layer quantised as configured, ranges calibrated on the whole model's float run)."""
        import onnx

        sub = OnnxModel(onnx.load_from_string(proto), self.model.path)
        quant = self.emulator.quant
        plan = QuantPlan(sub, quant.axes, self.emulator.float_run, quant.percentile) if quant else None
        output = sub.outputs[0]
        return Emulator(sub, [group], feeds, plan).run(self.numerics, [output])[output]

    # --- remedies -------------------------------------------------------------------------------

    def variant(self, settings: dict[str, Any], keep: Sequence[KeptOp]) -> Numerics:
        """The target's numerics with a remedy step applied: its settings, its ops kept in float."""
        fp32 = {g.name for op in keep if op.precision == "float32" for g in self._groups_of(op)}
        floating = {g.name for op in keep for g in self._groups_of(op)}
        return self.numerics.with_settings(settings).with_keep(fp32, floating)

    def _groups_of(self, op: KeptOp) -> list[Group]:
        names = {op.op, *op.golden}
        keys = {self.model.key_of(n) for n in names} - {None}
        return [g for g in self.groups if g.name in names or keys.intersection(g.nodes)]

    def steps(self, remedy: Remedy | None) -> list[StepCheck]:
        """Each step of ``remedy`` applied under emulation: network-output cosine before and after."""
        if remedy is None or self.emulator is None:
            return []
        before = self.outcome(self.numerics).cosine
        out = []
        for step in remedy.steps:
            started = time.perf_counter()
            after = self.outcome(self.variant(step.settings, step.keep))
            out.append(StepCheck(step.step, before, after.cosine, after.restores, time.perf_counter() - started))
        return out

    def fix_checks(self, root: Finding | None, findings: Sequence[Finding], remedy: Remedy | None
                   ) -> list[dict[str, Any]]:
        """Per finding the remedy answers: the output with its fix applied (the first step answering it)."""
        if remedy is None or self.fidelity is None:
            return []
        by_id = {f.id: f for f in findings}
        base = self.outcome(self.numerics)
        out = []
        for finding_id in _answered(remedy.steps):
            if finding_id not in by_id:
                continue
            step = next(s for s in remedy.steps if finding_id in s.findings)
            after = self.outcome(self.variant(step.settings, step.keep))
            out.append(make.fix_fact(by_id[finding_id], root is not None and root.id == finding_id, step.step,
                                     base, after, self.fidelity.holds))
        return out

    def alternatives(self, root: Finding | None, fixed: list[dict[str, Any]], remedy: Remedy | None
                     ) -> list[dict[str, Any]]:
        """When the root cause is a quantisation finding whose fix does not restore the output: its fix with
        each other int8 setting added (knowledge/quant_alternatives.yaml order, up to the first that
        restores), then its layer kept in float instead; each emulated."""
        own = next((f for f in fixed if root is not None and f["finding"] == root.id), None)
        if root is None or remedy is None or root.kind not in QUANT_KINDS or own is None or own["restores"] \
                or self.numerics.quant is None or not self.fidelity or not self.fidelity.holds:
            return []
        step = next(s for s in remedy.steps if root.id in s.findings)
        base = self.outcome(self.numerics)
        percentile = self.thresholds.knob("quant", "percentile")
        out = []
        for name, text in fix_order().items():
            extra, _ = parse_settings(text.format(percentile=percentile), "knowledge/quant_alternatives.yaml")
            settings = {**step.settings, **extra}
            variant = self.variant(settings, step.keep)
            if extra.items() <= step.settings.items() or variant == self.variant(step.settings, step.keep):
                continue
            after = self.outcome(variant)
            out.append(make.alternative_fact(name, ";".join(f"{k}={setting_text(v)}" for k, v in settings.items()),
                                             root, base, after))
            if after.restores:
                return out
        keep = KeptOp(root.op or "", tuple(str(root.values.get("fix_keep_golden") or root.op or "").split(",")),
                      None, "float16", root.id)
        out.append(make.alternative_fact("keep_float", "", root, base, self.outcome(self.variant({}, (keep,)))))
        return out


def _answered(steps: Sequence[RemedyStep]) -> list[str]:
    return list(dict.fromkeys(f for step in steps for f in step.findings))


def _judge(values: dict[str, np.ndarray], golden: dict[str, np.ndarray], limits: dict[str, float]) -> Outcome:
    """The lowest output cosine over the network outputs; restored when every output is within limits."""
    cosines, restored, finite = [], True, True
    for name, reference in golden.items():
        result = np.asarray(values[name], dtype=np.float64)
        finite &= bool(np.isfinite(result).all())
        cos = cosine(reference, result)
        cosines.append(cos)
        restored &= within_limits(cos, relative_distance(reference, result), scale_error(reference, result), limits)
    lowest = min(cosines) if cosines else float("nan")
    return Outcome(float(lowest) if np.isfinite(lowest) else None, restored and finite, finite)


def _gap(emulated: float | None, target: float | None) -> float:
    if emulated is None or target is None:
        return 0.0 if emulated is None and target is None else float("inf")
    return abs(emulated - target)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
