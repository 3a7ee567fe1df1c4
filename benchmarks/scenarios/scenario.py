"""Generate one scenario directory: run, dump, compare, export, label, self-check.

Layout of ``<out>/<scenario name>/``::

    golden/                     golden (float32) dumps, TF-style npy names
    target/                     target dumps, NPU numpy names
    result_<YYYYmmddHHMMSS>.csv the msaccucmp comparison of the two
    model.onnx                  the golden network (when the onnx package is installed)
    build.json                  the target's build configuration (ATC or MagicMind knobs)
    ge_proto_*_Build.txt        with further fusions (``spec.fusions``): the target graph GE dumps
    fusion_result.json          ... and the build's fusion pass counts
    aipp.cfg                    only when the build inserted AIPP
    label.json                  the truth: family, kind, op, index, ... and the observed signature
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from advisor.compare import result_file_name
from benchmarks.scenarios import checks, dumps, faults, target_graph
from benchmarks.scenarios.cases import NetworkCase, build_case
from benchmarks.scenarios.catalog import ScenarioSpec
from benchmarks.scenarios.compare import write_result
from benchmarks.scenarios.emulation import PRECISIONS, Emulator, Precision, TargetPlan, TargetRun, plan_target
from benchmarks.scenarios.faults import Fault
from benchmarks.scenarios.graph import GoldenGraph, run_golden, trace


class ScenarioCheckError(AssertionError):
    """A generated scenario does not show the signature its label promises."""


@dataclass
class Generated:
    spec: ScenarioSpec
    directory: Path
    result_csv: Path
    label: dict
    problems: list[str]
    replay: Replay | None = field(default=None, repr=False)    # re-runs the target (remedies)


@dataclass
class Rerun:
    """The network output of a re-run target, judged as ``advisor run`` judges it.

    ``output_cosine``: the lowest cosine of the network outputs (``Node_Output`` rows), None when
    not finite. ``op_deviates``: the labelled op's output still deviates (None without a label).
    """

    output_cosine: float | None
    output_deviates: bool
    op_deviates: bool | None
    judged: checks.Judgement = field(repr=False)


@dataclass
class Replay:
    """One scenario's network, golden run and target plan kept in memory, to run its target again
    with another fault (a remedy, a counterfactual) without regenerating the scenario.

    :func:`prepare` builds it exactly as :func:`generate` does; :meth:`judge` writes the re-run's
    dumps and comparison into a temporary folder (nothing is kept) and judges it.
    """

    spec: ScenarioSpec
    case: NetworkCase
    fault: Fault
    graph: GoldenGraph
    golden: dict[str, torch.Tensor]
    plan: TargetPlan
    precision: Precision
    clock: dumps.ScenarioClock
    label_index: int | None = None

    def locate(self, run: TargetRun) -> str | None:
        """The labelled op of the scenario's own ``run`` (sets :attr:`label_index`)."""
        culprit = self.fault.locate(self.plan, run)
        self.label_index = self.plan.op(culprit).index if culprit else None
        return culprit

    def run(self, fault: Fault | None = None) -> TargetRun:
        """The target run with ``fault`` (default: the scenario's own) injected."""
        fault = self.fault if fault is None else fault
        emulator = Emulator(self.graph, self.plan, self.precision, calibration=self.golden)
        return emulator.run(fault.target_feeds(self.case.feeds), fault)

    def judge(self, fault: Fault | None = None) -> checks.Judgement:
        """Run the target with ``fault`` and judge its comparison (nothing is kept)."""
        with tempfile.TemporaryDirectory() as tmp:
            return checks.judge(self.write_comparison(Path(tmp), fault))

    def write_comparison(self, folder: Path, fault: Fault | None = None) -> Path:
        """Run the target with ``fault`` and write its dumps and comparison into ``folder`` (e.g. a
        framework's fake-quant simulation of the build: the fault as the config describes it);
        returns the result CSV."""
        run = self.run(fault)
        manifest = dumps.DumpManifest()
        manifest.golden = dumps.write_golden(Path(folder, "golden"), self.graph, self.golden, self.clock)
        dumps.write_target(Path(folder, "target"), self.plan, run, self.clock, manifest)
        return write_result(Path(folder, _result_name(self.clock)), self.plan, run, manifest)

    def rerun(self, fault: Fault | None = None) -> Rerun:
        """Network-output cosine and verdicts of the target re-run with ``fault``."""
        judged = self.judge(fault)
        cosine = judged.network.get("output_cosine")
        cosine = float(cosine) if cosine is not None and np.isfinite(cosine) else None
        op = judged.op(self.label_index) if self.label_index is not None else None
        return Rerun(cosine, judged.output_deviates, None if op is None else bool(op["out_deviates"]), judged)


