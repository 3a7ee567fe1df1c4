"""Worker functions for tests: pickled by reference, so they live in an importable module."""

from __future__ import annotations

import os
import signal

from advisor.batch.records import JobOutcome
from advisor.batch.worker import JobTask, run_job


def segfault_on_crash_jobs(task: JobTask) -> JobOutcome:
    """Jobs named crash* kill their worker the way a segfault in native code would."""
    if task.job.name.startswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    return run_job(task)


def raise_outside_the_job(task: JobTask) -> JobOutcome:
    """A bug in the runner itself (not inside run_job's own error handling)."""
    if task.job.name.startswith("bug"):
        raise RuntimeError("runner bug")
    return run_job(task)


def always_segfault(task: JobTask) -> JobOutcome:
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("unreachable")
