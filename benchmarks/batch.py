"""How long ``advisor batch`` takes over many jobs with one worker and with every core.

    python -m benchmarks.batch                           # 200 jobs from tests/data/scenarios
    python -m benchmarks.batch --corpus DIR --jobs 400   # a generated corpus (python -m benchmarks.scenarios)

A manifest of N jobs is written, each job a copy (under its own name) of a scenario's comparison CSV,
cycling through the corpus. Then, in fresh processes, the same batch runs into fresh output folders
with ``--workers 1`` and with ``--workers <cores>`` (every job analysed and its reports written), and
once more over the second history (every job unchanged: the cost of hashing and skipping). Each run is
timed from process start to exit, as cron waits for it. From the history (each worker records its
job's wall and CPU time): "busy workers" is the jobs' wall time over the batch's, how many workers
had a job at any moment; "cores used" is the jobs' CPU time over the batch's wall time, how many
cores actually computed. On a quiet machine the two agree; when other processes hold the cores,
"cores used" falls below "busy workers" and the wall-time speed-up understates the batch.
With ``--repeat N`` the two full runs alternate N times and the best wall time of each counts. The
load average before and after is printed: other processes competing for the cores make the speed-up
look worse than it is.

It is a measurement: exit 0, or 1 when ``--min-speedup`` is given and not reached, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
COMMITTED_CORPUS = REPO / "tests" / "data" / "scenarios"
DEFAULT_JOBS = 200
DEFAULT_FORMATS = "html,md,json,txt"


@dataclass
class BatchTiming:
    workers: int
    wall: float                 # seconds, process start to exit
    analysed: int
    unchanged: int
    failed: int
    busy: float                 # sum of job wall times / batch wall time: workers with a job, on average
    cores: float                # sum of job CPU times / batch wall time: cores that computed, on average

    @property
    def jobs_per_second(self) -> float:
        return (self.analysed + self.unchanged + self.failed) / self.wall


def _spin(seconds: float) -> float:
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        pass
    return (time.process_time() - cpu) / (time.perf_counter() - start)


def cores_available(workers: int, seconds: float = 2.0) -> float:
    """CPU time over wall time of ``workers`` processes that only spin: what the machine gives now."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        return sum(pool.map(_spin, [seconds] * workers))


def corpus_csvs(corpus: Path) -> list[Path]:
    found = sorted(corpus.glob("*/result_*.csv"))
    if not found:
        raise SystemExit(f"benchmarks.batch: no */result_*.csv under {corpus}")
    return found


def write_manifest(workdir: Path, sources: Sequence[Path], jobs: int, formats: str) -> tuple[Path, int]:
    """jobs copies of the sources, cycling, each under its own name; returns (manifest, input bytes)."""
    inputs = workdir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    entries, total = [], 0
    for i in range(jobs):
        source = sources[i % len(sources)]
        target = inputs / f"job{i:04d}_{source.parent.name}.csv"
        shutil.copyfile(source, target)
        total += target.stat().st_size
        entries.append({"name": f"job{i:04d}", "input": str(target.relative_to(workdir))})
    manifest = workdir / "batch.yaml"
    manifest.write_text(yaml.safe_dump({"title": f"benchmark: {jobs} jobs", "defaults": {"formats": formats},
                                        "jobs": entries}, sort_keys=False), encoding="utf-8")
    return manifest, total


def run_batch(manifest: Path, output: Path, workers: int) -> BatchTiming:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "advisor", "batch", str(manifest), "-o", str(output),
                           "--workers", str(workers), "-q"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"advisor batch exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    with sqlite3.connect(output / "history.sqlite") as db:
        run_id = db.execute("SELECT MAX(id) FROM runs").fetchone()[0]
        counts = dict(db.execute("SELECT status, COUNT(*) FROM results WHERE run_id = ? GROUP BY status", (run_id,)))
        busy, cpu = db.execute("SELECT SUM(duration), SUM(cpu) FROM results WHERE run_id = ?", (run_id,)).fetchone()
    return BatchTiming(workers, wall, counts.get("ok", 0), counts.get("unchanged", 0), counts.get("failed", 0),
                       (busy or 0.0) / wall, (cpu or 0.0) / wall)


