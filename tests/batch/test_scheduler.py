"""``advisor batch --scheduler``: the jobs run on a real dask cluster (worker processes on loopback) and
the batch ends exactly as on one machine: the same reports byte for byte, the same history rows; a
worker that dies fails its job only; the client stays the only writer, so a killed batch resumes."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from advisor import cluster
from advisor.batch.manifest import load_manifest
from advisor.batch.runner import run_batch
from advisor.cli import main
from advisor.cluster import INSTALL_HINT
from advisor.config import ProjectConfig
from tests.localcluster import local_cluster

from .conftest import CLEAN, OVERFLOW, PROBLEM, Workspace

JOBS = {"clean": CLEAN, "problem": PROBLEM, "overflow": OVERFLOW}
# Columns of a result row that describe this run, not the job's result.
RUN_COLUMNS = {"id", "run_id", "duration", "cpu", "finished_at"}


@pytest.fixture(scope="module")
def scheduler() -> str:
    with local_cluster() as address:
        yield address


def _reports(out: Path) -> dict[str, bytes]:
    """Every job's reports and remedy files (read through the report set's links), by path under OUTDIR.
    (The index and digest say when the run started and with how many workers: not the jobs' results.)"""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.glob("*/**/*"))
            if p.is_file() and ".advisor-reports" not in p.parts}


def _history(db: Path) -> tuple[list[dict], list[tuple], list[tuple]]:
    """Result rows (without what describes the run rather than the result), findings and packs, by job."""
    with sqlite3.connect(db) as connection:
        connection.row_factory = sqlite3.Row
        results = [{k: row[k] for k in row.keys() if k not in RUN_COLUMNS}
                   for row in connection.execute("SELECT * FROM results ORDER BY job")]
        findings = [tuple(row) for row in connection.execute(
            "SELECT r.job, f.position, f.rule, f.kind, f.op, f.op_index, f.severity, f.confidence, f.root_cause, "
            "f.explained, f.evidence FROM findings f JOIN results r ON r.id = f.result_id ORDER BY r.job, f.position")]
        packs = [tuple(row) for row in connection.execute(
            "SELECT r.job, p.name, p.version, p.source, p.digest FROM packs p JOIN results r ON r.id = p.result_id "
            "ORDER BY r.job, p.rowid")]
    return results, findings, packs


def test_a_batch_on_the_cluster_equals_the_batch_on_this_machine(workspace: Workspace, scheduler):
    manifest = workspace.manifest(JOBS)
    local = workspace.batch(manifest, "--workers", "1", "-q")
    assert local.code == 0, local.err
    serial_reports, serial_history = _reports(workspace.out), _history(workspace.db)
    shutil.rmtree(workspace.out)                       # same paths again, nothing to reuse
    remote = workspace.batch(manifest, "--scheduler", scheduler, "-q")
    assert remote.code == 0, remote.err
    reports = _reports(workspace.out)
    assert sum(name.endswith("report.html") for name in reports) == len(JOBS)
    assert reports == serial_reports
    history = _history(workspace.db)
    assert len(history[1]) > len(JOBS) and history == serial_history
    # again: nothing changed, so every job is recorded unchanged without being analysed
    again = workspace.batch(manifest, "--scheduler", scheduler)
    assert again.code == 0 and f"0 analysed, {len(JOBS)} unchanged, 0 failed" in again.out


def test_a_worker_that_dies_fails_its_job_and_the_others_complete(workspace: Workspace, scheduler):
    manifest = workspace.manifest({"crash": CLEAN, "clean": CLEAN, "problem": PROBLEM})
    batch = load_manifest(manifest, ProjectConfig())
    from distributed import Client

    from advisor.cluster.batch import executor
    from tests.batch.runners import segfault_on_crash_jobs

    with Client(scheduler, set_as_default=False) as client:
        result = run_batch(batch, runner=segfault_on_crash_jobs, executor=executor(client), workers=2)
    status = {job.name: job.result.status for job in result.overview.jobs}
    assert status == {"crash": "failed", "clean": "ok", "problem": "ok"}
    crash = next(job for job in result.overview.jobs if job.name == "crash")
    assert "worker process died" in crash.result.error
    assert (workspace.out / "problem" / "report.html").is_file() and not (workspace.out / "crash").exists()


def test_a_batch_killed_on_the_cluster_resumes_there(workspace: Workspace, scheduler, monkeypatch):
    """The client records each outcome as it arrives: stopped after two, the next run does the rest."""
    manifest = workspace.manifest(JOBS, defaults={"formats": ["json"]})
    from advisor.batch import store as store_module

    original = store_module.HistoryStore.record
    recorded = []

    def die_after_two(self, run_id, outcome, reused=None):
        if len(recorded) == 2:
            raise KeyboardInterrupt
        recorded.append(outcome.job)
        return original(self, run_id, outcome, reused)

    monkeypatch.setattr(store_module.HistoryStore, "record", die_after_two)
    stopped = workspace.batch(manifest, "--scheduler", scheduler, "-q")
    assert stopped.code == 130 and len(recorded) == 2

    def count(self, run_id, outcome, reused=None):
        recorded.append(outcome.job)
        return original(self, run_id, outcome, reused)

    monkeypatch.setattr(store_module.HistoryStore, "record", count)
    resumed = workspace.batch(manifest, "--scheduler", scheduler)
    assert resumed.code == 0, resumed.err
    assert "resumed: 2 jobs done before it stopped" in resumed.out
    assert "3 analysed, 0 unchanged, 0 failed" in resumed.out
    assert sorted(recorded) == sorted(JOBS)                # the third job only, this time


def test_scheduler_and_workers_exclude_each_other(workspace: Workspace, scheduler):
    run = workspace.batch(workspace.manifest({"clean": CLEAN}), "--scheduler", scheduler, "--workers", "2")
    assert run.code == 2 and "--workers: not with --scheduler" in run.err


def test_an_unreachable_scheduler_is_one_line_and_exit_2(workspace: Workspace, monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "2s")
    run = workspace.batch(workspace.manifest({"clean": CLEAN}), "--scheduler", "tcp://127.0.0.1:9")
    assert run.code == 2 and "cannot reach the dask scheduler at tcp://127.0.0.1:9" in run.err
    assert len(run.err.strip().splitlines()) == 1
    assert not workspace.db.exists()


def test_without_distributed_scheduler_says_what_to_install(workspace: Workspace, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)        # import distributed -> ImportError
    code = main(["batch", str(workspace.manifest({"clean": CLEAN})), "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and INSTALL_HINT in err and len(err.strip().splitlines()) == 1
