"""Hostile and broken CSVs (issue #19): one bounded, one-line InputFormatError (exit 2), never an
internal error, a hang or a silently cut row. Each test failed before the fix it protects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from msaccucmp_samples import MINIMAL_HEADER
from msprobe_samples import CURRENT_HEADER

from advisor.errors import InputFormatError
from advisor.ingest import read_comparison
from advisor.ingest.csv_cells import MAX_COLUMNS

MSPROBE_ROW = ('Functional.linear.0.forward.output.0,Functional.linear.0.forward.output.0,torch.float16,'
               'torch.float32,"[2, 4]","[2, 4]",True,True,0.999,0.01,0.005,0.01,1.0,1.0,1.5,-1.5,0.1,3.0,1.5,'
               '-1.5,0.1,3.0,True,Yes,,None')


def refused(path: Path) -> InputFormatError:
    with pytest.raises(InputFormatError) as caught:
        read_comparison(path)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    assert len(message) < 500, message[:600]
    return caught.value


def test_bare_cr_line_endings_are_refused_in_one_line(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes(b"a,b\rc,d\r")  # was: csv.Error "new-line character seen in unquoted field", exit 3
    err = refused(path)
    assert "bare CR" in str(err) and err.line == 1


def test_bare_cr_line_endings_exit_2_from_the_command_line(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes((MINIMAL_HEADER + "\r0,Relu,a,a,a:output:0,0.9\r").encode())
    run = subprocess.run([sys.executable, "-m", "advisor", "run", str(path), "-o", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_header_with_thousands_of_columns_is_refused(write_result):
    # 2,000 extra columns in an 11 KB header took 67 s of CPU (header handling was cubic).
    header = MINIMAL_HEADER + "".join(f",extra{i}" for i in range(2000))
    err = refused(write_result(header, ["0,Relu,a,a,a:output:0,0.9" + ",1" * 2000]))
    assert f"2,006 columns, more than the {MAX_COLUMNS:,}" in str(err)
    assert err.line == 1


def test_a_wide_header_under_the_bound_is_read_with_every_column_kept(write_result):
    width = MAX_COLUMNS - 6
    header = MINIMAL_HEADER + "".join(f",extra{i}" for i in range(width))
    table = read_comparison(write_result(header, ["0,Relu,a,a,a:output:0,0.9" + ",1" * width]))
    assert len(table.extra_metrics) == width
    assert table.frame[f"user_extra{width - 1}"].tolist() == [1.0]


@pytest.mark.parametrize("header, row", [(CURRENT_HEADER, MSPROBE_ROW), (MINIMAL_HEADER, "0,Relu,a,a,a:output:0,0.9")])
def test_extra_fields_in_the_first_row_name_the_line(write_result, header, row):
    # The first data row used to lose its extra fields silently (a pandas warning, exit 0).
    err = refused(write_result(header, [row + ",EXTRA", row]))
    fields = len(header.split(","))
    assert f"row has {fields + 1} fields but the header has {fields}" in str(err)
    assert err.line == 2


@pytest.mark.parametrize("header, row", [(CURRENT_HEADER, MSPROBE_ROW), (MINIMAL_HEADER, "0,Relu,a,a,a:output:0,0.9")])
def test_extra_fields_in_a_later_row_name_the_line(write_result, header, row):
    err = refused(write_result(header, [row, row + ",EXTRA"]))
    assert "fields but the header has" in str(err)
    assert err.line == 3


def test_a_first_row_of_hundreds_of_thousands_of_fields_is_refused_at_once(write_result):
    # pandas spends time quadratic in the extra fields of the first row (25M: > 60 s, > 6 GB).
    err = refused(write_result(MINIMAL_HEADER, ["0,Relu,a,a,a:output:0,0.9" + ",x" * 600_000]))
    assert "row has at least" in str(err) and "fields but the header has 6" in str(err)
    assert err.line == 2


@pytest.mark.parametrize("header, row, column", [
    (CURRENT_HEADER, MSPROBE_ROW.replace(",0.999,", ",{cell},", 1), "Cosine"),
    (MINIMAL_HEADER, "0,Relu,a,a,a:output:0,{cell}", "CosineSimilarity"),
])
def test_a_huge_bad_cell_makes_a_short_message(write_result, header, row, column):
    cell = "z" * 5_000_000
    err = refused(write_result(header, [row.format(cell="0.5"), row.format(cell=cell)]))
    assert "bad number 'zzz" in str(err) and f"(5,000,000 characters) in column {column}" in str(err)
    assert err.line == 3
