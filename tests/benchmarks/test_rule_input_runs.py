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
