"""The unit of work of ``advisor compare`` and the map that runs it: where a scheduler plugs in.

- :func:`compare_pair` is a pure function of one :class:`PairTask` (paths only, picklable) to one
  :class:`PairResult` (the target's fingerprint and the formatted metric cells of the pair: a few
  hundred bytes). It reads the target dump once: fingerprint and metrics come from the same pages.
- :func:`compare_batch` runs it over a list of tasks (what travels to a worker).
- A :data:`Mapper` runs ``compare_batch`` over batches and yields each batch's results as it
  completes, in any order: :func:`local_mapper` uses worker threads in this process; a cluster
  mapper (e.g. ``dask.distributed``: ``client.map`` then ``as_completed``) has workers that read
  the same paths from shared storage. :func:`run` batches the tasks, feeds the mapper and hands
  every result to a callback on the client, which alone writes the journal and the CSV.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tensors import kernel
from ..tensors.lineage import Fingerprinter, TensorPrint, fingerprint_array, load_dump
from ..tensors.metrics import comparison_of, size_mismatch
from ..tensors.npyfile import NpyFile, dtype_name
from ..tensors.running import WHOLE, file_sums
from .msaccucmp_csv import PairMetrics, cells_of, pair_metrics
from .tuning import single_threaded_blas

BATCH_ITEMS = 32               # most tasks one batch holds
BATCH_BYTES = 32 * 1024 ** 2   # ... and most bytes: small enough to balance, big enough to amortise


@dataclass(frozen=True)
class PairTask:
    """Read one target dump: fingerprint it and/or compare it with one golden dump."""

    key: str                       # the target file's journal key (its path under the target root)
    target: str                    # target dump path
    golden: str | None = None      # golden dump to compare with (None: fingerprint only)
    golden_key: str | None = None  # its path under the golden root (part of the pair key)
    fingerprint: bool = True       # fingerprint the target (False: already known)
    pair_key: str | None = None    # the pair key when known (else made from the fingerprint)
    nbytes: int = 0                # bytes the task reads (for batching)
    compiled: bool = False         # the run decided for the compiled pass (tensors/kernel.py: use_in_run)


@dataclass(frozen=True)
class PairResult:
    key: str
    print: TensorPrint | None
    pair_key: str | None
    metrics: PairMetrics | None


def pair_key(dtype: str, shape: tuple[int, ...], mark: TensorPrint, golden_key: str) -> str:
    """Rows whose target bytes (dtype, shape, checksums) and golden file agree share one comparison."""
    return f"{dtype}|{tuple(shape)}|{mark.crc32}|{mark.adler32}|{golden_key}"


def compare_pair(task: PairTask) -> PairResult:
    """The fingerprint of the task's target dump and its metrics against the golden dump, both
    from one read of the target (in chunks: tensors.npyfile, tensors.running)."""
    if task.compiled:
        kernel.compiled()       # loaded once per process (run() loads it before a local run's threads start)
    target = NpyFile.open(task.target)
    golden = None
    try:
        golden = NpyFile.open(task.golden) if task.golden is not None else None
        if target.fortran or (golden is not None and golden.fortran):
            return _compare_loaded(task)
        printer = Fingerprinter(target.dtype) if task.fingerprint else None
        metrics = None
        if golden is not None and golden.size == target.size:
            sums = file_sums(target, golden, on_target=printer.update if printer else None,
                             compiled=kernel.use_in_run(target.size, task.compiled))
            metrics = cells_of(comparison_of(sums))
        elif printer is not None:
            for piece in ([target.read("target")] if target.size <= WHOLE else target.chunks(WHOLE)):
                printer.update(piece)
    finally:
        target.close()
        if golden is not None:
            golden.close()
    if golden is not None and metrics is None:
        metrics = cells_of(size_mismatch(target.size, golden.size))
    return _result(task, dtype_name(target.dtype), target.shape, printer.result() if printer else None, metrics)


def _compare_loaded(task: PairTask) -> PairResult:
    """:func:`compare_pair` for dumps stored in Fortran order: loaded (memory-mapped) as arrays."""
    target = load_dump(Path(task.target))
    mark = fingerprint_array(target) if task.fingerprint else None
    compiled = kernel.use_in_run(target.size, task.compiled)
    metrics = pair_metrics(target, load_dump(Path(task.golden)), compiled) if task.golden is not None else None
    return _result(task, target.dtype.name, target.shape, mark, metrics)


def _result(task: PairTask, dtype: str, shape: tuple[int, ...], mark: TensorPrint | None,
            metrics: PairMetrics | None) -> PairResult:
    if metrics is None:
        return PairResult(task.key, mark, None, None)
    key = task.pair_key
    if key is None:
        assert mark is not None and task.golden_key is not None
        key = pair_key(dtype, shape, mark, task.golden_key)
    return PairResult(task.key, mark, key, metrics)


def compare_batch(tasks: list[PairTask]) -> list[PairResult]:
    return [compare_pair(task) for task in tasks]


#: (batch function, batches) -> each batch's results, in order of completion.
Mapper = Callable[[Callable[[list[PairTask]], list[PairResult]], Iterator[list[PairTask]]],
                  Iterable[list[PairResult]]]


def batches(tasks: Iterable[PairTask], workers: int = 1) -> list[list[PairTask]]:
    """Group tasks into batches of at most BATCH_ITEMS tasks and about BATCH_BYTES, largest tasks
    first, each batch at most half of what is left per worker: the batches shrink towards the end,
    so no worker is left alone with a large one while the others wait (work balanced by bytes)."""
    ordered = sorted(tasks, key=lambda task: -task.nbytes)         # stable: equal sizes keep their order
    remaining = sum(task.nbytes for task in ordered)
    grouped: list[list[PairTask]] = []
    current: list[PairTask] = []
    size = 0
    for task in ordered:
        limit = min(BATCH_BYTES, (remaining + size) // (2 * max(1, workers)))
        if current and (len(current) >= BATCH_ITEMS or size + task.nbytes > limit):
            grouped.append(current)
            current, size = [], 0
        current.append(task)
        size += task.nbytes
        remaining -= task.nbytes
    if current:
        grouped.append(current)
    return grouped


def run(tasks: list[PairTask], on_results: Callable[[list[PairResult]], Any], mapper: Mapper | None = None,
        jobs: int = 1) -> None:
    """Compare every task (``mapper``: default :func:`local_mapper` with ``jobs`` threads) and
    hand each batch's results to ``on_results`` on this side as soon as the batch is done."""
    grouped = batches(tasks, jobs)
    if not grouped:
        return
    if mapper is None and any(task.compiled for task in tasks):
        kernel.warm_up()        # numba and the float32 loops, once, before the threads need them
    mapper = mapper or local_mapper(jobs)
    for results in mapper(compare_batch, iter(grouped)):
        on_results(results)


