"""UTF-8 (with or without BOM) and GBK, the encoding Chinese Windows tools write, all read the same."""

from __future__ import annotations

import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, MINIMAL_HEADER

from advisor.ingest import read_comparison

CHINESE_REASON = "数据类型不一致, 无法比对"
ROWS = [f'0,Cast,cast_0,cast_0,cast_0:output:0,NaN,"{CHINESE_REASON}"',
        "1,Relu,relu_1,relu_1,relu_1:output:0,0.999,"]
HEADER = MINIMAL_HEADER + ",CompareFailReason"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "gbk"])
def test_chinese_fail_reason_reads_in_every_supported_encoding(write_result, encoding):
    table = read_comparison(write_result(HEADER, ROWS, encoding=encoding))
    assert table.frame.at[0, "compare_fail_reason"] == CHINESE_REASON
    assert table.frame.at[0, "op_index"] == 0  # the BOM did not stick to the first header name


def test_bom_file_reads_like_the_plain_one(write_result):
    plain = read_comparison(write_result(FULL_HEADER, FULL_ROWS, name="plain.csv")).frame
    bom = read_comparison(write_result(FULL_HEADER, FULL_ROWS, name="bom.csv", encoding="utf-8-sig")).frame
    assert plain.equals(bom)


def test_gbk_text_first_seen_beyond_the_sniffed_chunk_falls_back_to_gbk(write_result):
    # 2,000 ASCII rows (well over the 64 KiB sniffed) before the first Chinese character
    ascii_rows = [f"{i},Relu,relu_{i},relu_{i},relu_{i}:output:0,0.999999,no reason at all here"
                  for i in range(2000)]
    path = write_result(HEADER, [*ascii_rows, *ROWS], encoding="gbk")
    assert path.stat().st_size > 64 * 1024
    frame = read_comparison(path).frame
    assert frame["compare_fail_reason"].iloc[-2] == CHINESE_REASON
    assert len(frame) == 2002


def test_gbk_op_names_are_decoded(write_result):
    rows = ["0,Conv2D,卷积_1,卷积_1,卷积_1:output:0,0.5"]
    frame = read_comparison(write_result(MINIMAL_HEADER, rows, encoding="gbk")).frame
    assert frame.at[0, "op_name"] == "卷积_1"
    assert (frame.at[0, "io"], frame.at[0, "slot"]) == ("output", 0)
