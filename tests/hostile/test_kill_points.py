"""kill -9 before a filesystem step of publishing a report set, converting an older advisor's folder and
publishing a batch's jobs (benchmarks/killpoints.py): a reader sees one complete set at every point, and
the next run succeeds and leaves no extra set and no temporary name. Bounded here (every second point of
a publish, every fourth of a conversion, six of a batch's ~60); `python -m benchmarks.killpoints` and the
long fuzz run sweep every point. Before this harness, 15 of 79 conversion points left a folder every later run
refused, and 20 of 48 batch points kept an extra report set forever."""

from __future__ import annotations

import pytest

from benchmarks.killpoints import sweep


@pytest.mark.parametrize("scenario, points", [("publish", list(range(1, 60, 2))), ("convert", list(range(1, 130, 4))),
                                              ("batch", [2, 5, 6, 11, 16, 23])])
def test_a_kill_at_any_point_leaves_one_set_and_nothing_the_next_run_cannot_clean(scenario, points):
    figures = sweep(scenario, points)
    assert figures.points >= 6, figures          # the kills landed inside the step
    assert not figures.problems, figures.problems[:10]