def prepare(spec: ScenarioSpec) -> Replay:
    """Build ``spec``'s case, fault, golden run and target plan (no files, no target run)."""
    torch.manual_seed(spec.seed)
    case = build_case(spec.network, spec.seed, **spec.case_args)
    fault = spec.make_fault(case)
    graph = trace(case.module, list(case.feeds))
    golden = run_golden(graph, case.feeds)
    precision = PRECISIONS[spec.precision]
    plan = plan_target(graph, precision, golden, folded=fault.folded_normalization(), fusions=spec.fusions,
                       nhwc=fault.declared_nhwc(), nhwc_outputs=fault.nhwc_outputs())
    return Replay(spec, case, fault, graph, golden, plan, precision, dumps.ScenarioClock(spec.seed, spec.name))


def rerun(spec: ScenarioSpec, change: Callable[[Fault], Fault]) -> Rerun:
    """Regenerate ``spec``'s target run with its fault changed by ``change`` (e.g. a remedy,
    ``lambda f: faults.apply_remedy(f, settings, keep)``) and judge it: network-output cosine vs
    the golden run, whether it deviates, and whether the labelled op still deviates."""
    replay = prepare(spec)
    replay.locate(replay.run())
    return replay.rerun(change(replay.fault))


def build_config(spec: ScenarioSpec, case, fault) -> dict:
    """What the user's build config would say (ATC by default, MagicMind when the fault says so)."""
    knobs = dict(fault.build_knobs)
    precision = PRECISIONS[spec.precision]
    if knobs.pop("tool", "atc") == "magicmind":
        config = {"tool": "magicmind", "onnx": "model.onnx",
                  "precision_config": {"precision_mode": "force_float16" if spec.precision == "fp16"
                                       else "force_float32"},
                  "input_dims": {k: list(v.shape) for k, v in case.feeds.items()}}
        config["precision_config"].update(knobs.pop("precision_config", {}))
        config.update(knobs)
        return config
    config = {"tool": "atc", "framework": 5, "model": "model.onnx", "output": spec.network,
              "soc_version": "Ascend310P3", "input_format": "NCHW" if case.raw is not None else "ND",
              "input_shape": case.input_shape_arg(), "precision_mode": precision.precision_mode}
    knobs.pop("aipp", None)
    config.update(knobs)
    return config


def aipp_config(aipp: dict, case) -> str:
    lines = ["aipp_op {", "    aipp_mode: static"]
    for key, value in aipp.items():
        lines.append(f"    {key}: {str(value).lower() if isinstance(value, bool) else value}")
    height, width = case.feeds["images"].shape[2:]
    lines += [f"    src_image_size_w: {width}", f"    src_image_size_h: {height}", "}"]
    return "\n".join(lines) + "\n"