def measure(jobs: int, corpus: Path, workers: int, formats: str, workdir: Path, repeat: int = 1) -> dict[str, object]:
    sources = corpus_csvs(corpus)
    manifest, size = write_manifest(workdir, sources, jobs, formats)
    load_before = _load()
    available = cores_available(workers)
    singles, parallels = [], []
    for attempt in range(repeat):        # fresh output folders: every job is analysed each time
        singles.append(run_batch(manifest, workdir / f"out-1-{attempt}", 1))
        parallels.append(run_batch(manifest, workdir / f"out-{workers}-{attempt}", workers))
    unchanged = run_batch(manifest, workdir / f"out-{workers}-{repeat - 1}", workers)
    single, parallel = min(singles, key=lambda t: t.wall), min(parallels, key=lambda t: t.wall)
    return {"jobs": jobs, "corpus": str(corpus), "sources": len(sources), "input_mib": size / 2**20,
            "formats": formats, "cores": os.cpu_count(), "repeat": repeat, "load_before": load_before,
            "load_after": _load(), "cores_available": available, "single": single, "parallel": parallel,
            "unchanged": unchanged, "speedup": single.wall / parallel.wall}


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def render(result: dict[str, object]) -> str:
    single, parallel, unchanged = (result[k] for k in ("single", "parallel", "unchanged"))
    assert isinstance(single, BatchTiming) and isinstance(parallel, BatchTiming)
    assert isinstance(unchanged, BatchTiming)
    lines = [f"advisor batch: {result['jobs']} jobs ({result['sources']} scenario CSVs cycled, "
             f"{result['input_mib']:.1f} MiB of input), formats {result['formats']}, {result['cores']} core(s), "
             f"best of {result['repeat']}",
             f"load average (1 min) before {_fmt(result['load_before'])}, after {_fmt(result['load_after'])}",
             "",
             f"{'run':<28} {'workers':>7} {'wall (s)':>9} {'jobs/s':>7} {'busy workers':>13} {'cores used':>11}"]
    for label, timing in (("all analysed", single), ("all analysed", parallel), ("all unchanged (skipped)", unchanged)):
        lines.append(f"{label:<28} {timing.workers:>7} {timing.wall:>9.1f} {timing.jobs_per_second:>7.2f} "
                     f"{timing.busy:>13.2f} {timing.cores:>11.2f}")
        if timing.failed:
            lines.append(f"  ({timing.failed} job(s) failed)")
    lines += ["", f"speed-up with {parallel.workers} workers: {result['speedup']:.2f}x (ideal {parallel.workers}x; "
                  f"{parallel.workers} spinning processes got {result['cores_available']:.2f} cores before the runs)"]
    return "\n".join(lines)


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "n/a"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.batch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS, help=f"jobs in the batch (default {DEFAULT_JOBS})")
    parser.add_argument("--corpus", type=Path, default=COMMITTED_CORPUS,
                        help="folder of scenarios (*/result_*.csv); default: tests/data/scenarios")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="workers of the parallel run (default: every core)")
    parser.add_argument("--formats", default=DEFAULT_FORMATS, help=f"report formats (default {DEFAULT_FORMATS})")
    parser.add_argument("--repeat", type=int, default=1, help="alternate the two full runs N times, keep the best")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it (default: a temp folder)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures as JSON")
    parser.add_argument("--min-speedup", type=float, metavar="X", help="exit 1 when the speed-up is below X")
    args = parser.parse_args(argv)
    if min(args.jobs, args.workers, args.repeat) < 1:
        parser.error("--jobs, --workers and --repeat must be at least 1")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = measure(args.jobs, args.corpus, args.workers, args.formats, args.keep, args.repeat)
    else:
        with tempfile.TemporaryDirectory(prefix="advisor-batch-bench-") as folder:
            result = measure(args.jobs, args.corpus, args.workers, args.formats, Path(folder), args.repeat)
    print(render(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps({k: asdict(v) if isinstance(v, BatchTiming) else v
                                         for k, v in result.items()}, indent=2), encoding="utf-8")
    if args.min_speedup is not None and float(result["speedup"]) < args.min_speedup:  # type: ignore[arg-type]
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
