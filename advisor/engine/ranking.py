"""Rank findings into a Diagnosis: the root cause leads, what it explains follows as propagation."""

from __future__ import annotations

from collections.abc import Sequence

from ..diagnosis import SEVERITY_RANK, Finding
from .explain import ExplanationGroup, GroupRanking

# Root causes the network recovers from: they never lead over another root cause of the same
# severity, wherever they are. A single-point deviation before an FP16 overflow that does not break
# the output: the overflow leads (the vendor's msaccucmp advisor reports the overflow first too, since
# the values after an overflow are unreliable), the harmless deviation follows. docs/vendor-parity.md.
RECOVERED_KINDS = frozenset({"single_point_deviation"})


def rank_key(finding: Finding, priorities: dict[str, int]) -> tuple:
    # Severity first (an error outranks a warning wherever it is), then what the network does not
    # recover from, then the earliest op (the earliest root cause explains what follows), then the
    # rule's priority (at the same op, the more specific diagnosis, e.g. an overflow over a generic
    # problem node), then id for stability.
    index = finding.index if finding.index is not None else float("inf")
    return (SEVERITY_RANK[finding.severity], not finding.root_cause, finding.kind in RECOVERED_KINDS, index,
            priorities.get(finding.rule, 100), finding.id)


def rank_findings(findings: list[Finding], explanations: list[tuple[str, str, str]],
                  priorities: dict[str, int],
                  groups: Sequence[ExplanationGroup] = ()) -> tuple[Finding | None, list[Finding]]:
    """Return (root cause, findings in report order). Marks ``explained_by`` / ``explains``.

    A finding is explained when a finding ranked before it, itself unexplained, explains it; so
    explanations never form cycles and each symptom hangs under the cause that leads. ``groups``
    hold explanations too, as sets (engine/explain.py): the same result as their pairs, in time
    linear in the findings."""
    ordered = sorted(findings, key=lambda f: rank_key(f, priorities))
    causes_of: dict[str, list[str]] = {}
    for cause, symptom, _rule in explanations:
        causes_of.setdefault(symptom, []).append(cause)
    by_id = {f.id: f for f in ordered}
    grouped = GroupRanking(list(groups), set(by_id))
    explained_somehow = set(causes_of) | grouped.explained()
    # An expectation (an info finding that names no root cause and is explained by nothing, e.g.
    # "the build normalises this input itself") explains a finding of any severity: it says the
    # difference is intended, so it need not rank before what it explains.
    expected = {f.id for f in ordered if f.severity == "info" and not f.root_cause and f.id not in explained_somehow}
    grouped.expect(expected)
    position: dict[str, int] = {}           # active (unexplained) finding id -> its place among them
    active: list[Finding] = []
    for finding in ordered:
        finding.explained_by = None
        finding.explains = []
    for finding in ordered:
        causes = [by_id[c] for c in causes_of.get(finding.id, ()) if c in by_id]
        ranked = [c for c in causes if c.id in position] + [by_id[c] for c in grouped.leading(finding.id)]
        if ranked:
            cause: Finding | None = min(ranked, key=lambda c: position[c.id])
        else:
            cause = next((c for c in causes if c.id in expected), None) or \
                next((by_id[c] for c in grouped.fallback(finding.id)), None)
        if cause is not None:
            finding.explained_by = cause.id
            cause.explains.append(finding.id)
        else:
            position[finding.id] = len(active)
            active.append(finding)
            grouped.activate(finding.id)
    root = next((f for f in active if f.root_cause), None)
    explained = [f for f in ordered if f.explained_by is not None]
    explained.sort(key=lambda f: (position[f.explained_by], rank_key(f, priorities)))
    return root, active + explained