def generate(spec: ScenarioSpec, out_root: Path, *, dumps_kept: str = "all",
             onnx_max_bytes: int | None = None) -> Generated:
    """Build the scenario under ``out_root/spec.name`` and self-check it.

    ``dumps_kept``: ``all``, ``inputs`` (only the network-input dumps of both sides, what input
    probes need) or ``none``. ``onnx_max_bytes``: drop model.onnx when larger (0 = never export).
    """
    directory = out_root / spec.name
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    replay = prepare(spec)
    case, fault, graph, golden, plan = replay.case, replay.fault, replay.graph, replay.golden, replay.plan
    run = replay.run()
    culprit = replay.locate(run)

    clock = replay.clock
    manifest = dumps.DumpManifest()
    manifest.golden = dumps.write_golden(directory / "golden", graph, golden, clock)
    dumps.write_target(directory / "target", plan, run, clock, manifest)
    result_csv = write_result(directory / _result_name(clock), plan, run, manifest)

    if onnx_max_bytes != 0:
        _export(graph, golden, directory / "model.onnx", spec.network, onnx_max_bytes)
    if spec.fusions:   # the build's own graph and fusion report say what it fused
        target_graph.write_target_graph(directory, plan, spec.network)
        target_graph.write_fusion_result(directory, plan)
    config = build_config(spec, case, fault)
    (directory / "build.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if "aipp" in fault.build_knobs:
        (directory / "aipp.cfg").write_text(aipp_config(fault.build_knobs["aipp"], case), encoding="utf-8")

    label = {
        "family": spec.family, "kind": fault.kind, "op": culprit,
        "index": plan.op(culprit).index if culprit else None,
        "network": spec.network, "seed": spec.seed, "variant": spec.variant,
        "precision": spec.precision, "description": f"{case.description}; {fault.description}",
    }
    symptoms = [{"kind": s.kind, "op": s.op, "index": plan.op(s.op).index, "relation": s.relation}
                for s in fault.symptoms(plan, run)]
    if symptoms:
        label["symptoms"] = symptoms
    if fault.folded_normalization():
        label["input_normalised_in_model"] = True     # the build normalises the input inside (an inserted op)
    label["expected"] = expected_signature(fault.kind, symptoms)
    if label.get("input_normalised_in_model") and fault.kind == "consistent":
        label["expected"]["every_tensor"] = ("agrees, except the network input: raw data on the target, normalised "
                                             "by the op the build inserts after it")
    elif label.get("input_normalised_in_model"):
        label["expected"]["op_outputs"] = "agree: the target is fed the golden run's normalised input"
        label["expected"]["after_op"] = "the op the build inserts after the input normalises it again: error enters"
    if fault.declared_nhwc():
        label["input_declared_nhwc"] = True
        label["expected"]["op_outputs"] = "agree (flattened): the target input is the golden NCHW buffer, shaped NHWC"
        label["expected"]["after_op"] = "the TransData the build inserts transposes it from NHWC: error enters"
    judged = checks.judge(result_csv)
    problems = checks.check_signature(result_csv, label, judged) + fault.verify(plan, run)
    label["observed"] = checks.summarise(result_csv, judged)
    if culprit is not None:
        more, observed = _counterfactuals(fault, label, replay)
        problems += more
        label["observed"].update(observed)
    (directory / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    _prune_dumps(directory, plan, manifest, dumps_kept)
    return Generated(spec, directory, result_csv, label, problems, replay)


def _counterfactuals(fault, label: dict, replay: Replay) -> tuple[list[str], dict]:
    """What the label claims about other runs: each harmless part of a mixture alone leaves the
    network output intact; the fixed deployment (per-channel, asymmetric...) makes the labelled op
    agree. Returns (problems, observations for label.json)."""
    problems: list[str] = []
    observed: dict = {}
    for part in fault.harmless_parts():
        judged = replay.judge(part)
        observed["harmless_alone_network_output_deviates"] = judged.output_deviates
        if judged.output_deviates:
            problems.append(f"the harmless {part.kind} breaks the network output on its own "
                            f"(cosine {judged.network.get('output_cosine')})")
    for part, symptom in zip(fault.hidden_parts(), [s for s in label.get("symptoms", []) if s["relation"] == "hidden"],
                             strict=True):
        # Alone: without the root cause, which may be the precision itself (an overflow is not injected):
        # every compute op of the target kept in float32.
        wide = [faults.Keep(op=op.name, precision="float32") for op in replay.plan.ops if op.role == "compute"]
        judged = replay.judge(part.with_keep(wide))
        op = judged.op(symptom["index"])
        observed["hidden_alone"] = {"op_error_enters": bool(op["error_enters"]),
                                    "network_output_deviates": judged.output_deviates}
        if not (op["error_enters"] and judged.output_deviates):
            problems.append(f"the hidden {part.kind} at {symptom['op']}, injected alone, does not enter there and "
                            "break the network output")
    fix = fault.fixed()
    if fix is not None:
        judged = replay.judge(fix)
        op = judged.op(label["index"])
        observed["with_fix"] = {"op_output_deviates": bool(op["out_deviates"]),
                                "network_output_deviates": judged.output_deviates}
        if op["out_deviates"]:
            words = ", ".join(f"{k}={v}" for k, v in fault.fix_settings.items())
            problems.append(f"with the fix ({type(fix).__name__} {words}) {label['op']} still deviates")
    return problems, observed


def _export(graph, golden, path: Path, name: str, max_bytes: int | None) -> None:
    try:
        from benchmarks.scenarios.onnx_export import export_onnx
    except ImportError:  # pragma: no cover - onnx is an optional dependency
        return
    try:
        export_onnx(graph, golden, path, name)
    except ImportError:  # pragma: no cover
        return
    if max_bytes is not None and path.stat().st_size > max_bytes:
        path.unlink()


def _prune_dumps(directory: Path, plan, manifest: dumps.DumpManifest, kept: str) -> None:
    if kept == "all":
        return
    keep: set[Path] = set()
    if kept == "inputs":
        data_ops = [op.name for op in plan.ops if op.role == "data"]
        keep |= {manifest.golden[name] for name in data_ops}
        keep |= {path for (op, _, _), path in manifest.target.items() if op in data_ops}
    for side in ("golden", "target"):
        for path in (directory / side).iterdir():
            if path not in keep:
                path.unlink()
        if not any((directory / side).iterdir()):
            (directory / side).rmdir()


def _result_name(clock: dumps.ScenarioClock) -> str:
    return result_file_name(clock.compare_time)


def expected_signature(kind: str, symptoms: list[dict] | None = None) -> dict:
    """The signature :mod:`checks` enforces, in words a consumer of label.json can test.

    "agree"/"deviate" are the advisor's own judgement (``advisor.facts``: cosine, relative
    Euclidean distance and scale error against ``knowledge/thresholds.yaml`` per dtype)."""
    judged_by = "advisor.facts.builder.build_facts + knowledge/thresholds.yaml"
    if kind == "consistent":
        return {"judged_by": judged_by, "every_tensor": "agrees", "overflow": False}
    signature: dict = {"judged_by": judged_by,
                       "before_op": "every tensor agrees, no overflow"}
    if kind == "fp16_overflow":
        signature.update(op_inputs="below 65504", op_outputs="OverFlow YES", network_output="deviates")
    elif kind in checks.OUTPUT_ONLY_KINDS:
        signature.update(every_op="agrees", network_output="deviates: handed over in another layout")
    else:
        signature.update(op_inputs="agree", op_outputs="deviate")
        if kind == "single_point_deviation":
            signature["network_output"] = "agrees"
        elif kind in checks.OUTPUT_BREAKING_KINDS:
            signature["network_output"] = "deviates"
        if kind in checks.INPUT_KINDS:
            signature["op_is_data"] = True
    for symptom in symptoms or []:
        where = f"{symptom['op']}@{symptom['index']}"
        if symptom["relation"] == "harmless":
            signature["before_op"] = (f"the first deviation is a harmless {symptom['kind']} at {where} "
                                      "(its inputs agree); the labelled op's inputs agree again")
        elif symptom["relation"] == "hidden":
            signature["second_fault"] = (f"a second, independent {symptom['kind']} at {where}: the root cause's "
                                         "error hides it in the comparison (its inputs deviate); injected alone, "
                                         "error enters there and breaks the network output")
        elif symptom["kind"] == "fp16_overflow":
            signature["then"] = f"the first overflow starts later, at {where}, explained by the root cause"
        else:
            signature["then"] = (f"error seems to enter later at {where} (inputs agree, outputs deviate): "
                                 "explained by the root cause")
    return signature
