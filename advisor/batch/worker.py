"""What a worker process does for one job: hash its inputs, skip it if nothing changed, else analyse
it and render its reports. Runs in a child process (of the local pool, or a dask worker on another
machine); returns a plain ``JobOutcome`` and never raises, so one broken input becomes that job's
failure record and nothing else.

A worker writes nothing: the rendered report set travels back in the outcome and the batch process
publishes it (``publish``), as it is the only writer of the history. So reports are written the same
way, atomically, by one process, whether the jobs ran here or on a cluster.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait

from ..advice import AdviceBook
from ..diagnosis import Diagnosis
from ..errors import AdvisorError
from ..pipeline import analyse
from ..report import build_view, get_reporter, remedy_files, write_outputs
from ..report.model import ReportView
from .hashing import input_digests, job_hash
from .index import verdict_label
from .jobs import Job
from .records import VERDICT_KINDS, FindingRecord, JobOutcome, PackRecord, Verdict, failed


@dataclass(frozen=True)
class JobTask:
    """A job as sent to a worker, with what the parent already knows about it."""

    job: Job
    config_digest: str                        # hashing.ConfigHasher.config_digest
    pack_digests: dict[str, str] = field(default_factory=dict)   # pack source -> digest
    previous_hash: str | None = None          # hash of the last good result whose reports still exist


def run_job(task: JobTask) -> JobOutcome:
    """Never raises: an AdvisorError is the user's one-line error, anything else an internal one."""
    start, cpu = time.perf_counter(), time.process_time()
    job = task.job
    inputs: dict[str, dict[str, str]] = {}
    digest: str | None = None
    try:
        inputs = input_digests(job)
        digest = job_hash(task.config_digest, inputs)
        if digest == task.previous_hash:
            return JobOutcome(job.name, "unchanged", digest, time.perf_counter() - start, inputs,
                              cpu=time.process_time() - cpu)
        diagnosis = analyse(job.analysis_options())
        view = build_view(diagnosis, job.lang)
        files = [(get_reporter(f).filename, get_reporter(f).render(view)) for f in job.formats] + remedy_files(view)
    except AdvisorError as exc:
        return failed(job.name, exc.one_line(), time.perf_counter() - start, digest, inputs)
    except Exception as exc:  # noqa: BLE001 - a bug in advisor: still only this job's failure
        return failed(job.name, f"internal error: {type(exc).__name__}: {exc} (please report this with the input)",
                      time.perf_counter() - start, digest, inputs)
    return JobOutcome(job.name, "ok", digest, time.perf_counter() - start, inputs,
                      verdict=verdict_of(diagnosis, view), findings=finding_records(diagnosis),
                      packs=[PackRecord(p.name, p.version, p.source, task.pack_digests.get(_resolved(p.source), ""))
                             for p in diagnosis.packs],
                      report_dir=str(job.outdir), report_files=[name for name, _ in files[:len(job.formats)]],
                      warnings=list(diagnosis.warnings), cpu=time.process_time() - cpu, files=files)


def publish(outcome: JobOutcome) -> JobOutcome:
    """Write an analysed job's report set into its folder (in the batch process, see the module
    docstring) and return the outcome without the file texts. A report folder that cannot be
    written is that job's failure, as it was when the worker wrote it."""
    if not outcome.files:
        return outcome
    try:
        write_outputs(outcome.report_dir or ".", outcome.files)
    except AdvisorError as exc:
        return failed(outcome.job, exc.one_line(), outcome.duration, outcome.job_hash, outcome.inputs)
    return replace(outcome, files=[])


def verdict_of(diagnosis: Diagnosis, view: ReportView) -> Verdict:
    """The verdict as the report states it (root-cause kind, consistent or unexplained), with counts."""
    active = [f for f in diagnosis.findings if f.explained_by is None and f.kind not in VERDICT_KINDS]
    root = diagnosis.root_cause
    cosine = diagnosis.network.get("output_cosine")
    return Verdict(
        verdict=view.verdict, severity=view.severity,
        root_op=root.op if root else None, root_index=root.index if root else None,
        output_cosine=float(cosine) if isinstance(cosine, (int, float)) and math.isfinite(cosine) else None,
        errors=sum(f.severity == "error" for f in active), warnings=sum(f.severity == "warning" for f in active),
        notes=sum(f.severity == "info" for f in active),
        explained=sum(f.explained_by is not None for f in diagnosis.findings),
        title=verdict_label(view.verdict, AdviceBook(diagnosis.advice_pages)))


def finding_records(diagnosis: Diagnosis) -> list[FindingRecord]:
    root_id = diagnosis.root_cause.id if diagnosis.root_cause else None
    return [FindingRecord(rule=f.rule, kind=f.kind, op=f.op, index=f.index, severity=f.severity,
                          confidence=float(f.confidence), root_cause=f.id == root_id,
                          explained=f.explained_by is not None, evidence=f.evidence.get("en", ""),
                          rule_aliases=tuple(diagnosis.rule_aliases.get(f.rule, ())))
            for f in diagnosis.findings]


def _resolved(source: str) -> str:
    return str(os.path.realpath(source))


def watch_parent() -> None:
    """Pool initializer: leave when the batch that started this worker is gone.

    A killed batch (SIGKILL, the OOM killer, a closed terminal) cannot tell its workers. Pool workers
    would wait for their next task forever, and a forkserver's children keep the server alive, so
    nothing would ever clean up. multiprocessing gives each child a sentinel that becomes readable
    when its parent dies: on that, exit at once, without writing anything more.
    """
    parent = multiprocessing.parent_process()
    if parent is None:                  # not started by multiprocessing (a test calling run_job)
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(70)

    threading.Thread(target=watch, name="advisor-batch-watchdog", daemon=True).start()
