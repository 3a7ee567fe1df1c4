"""Big files are read in chunks and split with fast vectorised paths: neither may change a result.

The fast paths (numpy on joined bytes for TensorIndex, a second C-parser pass for
StandardDeviation) are checked against the plain regex versions they replace.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, MINIMAL_HEADER

from advisor.errors import InputFormatError
from advisor.ingest import msaccucmp_exact, msaccucmp_fields, read_comparison


@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(msaccucmp_exact, "CHUNK_ROWS", 2)


def test_chunked_read_gives_the_same_table(write_result, monkeypatch):
    rows = FULL_ROWS * 5
    whole = read_comparison(write_result(FULL_HEADER, rows)).frame
    monkeypatch.setattr(msaccucmp_exact, "CHUNK_ROWS", 3)
    chunked = read_comparison(write_result(FULL_HEADER, rows, name="again.csv")).frame
    pd.testing.assert_frame_equal(whole, chunked)


def test_line_numbers_stay_right_across_chunks(write_result, tiny_chunks):
    header = MINIMAL_HEADER + ",CompareFailReason"
    rows = ["0,Relu,a,a,a:output:0,0.9,", "", '1,Relu,b,b,b:output:0,NaN,"two\nlines"',
            "2,Relu,c,c,c:output:0,0.9,", "", "", "3,Relu,d,d,d:output:0,0.9,"]
    frame = read_comparison(write_result(header, rows)).frame
    assert frame["op_name"].tolist() == ["a", "b", "c", "d"]
    assert frame["source_line"].tolist() == [2, 4, 6, 9]


def test_bad_number_in_a_later_chunk_names_its_line(write_result, tiny_chunks):
    rows = [f"{i},Relu,op{i},op{i},op{i}:output:0,0.5" for i in range(9)]
    rows[7] = "7,Relu,op7,op7,op7:output:0,0.5x"
    with pytest.raises(InputFormatError) as caught:
        read_comparison(write_result(MINIMAL_HEADER, rows))
    assert caught.value.line == 9
    assert "bad number '0.5x' in column CosineSimilarity" in str(caught.value)


def test_truncated_last_row_after_several_chunks(tmp_path, tiny_chunks):
    path = tmp_path / "result.csv"
    rows = [f"{i},Relu,op{i},op{i},op{i}:output:0,0.5" for i in range(7)]
    path.write_text("\n".join([MINIMAL_HEADER, *rows, "7,Relu,op7"]), encoding="utf-8")
    with pytest.raises(InputFormatError, match="truncated file: the last row has 3 of 6 fields") as caught:
        read_comparison(path)
    assert caught.value.line == 9


TENSOR_IDS = ["a:input:0", "x:y:output:12", "bad", None, "a:input:", ":output:3", "input:0", "a:b:c",
              "op:inputs:1", "op:output:123456789012345678", "op:output:1234567890123456789",
              "é:input:7", "a:Output:1", "a:input:0x", "0", "a:input:٣", "卷积:output:4", "a\n:input:1"]


@pytest.mark.parametrize("ids", [TENSOR_IDS, TENSOR_IDS[:-1]], ids=["with-newline", "plain"])
def test_fast_tensor_index_split_agrees_with_the_regex(ids):
    series = pd.Series(ids, dtype=object)
    fast_io, fast_slot = msaccucmp_fields.split_tensor_ids(series)
    ref_io, ref_slot = msaccucmp_fields.split_tensor_ids_regex(series)
    assert list(fast_io) == list(ref_io)
    assert list(fast_slot) == list(ref_slot)
    assert str(fast_slot.dtype) == "Int64" and str(fast_io.dtype) == "string"


def test_fast_standard_deviation_split_agrees_with_the_exact_one():
    values = pd.Series(["(0.1;0.2),(0.3;0.4)", None, "(NaN;inf),(-inf;1e-7)", "(-1.5;0),(2;3.25)",
                        " (1;2) , (3;4) "], dtype=object)
    lines = np.arange(2, 2 + len(values))
    fast = msaccucmp_fields._split_std_fast(values)
    exact = msaccucmp_fields._split_std_exact(values, lines, "result.csv", "StandardDeviation")
    assert fast is not None
    for name in exact:
        np.testing.assert_array_equal(fast[name], exact[name])


def test_standard_deviation_as_msaccucmp_writes_it_is_split_without_the_regex(monkeypatch):
    values = pd.Series(["(0.1;0.2),(0.3;0.4)", None, "(NaN;inf),(-inf;1e-7)", "(-1.5;0),(2;3.25)"], dtype=object)
    lines = np.arange(2, 2 + len(values))
    exact = msaccucmp_fields._split_std_exact(values, lines, "result.csv", "StandardDeviation")
    import pyarrow.compute as pc

    monkeypatch.setattr(pc, "extract_regex", None)  # the plain split alone must take these cells
    fast = msaccucmp_fields._split_std_fast(values)
    assert fast is not None
    for name in exact:
        np.testing.assert_array_equal(fast[name], exact[name])


@pytest.mark.parametrize("cell", ["(1;2),(;4)", "(1;2),(3;*)", "(1;2),(3; 4)", "(1;2) ,(3;4)"])
def test_cells_the_plain_split_refuses_are_still_read_as_the_exact_path_reads_them(cell):
    values = pd.Series(["(0.1;0.2),(0.3;0.4)", cell], dtype=object)
    assert msaccucmp_fields._split_std_plain(msaccucmp_fields.arrow_strings(values)) is None
    exact = msaccucmp_fields._split_std_exact(values, np.array([2, 3]), "result.csv", "StandardDeviation")
    fast = msaccucmp_fields._split_std_fast(values)
    if fast is not None:  # or the exact path decides
        for name in exact:
            np.testing.assert_array_equal(fast[name], exact[name])


@pytest.mark.parametrize("bad", ["(0.1;0.2)", "(0.1;0.2),(0.3)", "(1;2;3),(4;5)", "garbage",
                                 "(1;2;3),(4)", "(1),(2;3;4)", "((1;2),(3;4))", "(1;2)),((3;4)",
                                 "(1;2),(3;4);", "(1;2),(3;4),(5;6)", "(1;2)(3;4)"])
def test_malformed_standard_deviation_is_not_taken_by_the_fast_path(bad):
    values = pd.Series(["(0.1;0.2),(0.3;0.4)", bad], dtype=object)
    assert msaccucmp_fields._split_std_fast(values) is None
    with pytest.raises(InputFormatError) as caught:
        msaccucmp_fields._split_std_exact(values, np.array([2, 3]), "result.csv", "StandardDeviation")
    assert caught.value.line == 3
