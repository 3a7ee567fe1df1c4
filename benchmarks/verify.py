"""How long ``advisor run --verify`` takes on a ~200 MB model: the byte transformer grown to 832 wide and 6
blocks (50M parameters, model.onnx 200 MB), 128 tokens, an FP16 overflow in its first LayerNorm, every
tensor dumped.

``python -m benchmarks.verify [--out DIR] [--keep] [--repeat N]``

Generates the scenario with the generator (benchmarks/scenarios), then times, in one process each time,
``advisor run RESULT.csv --graph model.onnx --dumps golden:target --config build.json`` without and with
``--verify`` and prints the wall time of both, what the verification took, and its results (fidelity,
replay, remedy steps). A measurement, not a test: exit 0 whatever the times, 1 when the scenario fails to
generate. Use ``nice`` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.scenarios import catalog
from benchmarks.scenarios.catalog import ScenarioSpec

SIZE = {"width": 832, "heads": 8, "layers": 6}
SPEC = ScenarioSpec("fp16_overflow", "byte_transformer", "large_embedding_outliers", 0,
                    catalog.overflow("massive activations (~400) in two embedding channels of a 50M-parameter "
                                     "transformer: the first LayerNorm's Pow overflows"),
                    case_args={"outlier_scale": 400.0, "text_bytes": 128, "size": SIZE})


def _run(folder: Path, outdir: Path, verify: bool) -> float:
    command = [sys.executable, "-m", "advisor", "run", str(next(folder.glob("result_*.csv"))),
               "--graph", str(folder / "model.onnx"), "--dumps", f"{folder / 'golden'}:{folder / 'target'}",
               "--config", str(folder / "build.json"), "--format", "json,html", "-q", "-o", str(outdir)]
    started = time.perf_counter()
    subprocess.run(command + (["--verify"] if verify else []), check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.verify", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="folder for the scenario and reports (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the folder")
    parser.add_argument("--repeat", type=int, default=1, help="time each command this many times (default 1)")
    args = parser.parse_args(argv)
    from benchmarks.scenarios.scenario import generate

    root = args.out or Path(tempfile.mkdtemp(prefix="advisor-verify-bench-"))
    try:
        started = time.perf_counter()
        generated = generate(SPEC, root)
        if generated.problems:
            print("the scenario does not show its signature:", *generated.problems, sep="\n  ", file=sys.stderr)
            return 1
        folder = generated.directory
        dumps = sum(p.stat().st_size for p in folder.rglob("*.npy"))
        print(f"scenario {SPEC.name}: model.onnx {(folder / 'model.onnx').stat().st_size / 2**20:.0f} MiB, "
              f"dumps {dumps / 2**20:.0f} MiB, {os.cpu_count()} cores "
              f"(generated in {time.perf_counter() - started:.0f} s)")
        plain = min(_run(folder, root / "plain", False) for _ in range(args.repeat))
        verified = min(_run(folder, root / "verified", True) for _ in range(args.repeat))
        report = json.loads((root / "verified" / "report.json").read_text(encoding="utf-8"))
        verification = report["verification"]
        print(f"advisor run:          {plain:6.1f} s")
        print(f"advisor run --verify: {verified:6.1f} s  (the checks: {verified - plain:.1f} s)")
        print(f"root cause: {report['root_cause']['kind']} at {report['root_cause']['op']}")
        print(f"fidelity: {json.dumps(verification['fidelity'])}")
        for replay in verification["replay"]:
            print(f"replay {replay['op']}: {replay['verdict']} (CPU vs golden {replay['cpu_vs_golden_cosine']})")
        for step in verification["remedy_steps"]:
            print(f"remedy step {step['step']}: {step['output_cosine_before']} -> {step['output_cosine_after']} "
                  f"(restores: {step['restores']})")
        for line in verification["not_verified"]:
            print(f"not verified: {line['what']}: {line['why']}")
        return 0
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
