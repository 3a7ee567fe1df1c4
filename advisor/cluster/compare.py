"""Tensor pairs on a dask cluster: a ``mapper`` for advisor/compare/runner.py (``CompareOptions.mapper``).

The runner decides what to compute and in which order the rows go; this only moves the work. The
runner groups tasks into the same batches as on one machine (``compare/work.py`` ``batches``: at most
BATCH_ITEMS pairs and about BATCH_BYTES each); each batch is one dask task, and a worker
memory-maps the dumps it names from storage it shares with the client. Only the formatted metric
cells travel back; the client appends them to its resume journal as they arrive and writes the CSV
in the plan's order, so the file is
row for row the one a run on one machine writes.

At most two batches per worker thread are in flight, so the client's memory and the scheduler's
queue stay bounded however many tensors there are. A batch whose workers keep dying
(``KilledWorker``) or that fails stops the comparison with one line; what finished is in the
journal and the same command resumes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..compare.tuning import start_worker
from ..compare.work import Mapper, PairResult, PairTask
from ..errors import UsageError
from . import worker_threads

if TYPE_CHECKING:
    from distributed import Client

IN_FLIGHT_PER_THREAD = 2
_tuned_here = False                # per worker process: start_worker() has run


def mapper(client: Client) -> Mapper:
    """``CompareOptions(mapper=...)``: run the batches on this client's cluster."""
    return lambda function, grouped: run_batches(client, function, grouped)


def tuned(worker: Callable[[list[PairTask]], list[PairResult]], group: list[PairTask]) -> list[PairResult]:
    """On the worker: the process settings of a local compare worker (compare/tuning.py: one BLAS
    thread, a malloc that reuses freed blocks instead of faulting fresh pages for every float64
    temporary), once per worker process, then the batch. A dask worker outlives the comparison, so
    it keeps up to the trim threshold (1 GiB) of freed memory for the next one."""
    global _tuned_here
    if not _tuned_here:
        start_worker()
        _tuned_here = True
    return worker(group)


def run_batches(client: Client, worker: Callable[[list[PairTask]], list[PairResult]],
                queue: Iterator[list[PairTask]]) -> Iterator[list[PairResult]]:
    """Run ``worker`` over the batches on the cluster; yields each batch's results in this process as
    soon as it is back."""
    from distributed import KilledWorker, as_completed

    limit = IN_FLIGHT_PER_THREAD * worker_threads(client)
    running = as_completed(loop=client.loop)
    in_flight: set = set()

    def submit_next() -> None:
        group = next(queue, None)
        if group is not None:
            future = client.submit(tuned, worker, group, pure=False, retries=0)
            in_flight.add(future)
            running.add(future)

    for _ in range(limit):
        submit_next()
    try:
        for future in running:
            in_flight.discard(future)
            try:
                results = future.result()
            except KilledWorker as exc:
                raise UsageError(f"the dask workers kept dying while comparing a batch of tensors ({exc}); "
                                 "finished pairs are kept: run the same command again to resume") from None
            finally:
                future.release()
            yield results
            submit_next()
    finally:
        client.cancel(list(in_flight))
