"""Inputs the long fuzz run (python -m benchmarks.fuzz --minutes 30) found to end in exit 3, kept as
regressions: each must now give a report or one line and exit 2."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.conftest import EXAMPLE


def test_a_row_whose_tensor_index_names_no_input_or_output_is_read(advisor, tmp_path: Path):
    """A TensorIndex without ':input:N'/':output:N' leaves the row's side unknown; the tensor-role step
    took that missing value for a boolean (TypeError, exit 3)."""
    with EXAMPLE.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    column = rows[0].index("TensorIndex")
    rows[5][column] = rows[5][column].split(":")[0]
    broken = tmp_path / "result_20240506043136.csv"
    with broken.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    run = advisor("run", broken, "--format", "json", "-q", "-o", tmp_path / "out")
    assert run.code in (0, 1) and "internal error" not in run.err, run.err
    assert (tmp_path / "out" / "report.json").is_file()
