"""The Arrow read parses an msaccucmp result in blocks (msaccucmp_arrow.BLOCK_BYTES, 1 MiB), turns
each block into its final columns on a worker thread and joins the text a few blocks at a time.
The files here are shrunk blocks of kilobytes, so a small file spans dozens of them: the table
must be the one the exact read gives, and what the Arrow read cannot vouch for in a later block
(a quoted newline, a blank line) must still send the whole file to the exact read.
"""

from __future__ import annotations

import pandas as pd
import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, MINIMAL_HEADER

from advisor.ingest import msaccucmp, msaccucmp_arrow, msaccucmp_columns, read_comparison


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(msaccucmp_arrow, "BLOCK_BYTES", 2048)
    monkeypatch.setattr(msaccucmp_columns, "JOIN_BYTES", 3 * 2048)


def _reads(path, monkeypatch):
    """(Arrow read taken?, table as read, table of the exact read)."""
    taken = []
    original = msaccucmp.read_arrow
    with monkeypatch.context() as patch:
        patch.setattr(msaccucmp, "read_arrow", lambda *args: taken.append(original(*args)) or taken[-1])
        table = read_comparison(path)
    with monkeypatch.context() as patch:
        patch.setattr(msaccucmp, "read_arrow", lambda *args: None)
        exact = read_comparison(path)
    return taken[0] is not None, table, exact


def test_a_file_of_many_blocks_reads_as_the_exact_read_does(write_result, monkeypatch, small_blocks):
    rows = [row.replace("conv1", f"layer{i}/conv1") for i in range(80) for row in FULL_ROWS]
    fast, table, exact = _reads(write_result(FULL_HEADER, rows), monkeypatch)
    assert fast
    pd.testing.assert_frame_equal(table.frame, exact.frame)
    assert table.frame["source_line"].tolist() == list(range(2, len(rows) + 2))
    assert table.frame["golden_only"].sum() == table.frame["npu_only"].sum() == 80
    assert table.frame["tensor_id"].array._pa_array.num_chunks < len(rows) // 10  # joined, not one per block


def test_more_rows_than_the_first_block_promised(write_result, monkeypatch, small_blocks):
    # Long fail reasons first, short rows after: the row count guessed from the first block is
    # far too small, and the number columns grow while the file is read.
    long_rows = [f'{i},Relu,op{i},op{i},op{i}:output:0,0.5,"{"no golden data " * 25}"' for i in range(6)]
    short_rows = [f"{i},Relu,op{i},op{i},op{i}:output:0,0.{i % 10}," for i in range(6, 3000)]
    fast, table, exact = _reads(write_result(MINIMAL_HEADER + ",CompareFailReason", long_rows + short_rows),
                                monkeypatch)
    assert fast
    pd.testing.assert_frame_equal(table.frame, exact.frame)
    assert table.frame["op_index"].tolist() == list(range(3000))
    assert table.frame.at[2999, "cosine"] == 0.9


@pytest.mark.parametrize(("odd_line", "last_line"), [('7,Relu,op7,op7,op7:output:0,0.5,"two\nlines"', 403),
                                                     ("", 402)], ids=["quoted newline", "blank line"])
def test_a_later_block_the_arrow_read_cannot_vouch_for(write_result, monkeypatch, small_blocks, odd_line,
                                                       last_line):
    rows = [f"{i},Relu,op{i},op{i},op{i}:output:0,0.5," for i in range(400)]
    rows.insert(300, odd_line)
    fast, table, exact = _reads(write_result(MINIMAL_HEADER + ",CompareFailReason", rows), monkeypatch)
    assert not fast
    pd.testing.assert_frame_equal(table.frame, exact.frame)
    lines = table.frame["source_line"].tolist()
    assert lines[299] == 301 and lines[-1] == last_line  # the rows after the odd line a line further on


def test_writing_into_a_column_the_file_lacks_leaves_the_others(write_result):
    frame = read_comparison(write_result(FULL_HEADER, FULL_ROWS)).frame
    frame.loc[0, "npu_max"] = 1.0
    frame.loc[0, "md5_match"] = True
    frame.loc[0, "npu_arg"] = "Yes"  # a coded column (verdict...) takes no text it does not hold
    assert frame[["npu_min", "golden_max", "euclidean_distance"]].isna().all().all()
    assert frame["shape_mismatch"].isna().all() and frame["direction"].isna().all()
    assert (frame.at[0, "npu_max"], frame.at[0, "md5_match"], frame.at[0, "npu_arg"]) == (1.0, True, "Yes")
