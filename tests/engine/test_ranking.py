"""The root cause leads; what it explains follows as propagation."""

from __future__ import annotations

from advisor.diagnosis import Finding
from advisor.engine.ranking import rank_findings


def finding(rule: str, kind: str, index: int | None, severity: str = "error", root: bool = True) -> Finding:
    return Finding(id=f"{rule}@{index}", rule=rule, pack="core", kind=kind, severity=severity,
                   title={"en": kind, "zh": kind}, op=f"op{index}", index=index, root_cause=root)


PRIORITIES = {"input-mismatch": 5, "fp16-overflow": 10, "problem-node": 50, "single-point-deviation": 60,
              "network-consistent": 90}


def test_overflow_outranks_the_problem_node_at_the_same_op_and_explains_it():
    overflow, node = finding("fp16-overflow", "fp16_overflow", 7), finding("problem-node", "problem_node", 7)
    root, ordered = rank_findings([node, overflow], [(overflow.id, node.id, "explain")], PRIORITIES)
    assert root is overflow and ordered == [overflow, node]
    assert node.explained_by == overflow.id and overflow.explains == [node.id]


def test_the_earliest_root_cause_leads():
    late, early = finding("problem-node", "problem_node", 30), finding("problem-node", "problem_node", 4)
    root, _ = rank_findings([late, early], [], PRIORITIES)
    assert root is early


def test_an_error_outranks_an_earlier_warning():
    warning = finding("single-point-deviation", "single_point_deviation", 2, severity="warning")
    error = finding("problem-node", "problem_node", 9)
    root, ordered = rank_findings([warning, error], [], PRIORITIES)
    assert root is error and ordered == [error, warning]


def test_notes_are_never_the_root_cause():
    note = finding("network-consistent", "consistent", None, severity="info", root=False)
    root, ordered = rank_findings([note], [], PRIORITIES)
    assert root is None and ordered == [note]


def test_mutual_explanations_cannot_hide_both_findings():
    a, b = finding("fp16-overflow", "fp16_overflow", 3), finding("fp16-overflow", "fp16_overflow", 3)
    b.id = "fp16-overflow@3b"
    root, _ = rank_findings([a, b], [(a.id, b.id, "x"), (b.id, a.id, "x")], PRIORITIES)
    assert root is not None and root.explained_by is None


def test_a_symptom_explained_by_an_explained_finding_hangs_under_the_leading_cause():
    mismatch = finding("input-mismatch", "input_mismatch", 0)
    overflow = finding("fp16-overflow", "fp16_overflow", 5)
    node = finding("problem-node", "problem_node", 5)
    explanations = [(mismatch.id, overflow.id, "x"), (mismatch.id, node.id, "x"), (overflow.id, node.id, "x")]
    root, ordered = rank_findings([node, overflow, mismatch], explanations, PRIORITIES)
    assert root is mismatch
    assert overflow.explained_by == mismatch.id and node.explained_by == mismatch.id
    assert ordered[0] is mismatch


def test_an_expectation_explains_an_error_and_the_run_has_no_root_cause():
    """The build normalises the input itself: the raw target input is intended, not an input mismatch."""
    expected = finding("normalization-in-model-expected", "normalization_in_model", 0, severity="info", root=False)
    mismatch = finding("input-mismatch", "input_mismatch", 0)
    root, ordered = rank_findings([mismatch, expected], [(expected.id, mismatch.id, "explain")], PRIORITIES)
    assert root is None and ordered == [expected, mismatch]
    assert mismatch.explained_by == expected.id


def test_an_info_finding_that_is_itself_explained_is_no_expectation():
    note = finding("absorbed", "absorbed", 3, severity="info", root=False)
    cause = finding("problem-node", "problem_node", 1)
    later = finding("problem-node", "problem_node", 5)
    explanations = [(cause.id, note.id, "explain"), (note.id, later.id, "explain")]
    root, _ = rank_findings([later, note, cause], explanations, PRIORITIES)
    assert root is cause and later.explained_by is None
