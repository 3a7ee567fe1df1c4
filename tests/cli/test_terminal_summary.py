"""What `advisor run` prints: in the report's language, with plurals right, and a progress bar on
stderr only when a person is watching a terminal."""

from __future__ import annotations

import io
import re

import pytest

from ..conftest import EXAMPLE, SCENARIOS, scenario_csv

OVERFLOW = SCENARIOS / "fp16_overflow__byte_transformer__embedding_outliers__s0"


def test_english_summary_counts_in_words(run_cli):
    run = run_cli(EXAMPLE)
    assert run.code == 0, run.err
    assert "Findings: 1 error, 0 warnings, 0 notes" in run.out
    assert "(s)" not in run.out


def test_chinese_summary_has_no_english_labels(run_cli):
    run = run_cli(EXAMPLE, "--lang", "zh")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[1].startswith("结论：问题节点") and "第 10 号算子 BatchNormalization_13" in lines[1]
    assert "［错误，置信度 0.95］" in lines[1]
    assert lines[2].startswith("  证据：") and lines[3].startswith("  修复：")
    assert "发现：1 个错误，0 个警告，0 条提示" in run.out and "报告：" in run.out
    for english in ("Verdict", "evidence:", "fix:", "Findings", "Reports", "error", "confidence", " at op "):
        assert english not in run.out, english


def test_chinese_remedy_line_and_plural_steps(run_cli):
    run = run_cli(scenario_csv(OVERFLOW), "--config", OVERFLOW / "build.json", "--lang", "zh")
    assert run.code == 0, run.err
    assert re.search(r"修复方案：\S+README\.md（1 个步骤，适用于 ascend）", run.out)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("ci", "drawn"), [(None, True), ("true", False)])
def test_progress_is_drawn_on_a_terminal_only(run_cli, monkeypatch, ci, drawn):
    monkeypatch.delenv("CI", raising=False)
    if ci:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setattr("advisor.cli.run.ProgressBar", _no_delay(__import__("advisor.progress").progress.ProgressBar))
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    run = run_cli(EXAMPLE)
    assert run.code == 0
    assert ("advisor run: firing rules" in terminal.getvalue()) is drawn
    assert "\r" not in run.out


def _no_delay(bar_class):
    """The bar as `advisor run` makes it, shown at once (the real one waits 2 s for a slow run)."""
    def make(*args, **kwargs):
        kwargs["delay"] = 0.0
        return bar_class(*args, **kwargs)
    return make
