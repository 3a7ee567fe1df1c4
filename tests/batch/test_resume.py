"""A batch killed half-way resumes where it stopped: finished jobs are not redone, the rest completes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.batch.manifest import load_manifest
from advisor.config import ProjectConfig
from tests.conftest import REPO, scenario_csv, scenario_dirs

from .conftest import CLEAN, OVERFLOW, Workspace

JOBS = 16
KILL_AFTER = 2          # results recorded before the kill
TIMEOUT = 120.0


def _recorded(db: Path) -> int:
    """Results committed so far (0 while the database is still being created)."""
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.5) as connection:
            return connection.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:     # no such table yet, or locked for a moment
        return 0


def _rows(db: Path) -> dict[str, tuple[int, str, str]]:
    with sqlite3.connect(db) as connection:
        return {job: (rid, status, finished) for rid, job, status, finished in
                connection.execute("SELECT id, job, status, finished_at FROM results")}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_batch_resumes_without_redoing_finished_jobs(workspace: Workspace) -> None:
    sources = [scenario_csv(d) for d in scenario_dirs()]
    manifest = workspace.manifest({f"job{i:02d}": sources[i % len(sources)] for i in range(JOBS)},
                                  defaults={"formats": ["json"]})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, "-m", "advisor", "batch", str(manifest), "-q", "--workers", "2"],
                               cwd=workspace.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + TIMEOUT
    try:
        while _recorded(workspace.db) < KILL_AFTER:
            assert process.poll() is None, f"batch ended before it could be killed: {process.stderr.read()}"
            assert time.monotonic() < deadline, "no job finished in time"
            time.sleep(0.02)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stderr.close()

    finished = _rows(workspace.db)
    assert KILL_AFTER <= len(finished) < JOBS, "the kill must land half-way"
    mtimes = {job: (workspace.out / job / "report.json").stat().st_mtime_ns for job in finished}
    store = workspace.store()
    assert store.run(1).status == "running"
    store.close()

    rerun = workspace.batch(manifest, "--workers", "2")

    assert rerun.code == 0, rerun.err
    jobs = f"{len(finished)} job{'s' if len(finished) != 1 else ''}"
    assert f"run 1 of nightly (resumed: {jobs} done before it stopped)" in rerun.out
    after = _rows(workspace.db)
    assert set(after) == {f"job{i:02d}" for i in range(JOBS)}
    assert {job: after[job] for job in finished} == finished            # same rows: nothing redone
    assert {job: (workspace.out / job / "report.json").stat().st_mtime_ns for job in finished} == mtimes
    assert {status for _, status, _ in after.values()} == {"ok"}
    store = workspace.store()
    runs = store.runs()
    store.close()
    assert [(r.id, r.status, r.resumed) for r in runs] == [(1, "complete", 1)]
    assert (workspace.out / "index.html").is_file()


def test_a_changed_batch_does_not_resume_the_dead_run_but_still_skips_finished_jobs(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert": OVERFLOW})
    assert workspace.batch(manifest).code == 0
    # A second night killed before it recorded anything: its run stays "running".
    store = workspace.store()
    store.begin_run(load_manifest(manifest, ProjectConfig()), 2)
    store.close()

    manifest = workspace.manifest({"resnet": CLEAN, "bert": OVERFLOW, "crepe": CLEAN})   # a job was added
    run = workspace.batch(manifest)

    assert run.code == 0 and "run 3 of nightly" in run.out and "resumed" not in run.out
    store = workspace.store()
    assert [r.status for r in store.runs()] == ["complete", "interrupted", "complete"]
    store.close()
    assert workspace.statuses(3) == {"resnet": "unchanged", "bert": "unchanged", "crepe": "ok"}


def test_a_second_batch_on_the_same_history_is_refused_while_one_runs(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN})
    assert workspace.batch(manifest).code == 0
    store = workspace.store()
    with store.writer_lock():
        run = workspace.batch(manifest)
    store.close()
    assert run.code == 2
    assert f"another advisor batch (pid {os.getpid()}) is writing this history" in run.err
    assert workspace.batch(manifest).code == 0           # the lock went with its holder
