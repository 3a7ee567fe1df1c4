"""Cell values: missing markers, inf, StandardDeviation, TensorIndex, flags, dtypes, line numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, MINIMAL_HEADER

from advisor.dtypes import normalise_dtype
from advisor.ingest import read_comparison


@pytest.fixture
def full(write_result) -> pd.DataFrame:
    return read_comparison(write_result(FULL_HEADER, FULL_ROWS)).frame


def test_nan_star_and_empty_metric_cells_are_nan(write_result):
    header = "Index,OpType,NPUDump,GroundTruth,TensorIndex,CosineSimilarity,MaxAbsoluteError"
    rows = ["0,Relu,a,a,a:output:0,NaN,*", "1,Relu,b,b,b:output:0,,0.5"]
    frame = read_comparison(write_result(header, rows)).frame
    assert frame["cosine"].isna().tolist() == [True, True]
    assert frame["max_abs_error"].isna().tolist() == [True, False]


def test_infinite_kl_divergence_is_kept_as_inf(full):
    assert full.at[3, "kl_divergence"] == math.inf


def test_negative_infinity_is_kept(write_result):
    rows = ["0,Relu,a,a,a:output:0,-inf"]
    frame = read_comparison(write_result(MINIMAL_HEADER, rows)).frame
    assert frame.at[0, "cosine"] == -math.inf


def test_standard_deviation_is_split_into_npu_and_golden_mean_and_std(full):
    row = full.iloc[3]
    assert (row["npu_mean"], row["npu_std"]) == (12.5, 65504.0)
    assert (row["golden_mean"], row["golden_std"]) == (0.12, 1.3)
    assert full.loc[[1, 4], ["npu_mean", "npu_std", "golden_mean", "golden_std"]].isna().all().all()


def test_standard_deviation_with_nan_and_inf_inside(write_result):
    header = "Index,OpType,NPUDump,GroundTruth,TensorIndex,StandardDeviation"
    rows = ['0,Cast,a,a,a:output:0,"(NaN;NaN),(0.5;1.5)"',
            '1,Cast,b,b,b:output:0,"(inf;-inf),(1e-3;2E+2)"',
            '2,Cast,c,c,c:output:0,*']
    frame = read_comparison(write_result(header, rows)).frame
    stats = frame[["npu_mean", "npu_std", "golden_mean", "golden_std"]].to_numpy()
    assert math.isnan(stats[0, 0]) and math.isnan(stats[0, 1]) and list(stats[0, 2:]) == [0.5, 1.5]
    assert list(stats[1]) == [math.inf, -math.inf, 0.001, 200.0]
    assert all(math.isnan(v) for v in stats[2])


def test_colons_inside_op_names_split_from_the_right(write_result):
    rows = ["0,Conv2D,scope:conv:1,g,scope:conv:1:input:2,0.9",
            "0,Conv2D,scope:conv:1,g,scope:conv:1:output:10,0.9",
            "1,Add,a::b,g,a::b:output:0,0.9"]
    frame = read_comparison(write_result(MINIMAL_HEADER, rows)).frame
    assert frame["op_name"].tolist() == ["scope:conv:1", "scope:conv:1", "a::b"]
    assert frame["tensor_id"].tolist() == ["scope:conv:1:input:2", "scope:conv:1:output:10", "a::b:output:0"]
    assert frame["io"].tolist() == ["input", "output", "output"]
    assert frame["slot"].tolist() == [2, 10, 0]


def test_malformed_tensor_index_leaves_io_and_slot_na(write_result):
    rows = ["0,Relu,a,a,a_output_0,0.9", "1,Relu,b,b,b:Output:x,0.9", "2,Relu,c,c,NaN,0.9"]
    frame = read_comparison(write_result(MINIMAL_HEADER, rows)).frame
    assert frame["io"].isna().all() and frame["slot"].isna().all()
    assert frame.at[0, "tensor_id"] == "a_output_0"


def test_ground_truth_star_marks_npu_only_ops(full):
    assert full["npu_only"].tolist() == [False, True, False, False, False, False]
    assert pd.isna(full.at[1, "golden_ops"])
    assert full.at[1, "op_name"] == "trans_TransData_1"


def test_npu_dump_star_marks_golden_only_ops(full):
    assert full["golden_only"].tolist() == [False, False, False, False, True, False]
    assert pd.isna(full.at[4, "op_name"]) and pd.isna(full.at[4, "op_type"])
    assert full.at[4, "golden_ops"] == "conv2/Relu"


def test_node_output_row_is_the_network_output(full):
    assert full["is_network_output"].tolist() == [False, False, False, False, False, True]
    output = full.iloc[5]
    assert output["op_name"] == "Node_Output"
    assert output["golden_ops"] == "output_0.npy"
    assert pd.isna(output["op_type"])
    assert output["shape"] == "[]"
    assert output["cosine"] == pytest.approx(0.871234)


def test_an_op_merely_named_node_output_with_a_type_is_not_the_network_output(write_result):
    frame = read_comparison(write_result(MINIMAL_HEADER, ["0,Add,Node_Output,g,Node_Output:output:0,1"])).frame
    assert not frame.at[0, "is_network_output"]


def test_overflow_yes_no_and_nan(full):
    assert full["overflow"].tolist()[:4] == [pd.NA, False, False, True]
    assert str(full["overflow"].dtype) == "boolean"


def test_compare_fail_reason_keeps_its_comma_joined_text(full):
    assert full.at[1, "compare_fail_reason"] == "GroundTruth is *, no golden data"
    assert pd.isna(full.at[0, "compare_fail_reason"])


@pytest.mark.parametrize(("written", "normalised"), [
    ("DT_FLOAT", "float32"), ("DT_FLOAT16", "float16"), ("DT_BF16", "bfloat16"), ("DT_INT8", "int8"),
    ("DT_UINT8", "uint8"), ("DT_INT32", "int32"), ("DT_INT64", "int64"), ("DT_DOUBLE", "float64"),
    ("DT_BOOL", "bool"), ("float16", "float16"), ("torch.float16", "float16"), ("np.float16", "float16"),
    ("FLOAT16", "float16"), ("half", "float16"), ("bfloat16", "bfloat16"), ("BF16", "bfloat16"),
    ("torch.bfloat16", "bfloat16"), ("torch.float32", "float32"), ("DT_STRING", "dt_string"),
    ("Weird_Type", "weird_type"),
])
def test_dtype_names_are_normalised_to_numpy_style(written, normalised):
    assert normalise_dtype(written) == normalised


def test_dtype_columns_are_normalised_and_nan_stays_na(full):
    assert full["npu_dtype"].tolist()[:4] == ["float32", "float16", "float16", "float16"]
    assert full["golden_dtype"].tolist()[:3] == ["float32", pd.NA, "float32"]


def test_source_line_is_the_physical_line_with_the_header_as_line_1(full):
    assert full["source_line"].tolist() == [2, 3, 4, 5, 6, 7]


def test_blank_lines_are_skipped_but_counted(write_result):
    rows = ["0,Relu,a,a,a:output:0,0.9", "", "1,Relu,b,b,b:output:0,0.8", ""]
    frame = read_comparison(write_result(MINIMAL_HEADER, rows)).frame
    assert frame["op_name"].tolist() == ["a", "b"]
    assert frame["source_line"].tolist() == [2, 4]


def test_a_newline_inside_a_quoted_fail_reason_does_not_shift_line_numbers(write_result):
    header = MINIMAL_HEADER + ",CompareFailReason"
    rows = ['0,Relu,a,a,a:output:0,NaN,"failed:\nshape mismatch"', "1,Relu,b,b,b:output:0,0.8,"]
    frame = read_comparison(write_result(header, rows)).frame
    assert frame["source_line"].tolist() == [2, 4]
    assert frame.at[0, "compare_fail_reason"] == "failed:\nshape mismatch"
