"""benchmarks/same_reports.py: the check that a speed-up changed no report, able to fail."""

from __future__ import annotations

from pathlib import Path

from benchmarks.same_reports import differences, main

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "rules" / "core" / "propagation" / "cases" / "problem-node.fires.csv"


def test_a_report_byte_or_an_exit_code_apart_is_a_difference(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for side, text in ((old, "Conv_3 enters"), (new, "Conv_3 enters")):
        side.mkdir()
        (side / "report.md").write_text(text, encoding="utf-8")
    assert differences(old, new, (1, 1)) == []
    (new / "report.md").write_text("Conv_3 enters.", encoding="utf-8")
    (new / "report.txt").write_text("only here", encoding="utf-8")
    assert differences(old, new, (1, 0)) == ["exit 1 vs 0", "report.md", "report.txt"]


def test_one_checkout_against_itself_writes_the_same_reports(tmp_path, capsys):
    assert main([str(REPO), str(REPO), "--out", str(tmp_path), "--inputs", str(SMALL)]) == 0
    assert "1 identical, 0 differing" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "new" / "1").glob("report.*")) == [
        "report.html", "report.json", "report.md", "report.txt"]
