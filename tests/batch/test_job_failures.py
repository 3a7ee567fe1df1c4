"""One broken input fails its own job, with its error, and never the batch."""

from __future__ import annotations

import signal

import pytest

from advisor.batch import load_manifest, run_batch
from advisor.batch.pool import CRASH_MESSAGE
from advisor.config import ProjectConfig

from . import runners
from .conftest import CLEAN, OVERFLOW, PROBLEM, Workspace


def test_broken_and_missing_inputs_fail_their_jobs_only(workspace: Workspace) -> None:
    workspace.put("garbage", "this,is\nnot,a comparison\n")
    manifest = workspace.manifest({"resnet": CLEAN, "garbage": {"input": "inputs/garbage.csv"},
                                   "missing": {"input": "inputs/nowhere.csv"}, "bert": OVERFLOW})
    run = workspace.batch(manifest)

    assert run.code == 0
    assert workspace.statuses(1) == {"resnet": "ok", "garbage": "failed", "missing": "failed", "bert": "ok"}
    assert "FAILED missing: " in run.out and "nowhere.csv: file not found" in run.out
    assert "FAILED garbage: " in run.out and "unknown header" in run.out
    html = (workspace.out / "index.html").read_text(encoding="utf-8")
    assert "<h2>Failed jobs</h2>" in html and "nowhere.csv: file not found" in html
    digest = (workspace.out / "digest.md").read_text(encoding="utf-8")
    assert "**Failed**" in digest and "- `missing`: " in digest


def test_fail_on_failure_exits_1(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "missing": {"input": "inputs/nowhere.csv"}})
    assert workspace.batch(manifest, "--fail-on-failure").code == 1
    assert workspace.batch(manifest, "--fail-on-regression").code == 0


def test_a_failed_job_is_retried_and_does_not_count_as_a_regression(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN})
    workspace.batch(manifest)
    workspace.put("resnet", "broken\n")
    failed = workspace.batch(manifest, "--fail-on-regression")
    assert failed.code == 0 and "0 regressions," in failed.out
    workspace.put("resnet", PROBLEM)
    regressed = workspace.batch(manifest, "--fail-on-regression")
    assert regressed.code == 1           # compared with the last verdict (run 1), not the failure
    assert workspace.statuses(3) == {"resnet": "ok"}


@pytest.mark.skipif(not hasattr(signal, "SIGSEGV"), reason="needs POSIX signals")
def test_a_crashing_worker_fails_only_its_job(workspace: Workspace) -> None:
    manifest = workspace.manifest({"a": CLEAN, "crash": CLEAN, "b": OVERFLOW, "c": PROBLEM, "d": CLEAN})
    result = run_batch(load_manifest(manifest, ProjectConfig()), workers=2, runner=runners.segfault_on_crash_jobs)

    states = {job.name: job.result for job in result.overview.jobs}
    assert {name: row.status for name, row in states.items()} == \
        {"a": "ok", "crash": "failed", "b": "ok", "c": "ok", "d": "ok"}
    assert states["crash"].error == CRASH_MESSAGE
    assert states["c"].verdict.verdict == "problem_node"


def test_an_exception_outside_the_job_becomes_its_failure(workspace: Workspace) -> None:
    manifest = workspace.manifest({"a": CLEAN, "bug": CLEAN})
    result = run_batch(load_manifest(manifest, ProjectConfig()), workers=2, runner=runners.raise_outside_the_job)
    states = {job.name: job.result for job in result.overview.jobs}
    assert states["a"].status == "ok"
    assert states["bug"].status == "failed"
    assert states["bug"].error == "internal error: RuntimeError: runner bug"


@pytest.mark.skipif(not hasattr(signal, "SIGSEGV"), reason="needs POSIX signals")
def test_a_batch_whose_every_worker_crashes_still_finishes(workspace: Workspace) -> None:
    manifest = workspace.manifest({"a": CLEAN, "b": OVERFLOW, "c": PROBLEM})
    result = run_batch(load_manifest(manifest, ProjectConfig()), workers=2, runner=runners.always_segfault)
    assert {job.name: job.result.error for job in result.overview.jobs} == dict.fromkeys("abc", CRASH_MESSAGE)
    assert (workspace.out / "index.html").is_file()
