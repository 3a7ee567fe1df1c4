"""Run job tasks in worker processes and hand back each outcome as soon as it exists.

Start method: ``forkserver`` where the platform has it, else ``spawn``; never plain ``fork``. The
parent holds an open SQLite connection and the executor's own threads, and a forked child would
inherit both mid-state (SQLite forbids using a connection across fork; CPython warns about forking
a threaded process). durable_rules keeps its rulesets in a process-global C engine: a worker must
start clean, not as a copy of a process that may have compiled rules. A forkserver child is forked
from a single-threaded server that imported advisor (preload.py) but never analysed anything, so a
worker starts in milliseconds instead of re-importing pandas and the engine.

At most ``workers`` tasks are in flight. A worker that dies (a segfault in native code, the OOM
killer) breaks the whole executor, and every task in flight fails with BrokenProcessPool without
saying which one was guilty. So the tasks that were in flight are re-run one at a time, each in a
fresh single-worker pool: the guilty one fails again, alone, and becomes that job's failure record;
the others complete. Then the remaining tasks continue in a fresh pool. Nothing already finished
is lost or redone. Workers leave on their own when the batch process dies (worker.watch_parent).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver
from pathlib import Path

from .records import JobOutcome, failed
from .worker import JobTask, run_job, watch_parent

JobRunner = Callable[[JobTask], JobOutcome]
# What runs a batch's tasks: ``execute`` below on this machine, advisor/cluster/batch.py on a dask cluster.
# (tasks, workers, runner) -> one outcome per task, in completion order, never raising for a job's trouble.
Executor = Callable[[list[JobTask], int, JobRunner], Iterable[JobOutcome]]
PRELOAD = "advisor.batch.preload"
MAX_STALLS = 3

CRASH_MESSAGE = ("the worker process died while analysing this job (a crash in native code, or killed by "
                 "the out-of-memory killer); the other jobs are unaffected")
STALL_MESSAGE = "not run: worker processes kept dying before they could start a job"


def start_method() -> str:
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def new_pool(workers: int) -> ProcessPoolExecutor:
    context = multiprocessing.get_context(start_method())
    if start_method() == "forkserver":
        context.set_forkserver_preload([PRELOAD])    # read once, when the server starts
        _start_forkserver()
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=watch_parent)


def _start_forkserver() -> None:
    """Start the fork server, if it is not running yet, so that it preloads the advisor this process runs.

    Python starts the server as ``python -c ...``, which puts the current folder first on sys.path
    (and 3.11/3.12 ignore the sys.path the parent hands over). Started inside a source checkout, the
    server would preload that checkout's ``advisor`` package, and every worker forked from it would
    analyse with the checkout's code and ``rules/`` instead of the installed ones, their pack digests
    matching nothing this process hashed. So the server starts with PYTHONSAFEPATH (the current folder
    left out) and the folder this process imported advisor from first on PYTHONPATH; both only while
    it starts. Workers still get this process's sys.path when they start.
    """
    package_home = str(Path(__file__).resolve().parents[2])       # the folder holding advisor/
    wanted = {"PYTHONSAFEPATH": "1",
              "PYTHONPATH": os.pathsep.join(p for p in (package_home, os.environ.get("PYTHONPATH")) if p)}
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        forkserver.ensure_running()
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def execute(tasks: Iterable[JobTask], workers: int, runner: JobRunner = run_job) -> Iterator[JobOutcome]:
    """Yield one outcome per task, in completion order. ``runner`` must be a module-level function
    (it is pickled by reference); tests pass their own."""
    pending = deque(tasks)
    stalls = 0
    while pending:
        before = len(pending)
        suspects = yield from _run_until_broken(pending, workers, runner)
        for task in suspects:           # each alone: only the guilty one can break its pool now
            yield from _run_alone(task, runner)
        stalls = stalls + 1 if len(pending) == before else 0
        if stalls >= MAX_STALLS:        # pools break before any job runs: the workers cannot start
            while pending:
                yield failed(pending.popleft().job.name, STALL_MESSAGE)


def _run_until_broken(pending: deque[JobTask], workers: int, runner: JobRunner) -> Iterator[JobOutcome]:
    """Run from ``pending`` until it is empty or the pool breaks; return the tasks caught in the break.

    A break can surface in ``submit`` as well as in a result, while the executor's thread is still
    settling the other futures. So on a break the pool is shut down first, then every future is
    read: a job that finished just before keeps its result, one that never started goes back to
    ``pending``, and only those that were running when a worker died become suspects.
    """
    in_flight: dict[Future[JobOutcome], JobTask] = {}
    suspects: list[JobTask] = []
    pool = new_pool(workers)
    try:
        while pending or in_flight:
            broken = False
            while pending and len(in_flight) < workers and not broken:
                task = pending.popleft()
                try:
                    in_flight[pool.submit(runner, task)] = task
                except BrokenProcessPool:
                    pending.appendleft(task)
                    broken = True
            if not broken:
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = _settled(future, in_flight.pop(future), pending, suspects)
                    if outcome is not None:
                        yield outcome
                broken = bool(suspects)
            if broken:
                pool.shutdown(wait=True, cancel_futures=True)
                for future, task in in_flight.items():
                    outcome = _settled(future, task, pending, suspects)
                    if outcome is not None:
                        yield outcome
                return suspects
        return suspects
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _settled(future: Future[JobOutcome], task: JobTask, pending: deque[JobTask],
             suspects: list[JobTask]) -> JobOutcome | None:
    """The outcome of a settled future, or None after putting its task where it belongs: back in
    ``pending`` if it never started, among the ``suspects`` if the pool broke while it ran."""
    try:
        return future.result()
    except CancelledError:
        pending.appendleft(task)
    except BrokenProcessPool:
        suspects.append(task)
    except Exception as exc:  # noqa: BLE001 - e.g. an outcome that cannot be pickled
        return failed(task.job.name, f"internal error: {type(exc).__name__}: {exc}")
    return None


def _run_alone(task: JobTask, runner: JobRunner) -> Iterator[JobOutcome]:
    pool = new_pool(1)
    try:
        yield pool.submit(runner, task).result()
    except BrokenProcessPool:
        yield failed(task.job.name, CRASH_MESSAGE)
    except Exception as exc:  # noqa: BLE001
        yield failed(task.job.name, f"internal error: {type(exc).__name__}: {exc}")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
