"""The batch benchmark (benchmarks/batch.py) runs end to end on a few jobs and reports what it measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import batch as bench


def test_batch_benchmark_measures_one_worker_all_workers_and_the_unchanged_rerun(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "figures.json"
    code = bench.main(["--jobs", "4", "--workers", "2", "--formats", "json", "--keep", str(tmp_path / "work"),
                       "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "advisor batch: 4 jobs" in printed and "speed-up with 2 workers" in printed
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert (figures["single"]["workers"], figures["parallel"]["workers"]) == (1, 2)
    assert figures["single"]["analysed"] == figures["parallel"]["analysed"] == 4
    assert figures["unchanged"]["unchanged"] == 4 and figures["unchanged"]["analysed"] == 0
    assert figures["speedup"] > 0
