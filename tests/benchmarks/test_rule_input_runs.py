"""The tool that cuts the built-in rules' whole-run input cases (benchmarks/rule_input_runs.py): what it keeps
and what it compares a cut by."""

from __future__ import annotations

from benchmarks.rule_cases import fewest
from benchmarks.rule_input_runs import CORE, RUNS, options, outcome


def test_fewest_keeps_only_the_items_the_outcome_needs_in_their_order():
    needed = {3, 17, 18}
    asked: list[list[int]] = []

    def holds(kept: list[int]) -> bool:
        asked.append(kept)
        return needed <= set(kept)

    assert fewest(list(range(40)), holds) == [3, 17, 18]
    assert all(asked) and len(asked) < 40       # never an empty list; fewer questions than one per item


def test_a_cut_is_compared_by_every_explanation_also_those_given_as_a_group():
    """The saturating target's clamped output head explains the Softmax's inherited replay through a group
    of explanations: a cut that lost it would not be the same run."""
    run = next(r for r in RUNS if r.name == "output_logit_drift")
    folder = CORE / run.domain / "cases" / run.name
    given = outcome(options(folder, run, folder / run.comparison))
    assert given["earlier-cause-explains-inherited"] == {("fp16-overflow@98", "replay-inherited@99")}
    assert given["replay-inherited-explains-finding"] == {("replay-inherited@99", "problem-node@99")}


def test_a_near_miss_cut_to_another_cases_ops_holds_exactly_those_ops():
    """A near miss of the same network (``rows_of``) shows the ops its firing case names: the same op indices,
    each with all its rows."""
    from benchmarks.rule_cases import row_groups
    from benchmarks.rule_input_runs import same_ops

    near = [r for r in RUNS if r.rows_of]
    assert near
    for run in near:
        other = next(r for r in RUNS if r.name == run.rows_of)
        mine = CORE / run.domain / "cases" / run.name / run.comparison
        theirs = CORE / other.domain / "cases" / other.name / other.comparison
        indices = [[line.split(b",", 1)[0] for _, line in group] for group in row_groups(mine)[1]]
        assert indices == [[line.split(b",", 1)[0] for _, line in group] for group in row_groups(theirs)[1]]
        assert [line for _, line in same_ops(mine, other.name)] == mine.read_bytes().splitlines(keepends=True)[1:]
