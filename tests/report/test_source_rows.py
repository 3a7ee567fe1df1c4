"""Reading a comparison's rows by line number for the report: right at block boundaries, GBK as well as
UTF-8, long rows cut, lines past the end left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.report import source_rows
from advisor.report.source_rows import MAX_CHARS, read_lines


@pytest.mark.parametrize("block", [1, 3, 7, 1000, 1 << 20])
def test_lines_are_found_whatever_the_block_size(tmp_path: Path, monkeypatch, block: int) -> None:
    monkeypatch.setattr(source_rows, "BLOCK", block)
    path = tmp_path / "result.csv"
    path.write_bytes(b"".join(f"row {i}\r\n".encode() for i in range(1, 3001)) + b"last without newline")
    wanted = {1, 2, 999, 1000, 1001, 2999, 3000, 3001, 3002}
    assert read_lines(path, wanted) == {n: f"row {n}" for n in wanted if n <= 3000} | {3001: "last without newline"}


def test_gbk_rows_and_long_rows(tmp_path: Path) -> None:
    path = tmp_path / "result.csv"
    path.write_bytes("算子,余弦\n".encode("gbk") + b"x" * (MAX_CHARS + 50) + b"\n")
    found = read_lines(path, {1, 2})
    assert found[1] == "算子,余弦"
    assert len(found[2]) == MAX_CHARS and found[2].endswith("…")
