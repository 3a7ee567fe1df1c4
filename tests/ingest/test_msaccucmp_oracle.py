"""Both reads of an msaccucmp result (pyarrow's, batch by batch, and the exact chunked C-parser
read it gives way to) agree with a plain row-by-row reading (Python's csv module) of a realistic
synthetic file: the same generator the 1M-row benchmark uses."""

from __future__ import annotations

import csv
import math

import pandas as pd
import pytest
from bench_msaccucmp import write_synthetic

from advisor.ingest import msaccucmp, msaccucmp_arrow, msaccucmp_exact, read_comparison


def _number(text: str) -> float:
    return math.nan if text in ("NaN", "*", "") else float(text)


@pytest.mark.parametrize("read", ["arrow", "exact"])
def test_reader_agrees_with_a_row_by_row_reading(tmp_path, monkeypatch, read):
    path = tmp_path / "result_20240101000000.csv"
    write_synthetic(path, rows=3000)
    monkeypatch.setattr(msaccucmp_exact, "CHUNK_ROWS", 700)  # several chunks, uneven last one
    monkeypatch.setattr(msaccucmp_arrow, "BLOCK_BYTES", 64 << 10)  # several batches
    if read == "exact":
        monkeypatch.setattr(msaccucmp, "read_arrow", lambda *args: None)
    frame = read_comparison(path).frame

    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    assert len(frame) == len(rows) == 3000
    for i in range(0, len(rows), 37):  # a spread sample, including chunk edges
        row = rows[i]
        name, io, slot = row[7].rsplit(":", 2)
        got = frame.iloc[i]
        assert got["op_index"] == int(row[0])
        assert got["tensor_id"] == row[7] and got["io"] == io and got["slot"] == int(slot)
        assert got["npu_only"] == (row[5] == "*")
        assert (pd.isna(got["golden_ops"]) if row[5] == "*" else got["golden_ops"] == row[5])
        assert got["npu_dtype"] == {"DT_FLOAT": "float32", "DT_FLOAT16": "float16"}[row[3]]
        assert got["source_line"] == i + 2
        for column, position in (("cosine", 10), ("kl_divergence", 14), ("mean_relative_error", 19)):
            expected = _number(row[position])
            assert got[column] == pytest.approx(expected, nan_ok=True)
        if row[15] != "NaN":
            npu, golden = row[15][1:-1].split("),(")
            values = [float(v) for v in (*npu.split(";"), *golden.split(";"))]
            assert [got["npu_mean"], got["npu_std"], got["golden_mean"], got["golden_std"]] == values
    assert frame["is_network_output"].tolist()[-1] and frame["is_network_output"].sum() == 1
    assert frame["overflow"].sum() > 0 and frame["npu_only"].sum() > 0
    assert frame["op_name"].str.contains(":fused", regex=False).sum() > 0
