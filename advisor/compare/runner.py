"""``advisor compare`` end to end: scan, fingerprint, pair, compare, write - streaming and resumable.

1. Scan both folders (file names and ``.npy`` headers only).
2. Fingerprint every target dump (:mod:`advisor.tensors.lineage`), in worker processes.
3. Pair (:mod:`advisor.tensors.pairing`): rows, and the distinct comparisons they need. An op's input holds its
   producer's bytes, so most input rows share the comparison of their producer's output row.
4. Compute each distinct comparison in worker processes: one pair of tensors in memory per
   worker at a time (memory-mapped), only the formatted cells travel back.
5. Write the CSV (atomically) and drop the journal.

Steps 2 and 4 append each result to the journal (:mod:`journal`) as it arrives: an interrupted
run, started again with the same arguments, skips what is done.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ..progress import ProgressBar
from ..tensors.fusion import FusionMap, read_fusion_map
from ..tensors.inventory import DumpFolder, scan_folder
from ..tensors.lineage import TensorPrint, fingerprint, load_dump
from ..tensors.pairing import Plan, PlannedRow, golden_shapes, plan_rows, target_ops, target_shapes
from .journal import Journal, run_signature
from .msaccucmp_csv import PairMetrics, format_row, pair_metrics, result_file_name, write_result_rows
from .tuning import single_threaded_blas, start_worker

BATCH_ITEMS = 32               # most tensors one worker task handles
BATCH_BYTES = 32 * 1024 ** 2   # ... and most bytes: small enough to balance, big enough to amortise


@dataclass
class CompareOptions:
    golden: Path
    target: Path
    output: Path                                  # a CSV path, or a folder for result_<time>.csv
    graph: Path | None = None
    jobs: int | None = None                       # worker processes (default: every core)
    progress: bool | None = None                  # None: when stderr is a terminal and CI is not set
    resume: bool = True


@dataclass
class CompareSummary:
    output: Path
    rows: int
    pairs: int                                    # distinct comparisons
    computed: int                                 # ... computed by this run (the rest resumed)
    pairing: str
    seconds: float
    notes: list[str] = field(default_factory=list)


def _is_folder(output: Path) -> bool:
    return output.is_dir() or str(output).endswith(("/", os.sep))


def output_path(output: Path, now: datetime | None = None) -> Path:
    """``output`` itself, or ``output/result_<YYYYmmddHHMMSS>.csv`` when it is a folder."""
    return output / result_file_name(now or datetime.now()) if _is_folder(output) else output


def journal_path(output: Path) -> Path:
    """Where the resume journal of a run writing to ``output`` lives (the same for every attempt,
    even when the CSV name carries the time)."""
    return output / ".advisor-compare.journal" if _is_folder(output) else output.with_name(output.name + ".journal")


def compare_dumps(options: CompareOptions, stream: TextIO | None = None) -> CompareSummary:
    """Compare the dump folders and write the msaccucmp CSV (see the module docstring)."""
    started = time.monotonic()
    golden = scan_folder(options.golden, "golden")
    target = scan_folder(options.target, "target")
    fusion = _fusion(options.graph, golden, target)
    output = output_path(options.output)
    journal = Journal(journal_path(options.output), run_signature(golden, target, options.graph),
                      resume=options.resume)
    jobs = max(1, options.jobs or os.cpu_count() or 1)
    journal.open()
    try:
        prints = _fingerprints(target, journal, jobs, options.progress, stream)
        plan = plan_rows(golden, target, prints, fusion)
        computed = _comparisons(plan, golden, target, journal, jobs, options.progress, stream)
        rows = [format_row(row.labels, _metrics(row, golden, journal)) for row in plan.rows]
        write_result_rows(rows, output)
    except BaseException:
        journal.close(remove=False)
        raise
    journal.close(remove=True)
    notes = [*plan.notes, *(f"skipped {n}" for n in golden.skipped + target.skipped)]
    return CompareSummary(output, len(rows), len(plan.pairs()), computed, plan.pairing,
                          time.monotonic() - started, notes)


def _fusion(graph: Path | None, golden: DumpFolder, target: DumpFolder) -> FusionMap | None:
    if graph is None:
        return None
    return read_fusion_map(graph, target_shapes(target_ops(target)), golden_shapes(golden))


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _pair_key(row: PlannedRow, golden: DumpFolder) -> str:
    dtype, shape, crc, adler, _ = row.pair_key
    return f"{dtype}|{shape}|{crc}|{adler}|{_relative(row.golden.path, golden.root)}"


def _metrics(row: PlannedRow, golden: DumpFolder, journal: Journal) -> PairMetrics | None:
    return journal.pairs[_pair_key(row, golden)] if row.pair_key is not None else None


def _fingerprints(target: DumpFolder, journal: Journal, jobs: int, progress: bool | None,
                  stream: TextIO | None) -> dict[str, TensorPrint]:
    todo = [(_relative(f.path, target.root), str(f.path), f.nbytes) for f in target.files
            if _relative(f.path, target.root) not in journal.prints]
    bar = ProgressBar("reading target", len(target.files), stream=stream, enabled=progress,
                      done=len(target.files) - len(todo))
    run_batches(_fingerprint_batch, [((key, path), size) for key, path, size in todo], jobs,
                lambda key, value: (journal.add_print(key, value), bar.advance()))
    bar.close()
    return {str(target.root / key): value for key, value in journal.prints.items()}


def _comparisons(plan: Plan, golden: DumpFolder, target: DumpFolder, journal: Journal, jobs: int,
                 progress: bool | None, stream: TextIO | None) -> int:
    unique = {_pair_key(row, golden): row for row in plan.pairs().values()}
    todo = [((key, str(row.target.path), str(row.golden.path)), row.target.nbytes + row.golden.nbytes)
            for key, row in unique.items() if key not in journal.pairs]
    bar = ProgressBar("comparing pairs", len(unique), stream=stream, enabled=progress,
                      done=len(unique) - len(todo))
    run_batches(_compare_batch, todo, jobs, lambda key, value: (journal.add_pair(key, value), bar.advance()))
    bar.close()
    return len(todo)


# --- workers ---------------------------------------------------------------------------------

def _fingerprint_batch(items: list[tuple[str, str]]) -> list[tuple[str, TensorPrint]]:
    return [(key, fingerprint(Path(path))) for key, path in items]


def _compare_batch(items: list[tuple[str, str, str]]) -> list[tuple[str, PairMetrics]]:
    return [(key, pair_metrics(load_dump(Path(npu)), load_dump(Path(golden)))) for key, npu, golden in items]


def _worker_start() -> None:
    """One BLAS thread and a malloc that keeps memory (tuning.py); Ctrl-C is the main process's
    to handle: it stops submitting, lets the batches in flight finish and keeps the journal."""
    start_worker()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def batches(items: Iterable[tuple[Any, int]]) -> list[list[Any]]:
    """Group (item, bytes) into worker tasks of at most BATCH_ITEMS items and about BATCH_BYTES."""
    grouped: list[list[Any]] = []
    current: list[Any] = []
    size = 0
    for item, nbytes in items:
        if current and (len(current) >= BATCH_ITEMS or size + nbytes > BATCH_BYTES):
            grouped.append(current)
            current, size = [], 0
        current.append(item)
        size += nbytes
    if current:
        grouped.append(current)
    return grouped


def run_batches(worker: Callable[[list[Any]], list[tuple[str, Any]]], items: list[tuple[Any, int]],
                jobs: int, on_result: Callable[[str, Any], Any]) -> None:
    """Run ``worker`` over batches of ``items`` in ``jobs`` worker processes, and hand every
    (key, value) to ``on_result`` in the main process as soon as its batch is done. A single batch
    runs in this process: not worth a worker."""
    grouped = batches(items)
    if len(grouped) <= 1:
        with single_threaded_blas():
            for group in grouped:
                for key, value in worker(group):
                    on_result(key, value)
        return
    # fork: workers start in milliseconds and inherit the imported modules (Linux, macOS).
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    executor = ProcessPoolExecutor(max_workers=min(jobs, len(grouped)), mp_context=context,
                                   initializer=_worker_start)
    pending: set[Future] = set()
    queue = iter(grouped)
    try:
        # Keep a couple of tasks per worker in flight: results stream back in order of completion
        # and memory stays bounded however many tensors there are.
        for group in queue:
            pending.add(executor.submit(worker, group))
            if len(pending) >= 2 * jobs:
                break
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                for key, value in future.result():
                    on_result(key, value)
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(executor.submit(worker, nxt))
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
