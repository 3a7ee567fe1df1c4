"""Speed-up of ``advisor batch`` and ``advisor compare`` on a dask cluster with 1, 2 and N workers.

    python -m benchmarks.scaleout                          # 24 jobs, 120 conv ops of 64k elements
    python -m benchmarks.scaleout --workers 1 2 4 --jobs 60 --ops 300 --elements 262144

For each worker count a real ``LocalCluster`` starts on loopback (worker processes, one thread each,
no dashboard), its workers import advisor once (not timed: a long-lived cluster has done it), then
the same batch (every job analysed, reports written by this process) and the same comparison (every
tensor pair computed, CSV written by this process) run on it through ``--scheduler``'s code path.
The baseline, measured in the same run: the batch with the local process pool and one worker, and
the comparison with one local worker process. Every run's reports / CSV are checked against the
baseline's, so a speed-up never comes from doing less.

A LocalCluster on one machine shares its cores: the speed-up is bounded by the cores (``os.cpu_count``)
and by whatever else runs (the load average is printed before and after). On a 2-core machine
expect at most ~2x, less under load; adding workers beyond the cores adds only overhead. The point
of --scheduler is more machines; this measures that the work spreads and what the cluster costs.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.batch.manifest import load_manifest  # noqa: E402
from advisor.batch.runner import run_batch  # noqa: E402
from advisor.cluster import require_distributed  # noqa: E402
from advisor.cluster.batch import executor  # noqa: E402
from advisor.cluster.compare import mapper  # noqa: E402
from advisor.compare.runner import CompareOptions, compare_dumps  # noqa: E402
from advisor.config import ProjectConfig  # noqa: E402
from benchmarks.batch import COMMITTED_CORPUS, corpus_csvs, write_manifest  # noqa: E402
from benchmarks.compare import write_dumps  # noqa: E402


@contextlib.contextmanager
def cluster(workers: int) -> Iterator[tuple[object, float]]:
    """(client, seconds to start the cluster and warm its workers)."""
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as local, Client(local, set_as_default=False) as client:
        client.run(_warm)
        yield client, time.perf_counter() - start


def _warm() -> None:
    import advisor.batch.worker  # noqa: F401
    import advisor.compare.runner  # noqa: F401


def time_batch(workdir: Path, manifest: Path, name: str, client: object | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process: the client's share, which no worker count divides)."""
    batch = load_manifest(manifest, ProjectConfig(), output=workdir / name)
    start, cpu = time.perf_counter(), time.process_time()
    if client is None:
        result = run_batch(batch, workers=1)
    else:
        result = run_batch(batch, workers=sum(client.nthreads().values()), executor=executor(client))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if result.overview.count("ok") != len(batch.jobs):
        raise SystemExit(f"benchmarks.scaleout: {name}: not every job was analysed")
    return seconds, cpu


def time_compare(dumps: tuple[Path, Path], out: Path, client: object | None) -> float:
    golden, target = dumps
    options = CompareOptions(golden, target, out, jobs=1, progress=False, resume=False,
                             mapper=None if client is None else mapper(client))
    start = time.perf_counter()
    compare_dumps(options)
    return time.perf_counter() - start


def same_reports(a: Path, b: Path) -> bool:
    files = sorted(str(p.relative_to(a)) for p in a.rglob("report.*") if ".advisor-reports" not in p.parts)
    match, mismatch, errors = filecmp.cmpfiles(a, b, files, shallow=False)
    return bool(files) and not mismatch and not errors


def measure(workdir: Path, jobs: int, ops: int, elements: int, counts: Sequence[int]) -> list[str]:
    manifest, size = write_manifest(workdir, corpus_csvs(COMMITTED_CORPUS), jobs, "html,md,json,txt")
    dumps = write_dumps(workdir / "dumps", ops=ops, elements=elements)
    dump_mib = sum(p.stat().st_size for p in (workdir / "dumps").rglob("*.npy")) / 2 ** 20
    lines = [f"batch: {jobs} jobs ({size / 2 ** 20:.1f} MiB of CSV); compare: {ops} conv ops, "
             f"{dump_mib:.0f} MiB of dumps; {os.cpu_count()} core(s)",
             f"load average (1 min) before: {os.getloadavg()[0]:.2f}", ""]
    batch_base, client_base = time_batch(workdir, manifest, "base", None)
    compare_base = time_compare(dumps, workdir / "base.csv", None)
    lines += [f"{'run':<30} {'start (s)':>9} {'batch (s)':>10} {'client CPU':>10} {'speed-up':>9} "
              f"{'compare (s)':>12} {'speed-up':>9}",
              f"{'local, 1 worker (baseline)':<30} {'':>9} {batch_base:>10.1f} {client_base:>10.1f} {1.0:>8.2f}x "
              f"{compare_base:>12.1f} {1.0:>8.2f}x"]
    for count in counts:
        with cluster(count) as (client, started):
            batch, client_cpu = time_batch(workdir, manifest, f"dask{count}", client)
            compare = time_compare(dumps, workdir / f"dask{count}.csv", client)
        same = same_reports(workdir / "base", workdir / f"dask{count}") and filecmp.cmp(
            workdir / "base.csv", workdir / f"dask{count}.csv", shallow=False)
        lines.append(f"{f'dask LocalCluster, {count} worker(s)':<30} {started:>9.1f} {batch:>10.1f} "
                     f"{client_cpu:>10.1f} {batch_base / batch:>8.2f}x {compare:>12.1f} {compare_base / compare:>8.2f}x"
                     + ("" if same else "  RESULTS DIFFER"))
        shutil.rmtree(workdir / f"dask{count}", ignore_errors=True)
    lines += ["", f"load average (1 min) after: {os.getloadavg()[0]:.2f}",
              f"On one machine the speed-up is bounded by its {os.cpu_count()} core(s) and by the other load; "
              "'start' (cluster start + workers importing advisor) is paid once per cluster, not per batch; "
              "'client CPU' is the batch process's own share (hashing, history, writing every report, the "
              "index page), which more workers do not divide."]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaleout", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=24, help="batch jobs (default 24)")
    parser.add_argument("--ops", type=int, default=120, help="conv ops in the dumps (default 120)")
    parser.add_argument("--elements", type=int, default=65536, help="elements per tensor (default 65536)")
    cores = os.cpu_count() or 1
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, 2, cores}),
                        help=f"worker counts (default: 1 2 {cores})")
    args = parser.parse_args(argv)
    if min(args.jobs, args.ops, args.elements, *args.workers) < 1:
        parser.error("--jobs, --ops, --elements and --workers must be at least 1")
    require_distributed()
    with tempfile.TemporaryDirectory(prefix="advisor-scaleout-") as folder:
        print("\n".join(measure(Path(folder), args.jobs, args.ops, args.elements, args.workers)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