def local_mapper(jobs: int) -> Mapper:
    """Worker threads in this process (one batch, or one job: this thread).

    Threads, not processes: what a pair costs is spent in code that lets the other threads run
    (reading into buffers, the checksums, numpy's loops, the compiled pass, which numba runs
    without the GIL), so ``jobs`` threads keep that many cores busy, and they share the process's
    numba, its imports and its buffers, where each worker process paid for a fork, the pages it
    copied and buffers of its own: two processes took 50-70% more CPU time than one for the same
    run, two threads 0-25% (benchmarks/compare.py, 950 MB of dumps, 2 cores). The price is the
    Python around each pair, which holds the GIL: about a quarter of a pair of 256k elements (less
    for larger tensors), which bounds the speedup near four threads; beyond that, a dask cluster
    of worker processes (``--scheduler``) spreads the pairs further."""
    def mapper(function: Callable[[list[PairTask]], list[PairResult]],
               grouped: Iterator[list[PairTask]]) -> Iterator[list[PairResult]]:
        pending_batches = list(grouped)
        with single_threaded_blas():
            if len(pending_batches) <= 1 or jobs <= 1:
                for group in pending_batches:
                    yield function(group)
                return
            yield from _in_threads(function, pending_batches, jobs)
    return mapper


def _in_threads(function: Callable[[list[PairTask]], list[PairResult]], grouped: list[list[PairTask]],
                jobs: int) -> Iterator[list[PairResult]]:
    """``function`` over the batches on ``jobs`` threads. On Ctrl-C (raised in this thread) or an
    error, no batch is started any more and those in flight finish: the journal keeps what was done."""
    executor = ThreadPoolExecutor(max_workers=min(jobs, len(grouped)), thread_name_prefix="advisor-compare")
    pending: set[Future] = set()
    queue = iter(grouped)
    try:
        # Keep a couple of batches per worker in flight: results stream back in order of completion
        # and memory stays bounded however many tensors there are.
        for group in queue:
            pending.add(executor.submit(function, group))
            if len(pending) >= 2 * jobs:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(executor.submit(function, nxt))
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
