"""New / fixed / persists by (rule, kind, op), and what counts as a regression."""

from __future__ import annotations

from advisor.batch.changes import finding_changes, transition
from advisor.batch.records import FindingRecord, Verdict


def _finding(rule: str, op: str | None, index: int = 0, kind: str | None = None) -> FindingRecord:
    return FindingRecord(rule=rule, kind=kind or rule.replace("-", "_"), op=op, index=index, severity="error",
                         confidence=0.9, root_cause=False, explained=False, evidence="")


def _verdict(verdict: str, op: str | None = None) -> Verdict:
    return Verdict(verdict=verdict, severity="ok" if verdict == "consistent" else "error", root_op=op,
                   root_index=None, output_cosine=None, errors=0, warnings=0, notes=0, explained=0)


def test_findings_match_by_rule_kind_and_op_not_index() -> None:
    before = [_finding("problem-node", "Conv_3", index=5), _finding("fp16-overflow", "Pow_4")]
    after = [_finding("problem-node", "Conv_3", index=7), _finding("problem-node", "Conv_9")]
    changes = finding_changes(before, after)
    assert [f.op for f in changes.persists] == ["Conv_3"]
    assert [f.op for f in changes.new] == ["Conv_9"]
    assert [f.op for f in changes.fixed] == ["Pow_4"]


def test_duplicates_are_counted_and_verdict_findings_ignored() -> None:
    before = [_finding("fp16-overflow", "Pow_4"), _finding("consistent", None)]
    after = [_finding("fp16-overflow", "Pow_4"), _finding("fp16-overflow", "Pow_4")]
    changes = finding_changes(before, after)
    assert (len(changes.persists), len(changes.new), len(changes.fixed)) == (1, 1, 0)


def test_transitions() -> None:
    consistent, broken = _verdict("consistent"), _verdict("problem_node", "Conv_3")
    assert transition(consistent, broken) == "regression"
    assert transition(broken, consistent) == "recovered"
    assert transition(broken, _verdict("problem_node", "Conv_7")) == "changed"
    assert transition(broken, broken) == "same"
    assert transition(None, broken) == "new"
    assert transition(consistent, None) == "failed"
    assert transition(_verdict("unexplained"), broken) == "changed"


def test_a_renamed_rule_matches_its_findings_under_the_former_id() -> None:
    before = [_finding("fp16-overflow-legacy", "Pow_4", kind="fp16_overflow")]
    renamed = FindingRecord(rule="fp16-overflow", kind="fp16_overflow", op="Pow_4", index=0, severity="error",
                            confidence=0.9, root_cause=False, explained=False, evidence="",
                            rule_aliases=("fp16-overflow-legacy",))
    changes = finding_changes(before, [renamed])
    assert (len(changes.persists), len(changes.new), len(changes.fixed)) == (1, 0, 0)
    # Without the alias they are two rules: one fixed, one new.
    plain = finding_changes(before, [_finding("fp16-overflow", "Pow_4")])
    assert (len(plain.persists), len(plain.new), len(plain.fixed)) == (0, 1, 1)
