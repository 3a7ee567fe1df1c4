"""Scale-out on a dask.distributed cluster: ``advisor batch --scheduler`` and ``advisor compare --scheduler``.

The advisor's own process stays the client and the only writer: the history database, the batch
index and digest, every job's report set and the comparison CSV (with its resume journal) are written
by it, atomically, exactly as in a run on one machine. Workers only read inputs (from storage every
worker and the client see at the same paths) and send back results: a job's outcome with its
rendered reports, or the metric cells of a batch of tensor pairs.

    connect     the client for ``--scheduler ADDRESS`` (or a scheduler file), checked on the way in
    batch.py    the jobs of a batch as dask tasks, one outcome per job, a lost worker -> that job fails
    compare.py  a ``mapper`` for advisor/compare/runner.py: batches of tensor pairs as dask tasks

``distributed`` is the ``cluster`` extra; without it ``--scheduler`` stops with one line (exit 2).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..errors import UsageError

if TYPE_CHECKING:
    from distributed import Client

CONNECT_TIMEOUT = "30s"             # to reach the scheduler, and for a first worker to join it
INSTALL_HINT = "--scheduler needs dask.distributed: pip install 'advisor[cluster]' (or pip install distributed)"


def require_distributed() -> None:
    """Stop with one line (exit 2) when dask.distributed is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


@contextlib.contextmanager
def connect(scheduler: str) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler``: an address (``tcp://host:8786``) or the JSON file a
    scheduler writes with ``--scheduler-file`` (the usual way on SLURM). Closed on the way out; the
    cluster itself keeps running. Every worker must run this advisor version (the reports must be
    what this version would write), checked before any work is sent."""
    require_distributed()
    from distributed import Client

    is_file = Path(scheduler).is_file()
    try:
        client = (Client(scheduler_file=scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False) if is_file
                  else Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False))
    except (OSError, ValueError) as exc:        # refused, timed out (TimeoutError is an OSError), bad address
        raise UsageError(f"cannot reach the dask scheduler at {scheduler}: {exc}") from None
    try:
        check_workers(client, scheduler)
        yield client
    finally:
        client.close()


def check_workers(client: Client, scheduler: str) -> None:
    """At least one worker, each running this advisor version."""
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
    except TimeoutError:
        raise UsageError(f"no dask worker joined the scheduler at {scheduler} within {CONNECT_TIMEOUT}") from None
    versions = client.run(_advisor_version)
    wrong = sorted(f"{worker} has {version}" for worker, version in versions.items() if version != __version__)
    if wrong:
        raise UsageError(f"the workers of {scheduler} must run advisor {__version__}: {'; '.join(wrong[:3])}"
                         + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else ""))


def worker_threads(client: Client) -> int:
    """How many tasks the cluster runs at once (its worker threads)."""
    return max(1, sum(client.nthreads().values()))


def _advisor_version() -> str:
    try:
        from advisor import __version__ as version
    except ImportError:
        return "no advisor installed"
    return version
