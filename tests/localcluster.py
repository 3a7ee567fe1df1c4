"""A real dask LocalCluster for the --scheduler tests: worker processes on loopback, one thread each.

One per test module (it takes a few seconds to start). ``allowed-failures`` 0 and ``worker-saturation``
1.0: a worker holds exactly the one task it runs, and a task whose worker dies fails at once, so a
test can kill a worker on purpose and see exactly that job fail (a real cluster's default retries a
task on three more workers first).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

WORKERS = 2


@contextlib.contextmanager
def local_cluster(workers: int = WORKERS) -> Iterator[str]:
    """Start the cluster; yield the scheduler's address."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None, scheduler_port=0) as cluster:
            yield cluster.scheduler_address
