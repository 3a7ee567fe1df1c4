"""Scheduled analysis of many comparisons: ``advisor batch`` and ``advisor history``.

A batch (a YAML manifest, or every comparison result under a folder) runs its jobs in worker
processes, skips jobs whose content hash has not changed, records every result in a SQLite history
as it finishes (so a killed batch resumes), and writes an index page and a Markdown digest that
lead with regressions: jobs that were consistent and are not any more.

    manifest.py, scan.py   what to run           -> jobs.py (Batch, Job: resolved options)
    validate.py            options checked against the rule packs before anything runs
    hashing.py             content hashes that decide what must run again
    worker.py, pool.py     one job in a worker process; the process pool and crash isolation
                           (advisor/cluster/batch.py: the same on a dask cluster, --scheduler)
    store.py, schema.py    the history database
    changes.py, overview.py  new / fixed / persisting findings, regressions, trends
    index.py, sparkline.py   index.html and digest.md (templates in reports/)
    runner.py              all of the above, in order
"""

from __future__ import annotations

from .jobs import Batch, Job
from .manifest import ManifestError, load_manifest
from .runner import BatchResult, run_batch
from .scan import scan_batch
from .store import HistoryStore

__all__ = ["Batch", "BatchResult", "HistoryStore", "Job", "ManifestError", "load_manifest", "run_batch",
           "scan_batch"]
