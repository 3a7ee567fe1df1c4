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


def test_msprobe_names_with_a_counter_or_index_of_thousands_of_digits_are_read(advisor, realdata, tmp_path: Path):
    """Found by the 30-minute run (an xlsx example, the same in a CSV): Python refuses to read a number
    of over 4,300 digits (ValueError, exit 3); msprobe's counters and indices are numbers of a few digits."""
    source = realdata("Ascend__msprobe/test__msprobe_test__resources__compare_result_20230703104808.csv")
    with source.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    big = "9" * 5000
    rows[1][0] = f"Functional_linear_{big}_forward_input.0"
    rows[2][0] = f"Functional_linear_0_forward_input.{big}"
    hostile = tmp_path / "compare_result_20230703104808.csv"
    with hostile.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    run = advisor("run", hostile, "--format", "json", "-q", "-o", tmp_path / "out")
    assert run.code in (0, 1, 2) and "internal error" not in run.err, run.err
