"""benchmarks/stages_1m.py: it runs on a real comparison and times every stage it names (a renamed
pipeline function made it fail before its first line; nothing noticed)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.stages_1m import main

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "msprobe_faults" / "fp16_overflow_statistics.csv"


def test_every_stage_it_names_runs_and_is_printed(tmp_path, capsys):
    assert main([str(REAL), "-o", str(tmp_path / "out"), "--format", "json"]) == 0
    out = capsys.readouterr().out
    for stage in ("read_comparison", "build_facts", "mark_training", "choose_op_facts", "run_rules",
                  "attach_source_lines", "write_reports"):
        assert any(line.split()[:1] == [stage] for line in out.splitlines()), stage
    assert (tmp_path / "out" / "report.json").exists()
