"""What changed for a job between two results: its verdict, and which findings are new, fixed or persist.

Findings are matched by ``(rule, kind, op)``: the op index shifts when a graph changes, the evidence
numbers drift from night to night, but the same rule saying the same thing about the same op is the
same problem. A rule renamed between the two results is the same rule: a finding names its rule's
former ids (``aliases:`` in the rule), and a finding of a former id matches one of the new id.
Matching counts duplicates (a multiset), so two findings of one key against one is one persisting
and one new. Findings that only restate the verdict (``consistent``) are left out: the
verdict change says it.

A **regression** is a job that was consistent in its previous result and is not now. A job that
stays broken is not a new regression; a job that failed to run is a failure, not a regression (its
previous verdict stands until it runs again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .records import VERDICT_KINDS, FindingRecord, Verdict

Transition = Literal["new", "regression", "recovered", "changed", "same", "failed"]


@dataclass(frozen=True)
class FindingChanges:
    new: tuple[FindingRecord, ...]
    fixed: tuple[FindingRecord, ...]
    persists: tuple[FindingRecord, ...]

    @property
    def changed(self) -> bool:
        return bool(self.new or self.fixed)


def finding_changes(before: Iterable[FindingRecord], after: Iterable[FindingRecord]) -> FindingChanges:
    """``before`` -> ``after``; each list keeps the rank order of its own run."""
    before = [f for f in before if f.kind not in VERDICT_KINDS]
    after = [f for f in after if f.kind not in VERDICT_KINDS]
    renamed = {alias: f.rule for f in (*before, *after) for alias in f.rule_aliases}
    remaining = Counter(f.key(renamed) for f in before)
    new, persists = [], []
    for finding in after:
        if remaining[finding.key(renamed)] > 0:
            remaining[finding.key(renamed)] -= 1
            persists.append(finding)
        else:
            new.append(finding)
    left = Counter(f.key(renamed) for f in after)
    fixed = []
    for finding in before:
        if left[finding.key(renamed)] > 0:
            left[finding.key(renamed)] -= 1
        else:
            fixed.append(finding)
    return FindingChanges(tuple(new), tuple(fixed), tuple(persists))


def transition(previous: Verdict | None, current: Verdict | None) -> Transition:
    """How a job's verdict moved; ``current`` is None when the job failed this time."""
    if current is None:
        return "failed"
    if previous is None:
        return "new"
    if previous.consistent and not current.consistent:
        return "regression"
    if current.consistent and not previous.consistent:
        return "recovered"
    if (previous.verdict, previous.root_op) != (current.verdict, current.root_op):
        return "changed"
    return "same"
