"""``python -m benchmarks.scenarios --out DIR [--seed N] [--only FAMILY...] [--small]``.

Generates every selected scenario, self-checks each one, prints one line per scenario and exits
non-zero, naming the scenarios and what was wrong, when any does not show its signature.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks.scenarios.catalog import FAMILIES, select
from benchmarks.scenarios.scenario import generate


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scenarios", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="directory to write scenarios into")
    parser.add_argument("--seed", type=int, default=0, help="added to every scenario's seed (default 0)")
    parser.add_argument("--only", nargs="+", metavar="FAMILY", choices=FAMILIES,
                        help="generate only these families")
    parser.add_argument("--small", action="store_true", help="only the committed test subset")
    parser.add_argument("--dumps", choices=("all", "inputs", "none"), default="all",
                        help="dumps to keep after comparing: all (default), only the network inputs, none")
    parser.add_argument("--onnx-max-kb", type=int, default=None, metavar="KB",
                        help="keep model.onnx only when at most KB kilobytes (0: never export)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    specs = select(args.only, args.small, args.seed)
    failures: list[str] = []
    started = time.perf_counter()
    for spec in specs:
        tick = time.perf_counter()
        max_bytes = None if args.onnx_max_kb is None else args.onnx_max_kb * 1024
        result = generate(spec, args.out, dumps_kept=args.dumps, onnx_max_bytes=max_bytes)
        status = "ok" if not result.problems else "FAILED"
        label = result.label
        print(f"{status:6} {spec.name:70} kind={label['kind']:24} op={label['op']} "
              f"index={label['index']} ({time.perf_counter() - tick:.1f}s)", flush=True)
        failures.extend(f"{spec.name}: {problem}" for problem in result.problems)
    print(f"{len(specs)} scenarios in {time.perf_counter() - started:.1f}s, {len(failures)} problems")
    if failures:
        print("self-check failed:", *failures, sep="\n  ", file=sys.stderr)
        return 1
    return 0
