"""How fast ``advisor compare`` is, next to only reading the same dumps with ``np.load``.

    python benchmarks/compare.py                         # 300 ops of 256k elements
    python benchmarks/compare.py --ops 1000 --elements 65536 --jobs 1 2 4 --keep /tmp/dumps

Writes a synthetic pair of dump folders shaped like an FP16 NPU run against its float32 golden run
(Ascend numpy names on the target, TF-style names on the golden side): a Data op, then a chain of
Conv ops, each with a fused ReLU the target does not dump (so pairing must fold it), target-only
Cast and TransData ops around the chain, and every target op's input and output dumped. Then, in
this one process and with a warm page cache for both:

- ``np.load`` of every file (the floor: what any comparison must at least do), best of ``--repeat``;
- ``advisor compare`` with each ``--jobs`` count, best of ``--repeat``.

It prints distinct tensor pairs per second and the ratio of each compare to the read-only time.
Comparing costs more than reading - ten metrics in float64, a fingerprint of every target dump
- so the ratio says how much work is done per byte read, and how well it spreads over cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python benchmarks/compare.py): make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from advisor.compare.runner import CompareOptions, compare_dumps  # noqa: E402

START_US = 1_714_987_110_000_000


def write_dumps(root: Path, ops: int, elements: int, seed: int = 0) -> tuple[Path, Path]:
    """Golden and target folders for a Data -> Cast -> TransData -> Conv(+Relu) x ops chain."""
    golden_dir, target_dir = root / "golden", root / "target"
    golden_dir.mkdir(parents=True, exist_ok=True)
    target_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    side = int(np.sqrt(elements // 16)) or 1
    shape = (1, 16, side, side)
    clock = iter(range(START_US, START_US + 10 ** 9, 41))

    def golden(name: str, value: np.ndarray) -> None:
        np.save(golden_dir / f"{name}.0.{next(clock)}.npy", value)

    task = 2

    def target(op_type: str, name: str, inputs: list[np.ndarray], output: np.ndarray) -> None:
        nonlocal task
        stamp = next(clock)
        for slot, value in enumerate(inputs):
            np.save(target_dir / f"{op_type}.{name}.{task}.0.{stamp}.input.{slot}.npy", value)
        np.save(target_dir / f"{op_type}.{name}.{task}.0.{stamp}.output.0.npy", output)
        task += 1

    x = rng.standard_normal(shape).astype(np.float32)
    golden("images", x)
    target("Data", "images", [], x)
    on_device = x.astype(np.float16)
    target("Cast", "trans_Cast_0", [x], on_device)
    target("TransData", "trans_TransData_1", [on_device], on_device)
    for i in range(ops):
        conv = (x * 0.9 + 0.05 * rng.standard_normal(shape)).astype(np.float32)
        relu = np.maximum(conv, 0)
        golden(f"Conv_{2 * i}", conv)
        golden(f"Relu_{2 * i + 1}", relu)
        out = (relu + 1e-3 * rng.standard_normal(shape)).astype(np.float16)
        target("Conv2D", f"Conv_{2 * i}", [on_device], out)
        x, on_device = relu, out
    target("Cast", "trans_Cast_2", [on_device], on_device.astype(np.float32))
    return golden_dir, target_dir


def read_only(folders: list[Path]) -> float:
    """Seconds to ``np.load`` every ``.npy`` file of the folders (data really read into memory)."""
    started = time.perf_counter()
    total = 0
    for folder in folders:
        for path in folder.rglob("*.npy"):
            total += int(np.load(path).nbytes)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=300, help="Conv ops in the chain (default: 300)")
    parser.add_argument("--elements", type=int, default=262_144, help="elements per tensor (default: 262144)")
    parser.add_argument("--jobs", type=int, nargs="+", default=sorted({1, os.cpu_count() or 1}),
                        help="worker counts to time (default: 1 and every core)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step, best kept (default: 3)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the dumps here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="advisor-compare-") as tmp:
        root = args.keep or Path(tmp)
        started = time.perf_counter()
        golden_dir, target_dir = write_dumps(root, args.ops, args.elements)
        files = sum(1 for _ in golden_dir.glob("*.npy")) + sum(1 for _ in target_dir.glob("*.npy"))
        size = sum(p.stat().st_size for d in (golden_dir, target_dir) for p in d.glob("*.npy")) / 2 ** 20
        print(f"{files} dump files, {size:.0f} MiB (written in {time.perf_counter() - started:.1f} s)")
        read_only([golden_dir, target_dir])                     # warm the page cache
        reading = min(read_only([golden_dir, target_dir]) for _ in range(args.repeat))
        print(f"np.load of every file      {reading:7.2f} s   {size / reading:8.0f} MiB/s")
        for jobs in args.jobs:
            best, summary = float("inf"), None
            for _ in range(args.repeat):
                output = root / f"result_jobs{jobs}.csv"
                run_started = time.perf_counter()
                summary = compare_dumps(CompareOptions(golden_dir, target_dir, output, jobs=jobs, progress=False,
                                                       resume=False))
                best = min(best, time.perf_counter() - run_started)
            assert summary is not None
            print(f"advisor compare --jobs {jobs:<3} {best:7.2f} s   {summary.pairs / best:8.1f} pairs/s "
                  f"({summary.rows} rows, {summary.pairs} distinct pairs)   ratio {best / reading:5.2f}x reading")
    return 0


if __name__ == "__main__":
    sys.exit(main())
