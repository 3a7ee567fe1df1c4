"""One run seen against the history: per job its result, the previous verdict, what changed, its trend.

Computed once from the store; the command-line summary, the index page, the digest and
``advisor history show`` all render this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .changes import FindingChanges, Transition, finding_changes, transition
from .store import HistoryStore, ResultRow, RunRow

TREND_RUNS = 30


@dataclass(frozen=True)
class JobState:
    name: str
    result: ResultRow
    previous: ResultRow | None          # the job's previous result with a verdict, in an earlier run
    transition: Transition
    changes: FindingChanges | None      # None when there is nothing to compare
    trend: tuple[ResultRow, ...]        # up to TREND_RUNS results, oldest first, this one last

    @property
    def regression(self) -> bool:
        return self.transition == "regression"


@dataclass(frozen=True)
class RunOverview:
    run: RunRow
    jobs: tuple[JobState, ...]

    def where(self, *transitions: Transition) -> list[JobState]:
        return [job for job in self.jobs if job.transition in transitions]

    @property
    def regressions(self) -> list[JobState]:
        return self.where("regression")

    @property
    def failures(self) -> list[JobState]:
        return self.where("failed")

    def count(self, status: str) -> int:
        return sum(job.result.status == status for job in self.jobs)


def build_overview(store: HistoryStore, run_id: int, order: Sequence[str] | None = None,
                   trend_runs: int = TREND_RUNS) -> RunOverview:
    """``order``: job names in the order to show them (the manifest's); default: by name."""
    run = store.run(run_id)
    if run is None:
        raise KeyError(run_id)
    results = {row.job: row for row in store.results(run_id)}
    names = [n for n in order if n in results] if order is not None else sorted(results)
    return RunOverview(run, tuple(_job_state(store, results[name], trend_runs) for name in names))


def _job_state(store: HistoryStore, result: ResultRow, trend_runs: int) -> JobState:
    previous = store.previous(result.job, result.run_id)
    move = transition(previous.verdict if previous else None, result.verdict)
    changes = None
    if previous is not None and result.verdict is not None:
        current = store.findings(result)
        changes = finding_changes(current if previous.origin == result.origin else store.findings(previous), current)
    return JobState(result.job, result, previous, move, changes, tuple(store.trend(result.job, result.run_id,
                                                                                     trend_runs)))
