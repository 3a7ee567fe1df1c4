"""The jobs of a batch as dask tasks: the cluster counterpart of advisor/batch/pool.py's ``execute``.

Same contract: one ``JobOutcome`` per task, in completion order, and a job's trouble is that job's
failure, never the batch's. A worker that dies while a job runs (a segfault in native code, the OOM
killer, a preempted node) is the scheduler's to notice: it sends the job to another worker, and
after ``distributed.scheduler.allowed-failures`` lost workers it gives up with ``KilledWorker``.
The scheduler cannot tell which of the jobs a dead worker held was guilty and gives up on all of
them. So, as the local pool does, those jobs run again at the end, one at a time (nothing else of
this batch on the cluster): an innocent one completes, the guilty one takes a worker down again and
its ``KilledWorker`` becomes that job's failure record. Every other job goes on.

Every task is submitted at once (the scheduler balances them and holds only their small
descriptions); outcomes stream back as they finish and are dropped from the cluster once read.
The tasks of a batch share one key prefix (one task group for the scheduler). A worker process runs one
job at a time whatever its thread count: the rule engine (durable_rules) keeps its rulesets in one
process-global C engine, so two analyses must not interleave in one process (start workers with
``--nthreads 1`` and more processes instead; see the README).
"""

from __future__ import annotations

import threading
import uuid
from asyncio import CancelledError
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from ..batch.pool import CRASH_MESSAGE, Executor, JobRunner
from ..batch.records import JobOutcome, failed
from ..batch.worker import JobTask

if TYPE_CHECKING:
    from distributed import Client

_ONE_JOB_AT_A_TIME = threading.Lock()      # per worker process (see the module docstring)

CANCELLED_MESSAGE = "not run: the dask cluster cancelled this job (the scheduler or the client went away)"


def executor(client: Client) -> Executor:
    """``run_batch(executor=...)``: the batch's jobs on this client's cluster."""
    return lambda tasks, workers, runner: execute(client, tasks, runner)


def execute(client: Client, tasks: Iterable[JobTask], runner: JobRunner) -> Iterator[JobOutcome]:
    """Yield one outcome per task, in completion order. ``runner`` must be importable on the workers."""
    tasks = list(tasks)
    suspects = yield from _run_all(client, tasks, runner)
    for task in suspects:               # each alone: only the guilty one can take a worker down now
        yield from _run_all(client, [task], runner, last_chance=True)


def _run_all(client: Client, tasks: list[JobTask], runner: JobRunner,
             last_chance: bool = False) -> Iterator[JobOutcome]:
    """Run ``tasks`` on the cluster; return those that were on a worker that died (see the docstring)."""
    from distributed import KilledWorker, as_completed
    from distributed.client import FutureCancelledError

    if not tasks:
        return []
    group = f"advisor-job-{uuid.uuid4().hex}"
    futures = {client.submit(run_exclusive, runner, task, key=(group, index), pure=False, retries=0): task
               for index, task in enumerate(tasks)}
    suspects: list[JobTask] = []
    try:
        for future in as_completed(futures, loop=client.loop):
            task = futures[future]
            try:
                yield future.result()
            except KilledWorker:
                if last_chance:
                    yield failed(task.job.name, CRASH_MESSAGE)
                else:
                    suspects.append(task)
            except (FutureCancelledError, CancelledError):
                yield failed(task.job.name, CANCELLED_MESSAGE)
            except Exception as exc:  # noqa: BLE001 - e.g. an outcome that cannot be pickled, a runner bug
                yield failed(task.job.name, f"internal error: {type(exc).__name__}: {exc}")
            finally:
                future.release()
    finally:
        client.cancel([f for f in futures if not f.done()])
    return suspects


def run_exclusive(runner: JobRunner, task: JobTask) -> JobOutcome:
    """On the worker: the job, never beside another job of this process."""
    with _ONE_JOB_AT_A_TIME:
        return runner(task)
