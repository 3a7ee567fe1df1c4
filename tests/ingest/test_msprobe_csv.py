"""msprobe / ptdbg compare CSVs (FORMATS.md §2), every layout and mode, read into the canonical table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from msprobe_samples import (
    CURRENT_HEADER,
    CURRENT_ROWS,
    LEGACY_HEADER,
    LEGACY_ROWS,
    MD5_HEADER,
    MD5_ROWS,
    SUMMARY_HEADER,
    SUMMARY_ROWS,
)

from advisor.errors import InputFormatError
from advisor.ingest import read_comparison
from advisor.ingest.table import COLUMNS, check_schema


@pytest.mark.parametrize(("header", "rows", "expected"), [
    (CURRENT_HEADER, CURRENT_ROWS, "msprobe"),
    (SUMMARY_HEADER, SUMMARY_ROWS, "msprobe-summary"),
    (MD5_HEADER, MD5_ROWS, "msprobe-md5"),
    (LEGACY_HEADER, LEGACY_ROWS, "msprobe-legacy"),
])
def test_each_layout_is_detected_by_its_header_and_gives_the_canonical_schema(write_result, header, rows,
                                                                              expected):
    table = read_comparison(write_result(header, rows, name="compare_result_1.csv"))
    assert table.format == expected
    check_schema(table.frame)
    assert list(table.frame.columns) == list(COLUMNS)


@pytest.mark.parametrize(("header", "expected"), [
    # the current header without the stack column, and an older one without EucDist / Requires_grad
    (CURRENT_HEADER.removesuffix(",NPU_Stack_Info"), "msprobe"),
    ("NPU Name,Bench Name,NPU Dtype,Bench Dtype,NPU Tensor Shape,Bench Tensor Shape,Cosine,MaxAbsErr,"
     "MaxRelativeErr,One Thousandth Err Ratio,Five Thousandths Err Ratio,NPU max,NPU min,NPU mean,NPU l2norm,"
     "Bench max,Bench min,Bench mean,Bench l2norm,Accuracy Reached or Not,Err_message", "msprobe"),
    # older summary and MD5 modes: no Requires_grad, MD5 without Err_message
    ("NPU Name,Bench Name,NPU Dtype,Bench Dtype,NPU Tensor Shape,Bench Tensor Shape,Max diff,Min diff,Mean diff,"
     "L2norm diff,NPU max,NPU min,NPU mean,NPU l2norm,Bench max,Bench min,Bench mean,Bench l2norm,Result,"
     "Err_message", "msprobe-summary"),
    ("NPU Name,Bench Name,NPU Dtype,Bench Dtype,NPU Tensor Shape,Bench Tensor Shape,NPU MD5,BENCH MD5,Result",
     "msprobe-md5"),
    # old ptdbg summary: NPU Tensor Dtype with Max diff is summary mode first
    ("NPU Name,Bench Name,NPU Tensor Dtype,Bench Tensor Dtype,NPU Tensor Shape,Bench Tensor Shape,Max diff,"
     "Min diff,Mean diff,NPU max,NPU min,NPU mean,Bench max,Bench min,Bench mean,Accuracy Reached or Not,"
     "Err_message", "msprobe-summary"),
])
def test_header_variants_are_detected(write_result, header, expected):
    row = ",".join(["Functional.relu.0.forward.output.0"] * 2 + ["1"] * (len(header.split(",")) - 2))
    assert read_comparison(write_result(header, [row], name="compare_result_2.csv")).format == expected


def read_current(write_result, encoding="utf-8"):
    return read_comparison(write_result(CURRENT_HEADER, CURRENT_ROWS, encoding=encoding, name="cmp.csv"))


def test_names_give_call_api_io_slot_and_direction(write_result):
    frame = read_current(write_result).frame
    assert list(frame["op_name"]) == ["Functional.linear.0.forward"] * 3 + ["Torch.relu.0.forward",
                                                                            "Functional.linear.0.backward"]
    assert list(frame["op_type"]) == ["Functional.linear"] * 3 + ["Torch.relu", "Functional.linear"]
    assert list(frame["op_index"]) == [0, 0, 0, 1, 2]  # calls numbered in file order
    assert list(frame["io"]) == ["input", "input", "output", "input", "input"]
    assert frame["slot"].tolist() == [0, pd.NA, 0, 0, 0]  # the keyword argument "weight" has no slot
    assert list(frame["direction"]) == ["forward"] * 4 + ["backward"]
    assert frame.at[1, "tensor_id"] == "Functional.linear.0.forward.input.weight"
    assert list(frame["golden_ops"].astype("string").fillna("-")) == ["Functional.linear.0.forward"] * 3 + [
        "-", "Functional.linear.0.backward"]
    assert list(frame["npu_dtype"]) == ["float16"] * 3 + ["bfloat16", "float16"]
    assert list(frame["golden_dtype"].astype("string").fillna("-")) == ["float32"] * 3 + ["-", "float32"]


def test_a_tensor_listed_twice_reads_the_same_on_both_rows(write_result):
    # each row's name is split on its own (a comparison's names are nearly all distinct): a repeated
    # row, as a re-saved or concatenated file has, still gives one call and the same parts
    rows = [*CURRENT_ROWS, CURRENT_ROWS[-1], CURRENT_ROWS[0]]
    frame = read_comparison(write_result(CURRENT_HEADER, rows, name="cmp.csv")).frame
    for column in ("op_name", "op_type", "op_index", "io", "slot", "direction", "golden_ops"):
        values = frame[column].astype(object).tolist()
        assert values[-2:] == [values[4], values[0]], column
    assert frame["op_index"].tolist() == [0, 0, 0, 1, 2, 2, 0]


def test_metrics_statistics_and_verdicts_are_read_with_msprobe_words_as_nan(write_result):
    table = read_current(write_result)
    frame = table.frame
    first, weight = frame.iloc[0], frame.iloc[1]
    assert (first["cosine"], first["euclidean_distance"], first["max_abs_error"]) == (0.999999, 0.001, 0.0005)
    assert (first["max_relative_error"], first["err_ratio_1e3"], first["err_ratio_5e3"]) == (0.001, 1.0, 1.0)
    assert (weight["cosine"], weight["err_ratio_1e3"], weight["err_ratio_5e3"]) == (0.95, 0.5, 0.7)
    assert (first["npu_max"], first["npu_min"], first["npu_mean"], first["npu_norm"]) == (1.5, -1.5, 0.1, 3.0)
    assert (first["golden_max"], first["golden_min"], first["golden_mean"], first["golden_norm"]) == (
        1.5, -1.5, 0.1, 3.0)
    assert list(frame["verdict"].astype("string").fillna("-")) == ["Yes", "No", "Unmatched", "-", "None"]
    backward = frame.iloc[4]  # Nan, inf, "nan<TAB>", unsupported, None, empty
    assert np.isnan(backward["cosine"]) and backward["euclidean_distance"] == np.inf
    assert np.isnan(backward["max_abs_error"]) and np.isnan(backward["max_relative_error"])
    assert np.isnan(backward["err_ratio_1e3"]) and np.isnan(backward["err_ratio_5e3"])
    assert backward["compare_fail_reason"].startswith("Cannot compare by Cosine Similarity")
    assert frame["overflow"].isna().all() and not frame["is_network_output"].any()


def test_relative_euclidean_distance_and_statistic_differences_are_derived(write_result):
    table = read_current(write_result)
    frame = table.frame
    # EucDist / Bench l2norm: 0.001 / 3.0 and 2.5 / 5.0; NaN where the bench norm is 0 or absent
    assert frame["relative_euclidean_distance"].tolist()[:2] == pytest.approx([0.001 / 3.0, 0.5])
    assert frame["relative_euclidean_distance"].iloc[2:].isna().all()
    assert table.derived_metrics == ["relative_euclidean_distance", "max_rel_diff", "min_rel_diff",
                                     "mean_rel_diff", "norm_rel_diff"]
    # a bench value of 0: 0 when the NPU one is 0 too, NaN (undefined) otherwise
    backward = frame.iloc[4]
    assert backward["min_rel_diff"] == 0.0 and np.isnan(backward["max_rel_diff"])
    assert {"cosine", "euclidean_distance", "err_ratio_1e3", "npu_norm"} <= set(table.present_metrics)


def test_unmatched_rows_are_flagged(write_result):
    frame = read_current(write_result).frame
    assert frame["shape_mismatch"].tolist() == [False, False, True, pd.NA, False]
    assert frame.at[2, "shape"] == "[2, 4]" and frame.at[2, "golden_shape"] == "[2, 3]"
    assert frame.iloc[2][["cosine", "max_abs_error", "euclidean_distance"]].isna().all()
    assert frame["npu_only"].tolist() == [False, False, False, True, False]
    assert not frame["golden_only"].any()
    no_bench = frame.iloc[3]
    assert no_bench["compare_fail_reason"] == "No bench data matched."
    assert pd.isna(no_bench["golden_ops"]) and pd.isna(no_bench["golden_shape"]) and pd.isna(no_bench["verdict"])


def test_golden_only_rows_have_no_op_name_but_keep_the_bench_call(write_result):
    row = ("N/A,Functional.gelu.0.forward.output.0,N/A,torch.float32,N/A,[8],N/A,False,N/A,N/A,N/A,N/A,N/A,N/A,"
           "N/A,N/A,N/A,N/A,1.0,0.0,0.5,1.0,N/A,N/A,,None")
    frame = read_comparison(write_result(CURRENT_HEADER, [row], name="cmp.csv")).frame
    assert bool(frame.at[0, "golden_only"]) and not bool(frame.at[0, "npu_only"])
    assert pd.isna(frame.at[0, "op_name"]) and pd.isna(frame.at[0, "tensor_id"])
    assert frame.at[0, "golden_ops"] == "Functional.gelu.0.forward"
    assert (frame.at[0, "op_type"], frame.at[0, "io"], frame.at[0, "op_index"]) == ("Functional.gelu", "output", 0)


def test_source_lines_count_quoted_newlines_and_blank_lines(write_result):
    frame = read_current(write_result).frame
    assert list(frame["source_line"]) == [2, 4, 5, 7, 9]


def test_summary_mode_reads_percentages_as_fractions_and_never_as_element_wise_errors(write_result):
    table = read_comparison(write_result(SUMMARY_HEADER, SUMMARY_ROWS, name="cmp.csv"))
    frame = table.frame
    first, second = frame.iloc[0], frame.iloc[1]
    assert (first["max_rel_diff"], first["mean_rel_diff"], first["norm_rel_diff"]) == (0.5, 0.01, 0.1)
    assert np.isnan(first["min_rel_diff"])  # N/A: the bench min is 0
    assert frame["max_relative_error"].isna().all()  # summary MaxRelativeErr is about the maxima
    assert table.derived_metrics == []
    assert np.isnan(second["npu_max"]) and second["npu_mean"] == np.inf and second["norm_rel_diff"] == 0.0
    assert list(frame["verdict"].astype("string").fillna("-")) == ["Warning", "-"]
    assert first["compare_fail_reason"] == "Need double check api accuracy."
    assert frame["cosine"].isna().all()


def test_md5_mode_compares_the_digests(write_result):
    table = read_comparison(write_result(MD5_HEADER, MD5_ROWS, name="cmp.csv"))
    frame = table.frame
    assert frame["md5_match"].tolist() == [True, False, pd.NA]
    assert list(frame["verdict"].astype("string").fillna("-")) == ["pass", "Different", "-"]
    assert frame["npu_only"].tolist() == [False, False, True]
    assert table.present_metrics == []


def test_number_columns_a_layout_leaves_empty_hold_no_buffer_each(write_result):
    # an MD5 comparison fills no number: at a million rows 26 float columns of NaN would be as large
    # as the file; they share one array, and writing one column gives it its own
    frame = read_comparison(write_result(MD5_HEADER, MD5_ROWS * 50, name="cmp.csv")).frame
    empty = [frame[name].to_numpy() for name in ("cosine", "npu_max", "golden_norm", "max_rel_diff")]
    assert all(np.isnan(values).all() for values in empty)
    assert all(np.shares_memory(empty[0], values) for values in empty[1:])
    frame.loc[0, "cosine"] = 0.5
    assert np.isnan(frame["npu_max"].to_numpy()).all()


def test_old_ptdbg_names_and_mindspore_dtypes(write_result):
    frame = read_comparison(write_result(LEGACY_HEADER, LEGACY_ROWS, name="cmp.csv")).frame
    assert list(frame["op_name"]) == ["Functional_matmul_0_forward"] * 2
    assert list(frame["op_type"]) == ["Functional.matmul"] * 2
    assert list(frame["io"]) == ["input", "output"] and list(frame["slot"]) == [0, 0]
    assert list(frame["npu_dtype"]) == ["float16", "bfloat16"]
    assert list(frame["golden_dtype"]) == ["float32", "float32"]
    assert list(frame["verdict"]) == ["Yes", "No"]


def test_gbk_error_messages_are_decoded(write_result):
    rows = [CURRENT_ROWS[3].replace("No bench data matched.", "标杆数据缺失")]
    frame = read_comparison(write_result(CURRENT_HEADER, rows, encoding="gbk", name="cmp.csv")).frame
    assert frame.at[0, "compare_fail_reason"] == "标杆数据缺失"


def test_utf8_bom_header_is_recognised(write_result):
    table = read_comparison(write_result(LEGACY_HEADER, LEGACY_ROWS, encoding="utf-8-sig", name="cmp.csv"))
    assert table.format == "msprobe-legacy" and table.frame.at[0, "tensor_id"].startswith("Functional_matmul")


def test_a_bad_number_names_column_and_physical_line(write_result):
    rows = [*CURRENT_ROWS]
    rows[5] = rows[5].replace(",inf,", ",1.2.3,")
    with pytest.raises(InputFormatError) as caught:
        read_comparison(write_result(CURRENT_HEADER, rows, name="cmp.csv"))
    assert "bad number '1.2.3' in column EucDist" in str(caught.value)
    assert caught.value.line == 9
    assert str(caught.value).startswith(f"{caught.value.path}:9: ")


def test_a_bad_percentage_in_summary_mode_is_reported(write_result):
    rows = [SUMMARY_ROWS[0].replace("50.0%", "fifty%")]
    with pytest.raises(InputFormatError, match="bad number 'fifty%' in column MaxRelativeErr") as caught:
        read_comparison(write_result(SUMMARY_HEADER, rows, name="cmp.csv"))
    assert caught.value.line == 2


def test_forcing_a_mode_checks_its_columns(write_result):
    path = write_result(CURRENT_HEADER, CURRENT_ROWS, name="cmp.csv")
    with pytest.raises(InputFormatError, match="missing required columns NPU MD5, BENCH MD5; an msprobe-md5"):
        read_comparison(path, format="msprobe-md5")
    assert read_comparison(path, format="msprobe-legacy").format == "msprobe-legacy"


def test_a_header_with_names_but_no_metric_column_says_what_is_missing(write_result):
    header = "NPU Name,Bench Name,NPU Dtype,Bench Dtype"
    with pytest.raises(InputFormatError, match="missing required column Cosine") as caught:
        read_comparison(write_result(header, ["a.0.forward.input.0,a.0.forward.input.0,Float16,Float16"]))
    assert caught.value.line == 1


def test_a_truncated_last_row_is_reported(write_result):
    cut = CURRENT_ROWS[3][:40]
    with pytest.raises(InputFormatError, match="truncated file: the last row has 3 of 26 fields"):
        read_comparison(write_result(CURRENT_HEADER, [CURRENT_ROWS[1], cut], name="cmp.csv"))


def test_a_header_only_file_has_no_rows(write_result):
    with pytest.raises(InputFormatError, match="no rows"):
        read_comparison(write_result(LEGACY_HEADER, [], name="cmp.csv"))
