"""Generate one scenario directory: run, dump, compare, export, label, self-check.

Layout of ``<out>/<scenario name>/``::

    golden/                     golden (float32) dumps, TF-style npy names
    target/                     target dumps, NPU numpy names
    result_<YYYYmmddHHMMSS>.csv the msaccucmp comparison of the two
    model.onnx                  the golden network (when the onnx package is installed)
    build.json                  the target's build configuration (ATC or MagicMind knobs)
    aipp.cfg                    only when the build inserted AIPP
    label.json                  the truth: family, kind, op, index, ... and the observed signature
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from advisor.compare import result_file_name
from benchmarks.scenarios import checks, dumps
from benchmarks.scenarios.cases import build_case
from benchmarks.scenarios.catalog import ScenarioSpec
from benchmarks.scenarios.compare import write_result
from benchmarks.scenarios.emulation import PRECISIONS, Emulator, plan_target
from benchmarks.scenarios.graph import run_golden, trace


class ScenarioCheckError(AssertionError):
    """A generated scenario does not show the signature its label promises."""


@dataclass
class Generated:
    spec: ScenarioSpec
    directory: Path
    result_csv: Path
    label: dict
    problems: list[str]


def build_config(spec: ScenarioSpec, case, fault) -> dict:
    """What the user's build config would say (ATC by default, MagicMind when the fault says so)."""
    knobs = dict(fault.build_knobs)
    precision = PRECISIONS[spec.precision]
    if knobs.pop("tool", "atc") == "magicmind":
        config = {"tool": "magicmind", "onnx": "model.onnx",
                  "precision_config": {"precision_mode": "force_float16" if spec.precision == "fp16"
                                       else "force_float32"},
                  "input_dims": {k: list(v.shape) for k, v in case.feeds.items()}}
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
    torch.manual_seed(spec.seed)
    directory = out_root / spec.name
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    case = build_case(spec.network, spec.seed, **spec.case_args)
    fault = spec.make_fault(case)
    graph = trace(case.module, list(case.feeds))
    golden = run_golden(graph, case.feeds)
    precision = PRECISIONS[spec.precision]
    plan = plan_target(graph, precision, golden)
    run = Emulator(graph, plan, precision).run(fault.target_feeds(case.feeds), fault)
    culprit = fault.locate(plan, run)

    clock = dumps.ScenarioClock(spec.seed, spec.name)
    manifest = dumps.DumpManifest()
    manifest.golden = dumps.write_golden(directory / "golden", graph, golden, clock)
    dumps.write_target(directory / "target", plan, run, clock, manifest)
    result_csv = write_result(directory / _result_name(clock), plan, run, manifest)

    if onnx_max_bytes != 0:
        _export(graph, golden, directory / "model.onnx", spec.network, onnx_max_bytes)
    config = build_config(spec, case, fault)
    (directory / "build.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if "aipp" in fault.build_knobs:
        (directory / "aipp.cfg").write_text(aipp_config(fault.build_knobs["aipp"], case), encoding="utf-8")

    label = {
        "family": spec.family, "kind": fault.kind, "op": culprit,
        "index": plan.op(culprit).index if culprit else None,
        "network": spec.network, "seed": spec.seed, "variant": spec.variant,
        "precision": spec.precision, "description": f"{case.description}; {fault.description}",
        "expected": expected_signature(fault.kind),
    }
    problems = checks.check_signature(result_csv, label)
    label["observed"] = checks.summarise(result_csv)
    (directory / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    _prune_dumps(directory, plan, manifest, dumps_kept)
    return Generated(spec, directory, result_csv, label, problems)


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


def expected_signature(kind: str) -> dict:
    """The signature :mod:`checks` enforces, in words a consumer of label.json can test."""
    threshold = checks.COSINE_OK
    if kind == "consistent":
        return {"all_cosine_gte": threshold, "overflow": False}
    if kind == "fp16_overflow":
        return {"first_overflow_at_op": True, "network_output_cosine_lt": threshold}
    common = {"cosine_gte_before_op": threshold, "op_inputs_cosine_gte": threshold,
              "op_outputs_cosine_lt": threshold}
    if kind == "single_point_deviation":
        return {**common, "network_output_cosine_gte": threshold}
    if kind in checks.INPUT_KINDS:
        return {**common, "op_is_data": True}
    return {**common, "network_output_cosine_lt": threshold}
