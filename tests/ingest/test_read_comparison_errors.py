"""Bad input gives one InputFormatError whose one-line message names the file (and the line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, MINIMAL_HEADER

from advisor.errors import InputFormatError, UsageError
from advisor.ingest import read_comparison


def read_error(path: Path, **kwargs) -> InputFormatError:
    with pytest.raises(InputFormatError) as caught:
        read_comparison(path, **kwargs)
    err = caught.value
    message = str(err)
    assert "\n" not in message
    assert message.startswith(str(path)), message
    return err


def test_missing_file(tmp_path):
    err = read_error(tmp_path / "result_nope.csv")
    assert "file not found" in str(err)


def test_directory_instead_of_a_file(tmp_path):
    err = read_error(tmp_path)
    assert "is a directory" in str(err)


def test_empty_file(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes(b"")
    assert "empty file" in str(read_error(path))


def test_whitespace_only_file_is_empty(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes(b"\n\r\n  \n")
    assert "empty file" in str(read_error(path))


def test_header_only_file_has_no_rows(write_result):
    err = read_error(write_result(FULL_HEADER, []))
    assert "no rows" in str(err)


def test_header_followed_by_blank_lines_has_no_rows(write_result):
    assert "no rows" in str(read_error(write_result(FULL_HEADER, ["", ""])))


def test_unknown_header_lists_the_expected_formats(write_result):
    path = write_result("name,value,score", ["a,1,2"])
    err = read_error(path)
    message = str(err)
    assert err.line == 1
    assert "unknown header 'name,value,score'" in message
    assert "expected one of: msaccucmp (Index, OpType, NPUDump," in message
    assert "msaccucmp-legacy (Index, LeftOp, RightOp, TensorIndex" in message
    for name in ("msprobe", "msprobe-summary", "msprobe-md5", "msprobe-legacy", "generic", "msprobe-dump"):
        assert f"; {name} (" in message, name


def test_unknown_format_name_is_a_usage_error(write_result):
    with pytest.raises(UsageError, match="unknown format 'msprobe-xlsx'.*msaccucmp.*msprobe-dump"):
        read_comparison(write_result(FULL_HEADER, FULL_ROWS), format="msprobe-xlsx")


@pytest.mark.parametrize(("header", "missing"), [
    ("OpType,NPUDump,GroundTruth,TensorIndex,CosineSimilarity", "missing required column Index"),
])
def test_a_missing_required_column_is_named(write_result, header, missing):
    # Only Index is required (with one metric): what else is missing is derived (test_liberal_msaccucmp.py).
    row = ",".join(["1"] * len(header.split(",")))
    err = read_error(write_result(header, [row]))
    assert missing in str(err)
    assert err.line == 1


def test_a_file_without_any_metric_column_says_which_are_expected(write_result):
    err = read_error(write_result("Index,OpType,NPUDump,GroundTruth,TensorIndex,Shape",
                                  ['0,Relu,a,a,a:output:0,"[1]"']))
    assert "no metric column; expected at least one of CosineSimilarity, MaxAbsoluteError" in str(err)


def test_a_column_named_twice_is_an_error(write_result):
    err = read_error(write_result(MINIMAL_HEADER + ",CosineSimilarity", ["0,Relu,a,a,a:output:0,1,1"]))
    assert "column CosineSimilarity appears twice" in str(err)


def test_truncated_last_row_names_its_line(tmp_path):
    path = tmp_path / "result_cut.csv"
    cut = FULL_ROWS[3].index("0.873215") + 4  # mid-number, outside any quotes
    text = "\n".join([FULL_HEADER, *FULL_ROWS[:3]]) + "\n" + FULL_ROWS[3][:cut]
    path.write_text(text, encoding="utf-8")
    err = read_error(path)
    assert "truncated file: the last row has" in str(err)
    assert err.line == 5


def test_file_cut_inside_a_quoted_field_names_the_line(tmp_path):
    path = tmp_path / "result_cut.csv"
    row = FULL_ROWS[2]
    path.write_text("\n".join([FULL_HEADER, FULL_ROWS[0], row[: row.index("(0.449463") + 5]]),
                    encoding="utf-8")
    err = read_error(path)
    assert "truncated" in str(err)
    assert err.line == 3


def test_a_row_with_too_many_fields_names_its_line(write_result):
    err = read_error(write_result(MINIMAL_HEADER, ["0,Relu,a,a,a:output:0,1", "1,Relu,b,b,b:output:0,1,9"]))
    assert "row has 7 fields but the header has 6" in str(err)
    assert err.line == 3


def test_bad_number_names_the_column_and_line(write_result):
    rows = [f"{i},Relu,op{i},op{i},op{i}:output:0,0.9" for i in range(60)]
    rows[55] = "55,Relu,op55,op55,op55:output:0,abc"
    err = read_error(write_result(MINIMAL_HEADER, rows))
    assert "bad number 'abc' in column CosineSimilarity" in str(err)
    assert err.line == 57
    assert str(err).startswith(f"{err.path}:57: ")


def test_the_earliest_bad_number_is_reported_whatever_its_column(write_result):
    header = MINIMAL_HEADER + ",MaxAbsoluteError"
    rows = ["0,Relu,a,a,a:output:0,0.9,0.1", "1,Relu,b,b,b:output:0,0.9,x1", "2,Relu,c,c,c:output:0,x2,0.1"]
    err = read_error(write_result(header, rows))
    assert "bad number 'x1' in column MaxAbsoluteError" in str(err)
    assert err.line == 3


def test_non_integer_index_is_reported(write_result):
    err = read_error(write_result(MINIMAL_HEADER, ["0,Relu,a,a,a:output:0,1", "1.5,Relu,b,b,b:output:0,1"]))
    assert "bad integer 1.5 in column Index" in str(err)
    assert err.line == 3


def test_malformed_standard_deviation_names_column_and_line(write_result):
    header = "Index,OpType,NPUDump,GroundTruth,TensorIndex,StandardDeviation"
    rows = ['0,Relu,a,a,a:output:0,"(0.1;0.2),(0.3;0.4)"', '1,Relu,b,b,b:output:0,"(0.1;0.2)"']
    err = read_error(write_result(header, rows))
    assert "bad value '(0.1;0.2)' in column StandardDeviation: expected (mean;std),(mean;std)" in str(err)
    assert err.line == 3


def test_standard_deviation_with_text_instead_of_a_number(write_result):
    header = "Index,OpType,NPUDump,GroundTruth,TensorIndex,StandardDeviation"
    rows = ['0,Relu,a,a,a:output:0,"(0.1;abc),(0.3;0.4)"']
    err = read_error(write_result(header, rows))
    assert "bad value '(0.1;abc),(0.3;0.4)' in column StandardDeviation" in str(err)
    assert err.line == 2


def test_binary_garbage_is_not_text(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes(bytes(range(256)) * 20)
    assert "not UTF-8 or GBK text (it holds binary data)" in str(read_error(path))


def test_bytes_that_are_neither_utf8_nor_gbk_are_refused(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes(FULL_HEADER.encode() + b"\n\xff\xfe\xfd\x80\x80,1,2\n")
    assert "not UTF-8 or GBK text" in str(read_error(path))


def test_utf16_files_are_refused_with_advice(tmp_path):
    path = tmp_path / "result.csv"
    path.write_bytes((FULL_HEADER + "\n" + FULL_ROWS[0] + "\n").encode("utf-16"))
    assert "not UTF-8 or GBK text (it is UTF-16: save it as UTF-8)" in str(read_error(path))
