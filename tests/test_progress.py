"""The progress bar: drawn on a terminal, never in a pipe or on CI, forced when asked."""

from __future__ import annotations

import io
import time

import pytest

from advisor.progress import ProgressBar, wanted


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_counts_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    stream = Terminal()
    with ProgressBar("comparing pairs", 4, stream=stream) as bar:
        for _ in range(4):
            bar.advance()
    assert "comparing pairs" in stream.getvalue() and "4/4" in stream.getvalue()


@pytest.mark.parametrize(("stream", "ci"), [(io.StringIO(), None), (Terminal(), "true")])
def test_no_bar_in_a_pipe_or_on_ci(monkeypatch, stream, ci):
    monkeypatch.delenv("CI", raising=False)
    if ci:
        monkeypatch.setenv("CI", ci)
    assert not wanted(stream)
    with ProgressBar("x", 3, stream=stream) as bar:
        bar.advance(3)
    assert stream.getvalue() == ""


def test_forced_bar_draws_into_a_pipe(monkeypatch):
    monkeypatch.setenv("CI", "true")
    stream = io.StringIO()
    ProgressBar("reading target", 2, stream=stream, enabled=True, done=1).close()
    assert "reading target" in stream.getvalue() and "1/2" in stream.getvalue()


def test_a_delayed_bar_stays_away_from_quick_work_and_shows_during_a_long_step(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    quick = Terminal()
    with ProgressBar("advisor run", 3, stream=quick, delay=0.3, leave=False) as bar:
        bar.stage("reading inputs")
        bar.stage("firing rules")
    time.sleep(0.4)
    assert quick.getvalue() == ""
    slow = Terminal()
    with ProgressBar("advisor run", 3, stream=slow, delay=0.2, leave=False) as bar:
        bar.stage("reading inputs")
        time.sleep(0.5)                    # one long step: the bar appears without waiting for the next
        assert "advisor run: reading inputs" in slow.getvalue()
