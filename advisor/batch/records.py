"""What one job of a batch leaves behind, as plain picklable records.

A worker process returns a ``JobOutcome``; the parent process (the only writer of the history)
stores it. Nothing here holds a Diagnosis: findings are flattened to ``FindingRecord`` so an
outcome crosses the process boundary cheaply and reads back from SQLite in the same shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..diagnosis import CONSISTENT
from ..text import oneline

JobStatus = Literal["ok", "unchanged", "failed"]

# Finding kinds that restate the verdict rather than name a problem: left out of finding counts
# and of new/fixed/persists, where the verdict change already says it.
VERDICT_KINDS: frozenset[str] = frozenset({CONSISTENT})


@dataclass(frozen=True)
class FindingRecord:
    """One finding as the history keeps it. ``(rule, kind, op)`` matches it across runs."""

    rule: str
    kind: str
    op: str | None
    index: int | None
    severity: str
    confidence: float
    root_cause: bool            # the diagnosis' root cause
    explained: bool             # explained as propagation of another finding
    evidence: str               # English evidence sentence
    rule_aliases: tuple[str, ...] = ()   # the rule's former ids, when it declares them

    def key(self, renamed: dict[str, str] | None = None) -> tuple[str, str, str]:
        """``renamed``: former rule id -> current id (a rule renamed between two runs)."""
        return ((renamed or {}).get(self.rule, self.rule), self.kind, self.op or "")


@dataclass(frozen=True)
class PackRecord:
    """A rule pack a job used: name and version as declared, where it came from, its content hash."""

    name: str
    version: str
    source: str
    digest: str


@dataclass(frozen=True)
class Verdict:
    """The headline numbers of one analysed job (what the index page and the trend show)."""

    verdict: str                 # root-cause kind, "consistent" or "unexplained" (as the report says)
    severity: str                # error | warning | info | ok (the report's verdict severity)
    root_op: str | None
    root_index: int | None
    output_cosine: float | None
    errors: int                  # active findings (not explained, not the verdict itself) by severity
    warnings: int
    notes: int
    explained: int               # findings explained as propagation
    title: str | None = None     # the verdict in English as the job's report titles it (its packs' pages)

    @property
    def consistent(self) -> bool:
        return self.verdict == CONSISTENT


@dataclass
class JobOutcome:
    """Result of one job. ``unchanged``: its hash equals the last good result's, nothing was redone."""

    job: str
    status: JobStatus
    job_hash: str | None
    duration: float                                    # seconds spent in the worker (wall)
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)   # role -> {"path", "digest"}
    error: str | None = None                           # one line, for failed jobs
    verdict: Verdict | None = None
    findings: list[FindingRecord] = field(default_factory=list)
    packs: list[PackRecord] = field(default_factory=list)
    report_dir: str | None = None
    report_files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cpu: float = 0.0                                   # CPU seconds the worker spent (vs duration: contention)
    # The rendered report set, (path relative to report_dir, text), on its way from the worker to the
    # batch process, which writes it (worker.publish) and drops it before storing the outcome.
    files: list[tuple[str, str]] = field(default_factory=list)


def failed(job: str, error: str, duration: float = 0.0, job_hash: str | None = None,
           inputs: dict[str, dict[str, str]] | None = None) -> JobOutcome:
    """A failure record: one line, never more (it is shown in tables and chat digests)."""
    return JobOutcome(job=job, status="failed", job_hash=job_hash, duration=duration, inputs=inputs or {},
                      error=oneline(error) or "failed")
