"""Run a batch: check it, resume or start a run in the history, run the jobs that need it in worker
processes, record each outcome the moment it arrives, then write the index page and the digest.

Idempotent: a job whose content hash (see hashing.py) equals its last good result's, and whose
reports are still on disk, is recorded as ``unchanged`` without being analysed again. Resumable:
a batch killed half-way leaves its run marked ``running``; the next run of the same batch (same
source, same job definitions) picks that run up and runs only the jobs it has no result for; what a
batch killed while publishing a job left in that job's report folder is removed when the job is
published again, or collected when it is found unchanged or fails.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..report.outset import collect
from .hashing import ConfigHasher, short
from .index import build_index_view, check_link_base, check_pages_ours, write_index
from .jobs import Batch
from .overview import RunOverview, build_overview
from .pool import Executor, JobRunner, execute
from .records import JobOutcome
from .store import HistoryStore, ResultRow
from .validate import check_options
from .worker import JobTask, publish, run_job

# Called in the parent after each outcome is stored: (outcome, jobs done so far, jobs to do).
ProgressCallback = Callable[[JobOutcome, int, int], None]


@dataclass(frozen=True)
class BatchResult:
    run_id: int
    resumed: bool
    already_done: int              # jobs a resumed run had finished before it was killed
    overview: RunOverview
    written: list[Path]            # index.html, digest.md


def default_workers(batch: Batch, workers: int | None) -> int:
    return workers or batch.workers or os.cpu_count() or 1


def run_batch(batch: Batch, *, workers: int | None = None, force: bool = False, runner: JobRunner = run_job,
              progress: ProgressCallback | None = None, link_base: str | None = None,
              executor: Executor = execute) -> BatchResult:
    """``force``: analyse every job even when unchanged. ``runner``: the worker function (tests).
    ``executor``: what runs the jobs (the local process pool, or a dask cluster: advisor/cluster);
    whichever it is, this process alone writes the history, the reports and the index.
    A full disk (or any failure to write the history or the index) stops the batch with one line;
    the run stays ``running`` in the history and the next run resumes it."""
    check_link_base(link_base)
    check_options(batch)                       # a bad batch stops here, before anything is written
    check_pages_ours(batch.output)
    try:
        return _run(batch, workers, force, runner, progress, link_base, executor)
    except (sqlite3.OperationalError, OSError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"cannot write the batch output or its history: {reason}", path=batch.output) from None


def _run(batch: Batch, workers: int | None, force: bool, runner: JobRunner, progress: ProgressCallback | None,
         link_base: str | None, executor: Executor) -> BatchResult:
    hasher = ConfigHasher()
    size = default_workers(batch, workers)
    store = HistoryStore.open(batch.history, create=True)
    try:
        with store.writer_lock():
            start = store.begin_run(batch, size)
            todo = [job for job in batch.jobs if job.name not in start.done]
            tasks, reusable = [], {}
            for job in todo:
                packs = hasher.pack_digests(job)
                previous = None if force else _reusable(store, job.name)
                if previous is not None:
                    reusable[job.name] = previous
                tasks.append(JobTask(job, hasher.config_digest(job, packs), packs,
                                     previous.job_hash if previous else None))
            outdirs = {job.name: job.outdir for job in todo}
            for done, outcome in enumerate(executor(tasks, max(1, min(size, len(tasks))), runner), 1):
                outcome = publish(outcome)
                if outcome.status != "ok":
                    collect(outdirs[outcome.job])    # a set a killed batch left half-published goes
                store.record(start.run_id, outcome, reusable.get(outcome.job) if outcome.status == "unchanged"
                             else None)
                if progress is not None:
                    progress(outcome, done, len(tasks))
            store.finish_run(start.run_id)
            overview = build_overview(store, start.run_id, [job.name for job in batch.jobs])
            view = build_index_view(overview, batch.output, _packs_used(store, overview), link_base)
            written = write_index(view, batch.output)
    finally:
        store.close()
    return BatchResult(start.run_id, start.resumed, len(start.done), overview, written)


def _reusable(store: HistoryStore, job: str) -> ResultRow | None:
    """The last good result, if its reports are still where it wrote them (else it must run again)."""
    previous = store.reusable(job)
    if previous is None or previous.job_hash is None or previous.report_dir is None:
        return None
    folder = Path(previous.report_dir)
    if not all((folder / name).is_file() for name in previous.report_files):
        return None
    return previous


def _packs_used(store: HistoryStore, overview: RunOverview) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str, str], None] = {}
    for job in overview.jobs:
        if job.result.verdict is not None:
            for pack in store.packs(job.result):
                seen[(pack.name, pack.version, short(pack.digest))] = None
    return list(seen)
