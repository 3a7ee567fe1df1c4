"""benchmarks/scale_paths.py and its inputs: files the real msprobe wrote, replicated with every call
kept unique, whose first rows are the smaller file; a budget line that fails the run when a target is
missed or the growth is superlinear."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from advisor.ingest import read_comparison, read_dump_pair
from benchmarks import scale_paths
from benchmarks._msprobe_replica import replicate_compare_csv, replicate_dump_json
from benchmarks.perf import Measurement

SUMMARY = next(scale_paths.SOURCES["summary"].glob("compare_result_*.csv"))


def rows_of(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


def test_a_replicated_comparison_keeps_every_tensor_unique_and_starts_with_the_smaller_file(tmp_path):
    small, large = tmp_path / "small.csv", tmp_path / "large.csv"
    replicate_compare_csv(SUMMARY, small, 500)
    replicate_compare_csv(SUMMARY, large, 2_000)
    small_rows, large_rows = rows_of(small), rows_of(large)
    assert len(large_rows) == 2_001 and large_rows[:501] == small_rows
    original = rows_of(SUMMARY)
    assert large_rows[1:len(original)] == original[1:]          # the first copy is the file as msprobe wrote it
    names = [row[0] for row in large_rows[1:]]
    assert len(set(names)) == len(names)
    table = read_comparison(large)
    assert table.format == "msprobe-summary" and len(table) == 2_000
    copies = 2_000 // (len(original) - 1)              # whole copies: each adds the original's calls anew
    assert table.frame["op_name"].nunique() >= copies * read_comparison(SUMMARY).frame["op_name"].nunique()


def test_a_replicated_dump_pair_reads_as_one_pair_per_copy(tmp_path):
    source = scale_paths.SOURCES["dumpjson"]
    for side in ("bench", "target"):
        replicate_dump_json(source / f"fp16_overflow_{side}_dump.json", tmp_path / f"{side}.json", 12)
    data = json.loads((tmp_path / "target.json").read_text(encoding="utf-8"))["data"]
    assert len(data) == 12 and "Functional.linear.3.forward" in data     # copy 1 of linear.0 (stride 3)
    table = read_dump_pair(tmp_path / "bench.json", tmp_path / "target.json")
    assert table.frame["op_name"].nunique() == 12 and not table.frame["golden_only"].any()


def result(path: str, rows: int, seconds: float, *, baseline: float = 1.0, peak: float = 100.0,
           root: tuple | None = ("fp16_overflow", "op", 3)) -> scale_paths.Result:
    names = ["json.load both"] if path == "dumpjson" else list(scale_paths.MAX_CSV_RATIO)
    return scale_paths.Result(path, rows, file_mib=100.0, advisor=Measurement(seconds, seconds, peak),
                              baselines={n: Measurement(baseline, baseline, 50.0) for n in names}, root=root,
                              reference_root=("fp16_overflow", "op", 3))


def test_the_budget_lines_pass_linear_growth_within_the_targets():
    assert scale_paths.check([result("summary", 100_000, 1.0), result("summary", 1_000_000, 1.5)], 2.0) == []


@pytest.mark.parametrize(("results", "missed"), [
    ([result("summary", 100_000, 1.0), result("summary", 1_000_000, 25.0, baseline=20.0)], "SUPERLINEAR"),
    ([result("md5", 1_000_000, 9.0, baseline=2.0)], "pandas C, Python str"),
    ([result("all", 1_000_000, 12.0, baseline=10.0)], "target < 10 s"),
    ([result("dumpjson", 1_000_000, 4.0, baseline=1.0)], "json.load"),
    ([result("summary", 1_000_000, 1.0, peak=250.0)], "peak RSS"),
    ([result("summary", 100_000, 1.0, root=("problem_node", "op", 9))], "root cause"),
])
def test_a_missed_target_or_another_diagnosis_fails_the_run(results, missed):
    failed = scale_paths.check(results, 2.0)
    assert failed and any(missed in line for line in failed)


def test_a_step_that_fails_is_a_missed_line_and_the_other_paths_still_run(monkeypatch, capsys):
    """An advisor run that exits 2 on one path (as the 16.8M-cell bound did on a 1M-row workbook) is said and
    counted; the sweep goes on instead of ending in a traceback."""
    def measure(path, rows, workdir):
        if path == "xlsx":
            raise RuntimeError("advisor run big.xlsx exited with 2: advisor: error: big.xlsx: too many cells")
        return result(path, rows, 1.0)

    monkeypatch.setattr(scale_paths, "measure_path", measure)
    monkeypatch.setattr(scale_paths, "reference_root", lambda path, workdir: ("fp16_overflow", "op", 3))
    assert scale_paths.main(["--rows", "100000", "--paths", "xlsx", "summary"]) == 1
    out = capsys.readouterr().out
    assert "xlsx 100,000: did not run: advisor run big.xlsx exited with 2" in out
    assert "summary     100,000" in out and "MISSED: xlsx 100,000: did not run" in out
