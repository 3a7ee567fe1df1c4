"""Every header layout msaccucmp writes (FORMATS.md §1) reads into the one canonical table."""

from __future__ import annotations

import pandas as pd
import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, LEGACY_HEADER, LEGACY_ROWS, MINIMAL_HEADER

from advisor.ingest import known_formats, read_comparison
from advisor.ingest.table import COLUMNS, METRIC_COLUMNS, STAT_COLUMNS, check_schema


def test_the_usual_layout_is_detected_and_gives_the_canonical_schema(write_result):
    path = write_result(FULL_HEADER, FULL_ROWS)
    table = read_comparison(str(path))
    assert table.source == path
    check_schema(table.frame)
    assert list(table.frame.columns) == list(COLUMNS)
    assert table.format == "msaccucmp"
    assert len(table) == len(FULL_ROWS)
    assert table.present_metrics == [*METRIC_COLUMNS, *STAT_COLUMNS]
    assert table.extra_metrics == []
    assert isinstance(table.frame.index, pd.RangeIndex)


def test_both_registered_formats_are_listed():
    assert {"msaccucmp", "msaccucmp-legacy"} <= set(known_formats())


def test_identity_columns_are_taken_from_the_row(write_result):
    frame = read_comparison(write_result(FULL_HEADER, FULL_ROWS)).frame
    conv_out = frame.iloc[3]
    assert conv_out["op_index"] == 2
    assert conv_out["op_type"] == "Conv2D"
    assert conv_out["op_name"] == "conv1/Conv2D_fused"
    assert conv_out["golden_ops"] == "conv1/Conv2D,conv1/BiasAdd"
    assert conv_out["tensor_id"] == "conv1/Conv2D_fused:output:0"
    assert (conv_out["io"], conv_out["slot"]) == ("output", 0)
    assert (conv_out["npu_dtype"], conv_out["golden_dtype"]) == ("float16", "float32")
    assert conv_out["npu_address"] == "0x1240c0300000"
    assert pd.isna(conv_out["golden_address"])
    assert conv_out["shape"] == "[1,64,224,224]"
    assert list(frame["op_index"]) == [0, 1, 2, 2, 3, 4]


def test_single_address_before_ground_truth_belongs_to_the_npu_side(write_result):
    frame = read_comparison(write_result(FULL_HEADER, FULL_ROWS)).frame
    assert frame["npu_address"].notna().sum() == 4
    assert frame["golden_address"].isna().all()


def test_two_address_columns_are_split_by_side(write_result):
    header = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,Address,TensorIndex,Shape,"
              "CosineSimilarity")
    rows = ['7,Add,add_7,DT_FLOAT16,0x1000,add_7,DT_FLOAT16,0x2000,add_7:output:0,"[8]",0.99']
    frame = read_comparison(write_result(header, rows)).frame
    assert (frame.at[0, "npu_address"], frame.at[0, "golden_address"]) == ("0x1000", "0x2000")
    assert (frame.at[0, "npu_dtype"], frame.at[0, "golden_dtype"]) == ("float16", "float16")


def test_pandas_resaved_header_with_suffixed_duplicates_reads_the_same(write_result):
    header = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType.1,Address.1,TensorIndex,"
              "Shape,CosineSimilarity")
    rows = ['7,Add,add_7,DT_FLOAT16,0x1000,add_7,DT_FLOAT,0x2000,add_7:output:0,"[8]",0.99']
    frame = read_comparison(write_result(header, rows)).frame
    assert (frame.at[0, "golden_dtype"], frame.at[0, "golden_address"]) == ("float32", "0x2000")


def test_no_address_at_all_when_both_sides_were_npy(write_result):
    header = "Index,OpType,NPUDump,DataType,GroundTruth,DataType,TensorIndex,Shape,CosineSimilarity"
    rows = ['0,Relu,relu_0,DT_FLOAT,relu_0,DT_FLOAT,relu_0:output:0,"[2,2]",1.000000']
    frame = read_comparison(write_result(header, rows)).frame
    assert frame["npu_address"].isna().all() and frame["golden_address"].isna().all()
    assert frame.at[0, "npu_dtype"] == "float32"


def test_op_sequence_is_read_when_the_compare_was_restricted(write_result):
    header = ("Index,OpSequence,OpType,NPUDump,DataType,GroundTruth,DataType,TensorIndex,Shape,"
              "CosineSimilarity")
    rows = ['12,3,MatMulV2,fc1,DT_FLOAT16,fc1/MatMul,DT_FLOAT,fc1:output:0,"[1,1000]",0.97',
            '13,4,Softmax,prob,DT_FLOAT16,prob,DT_FLOAT,prob:output:0,"[1,1000]",0.96']
    frame = read_comparison(write_result(header, rows)).frame
    assert list(frame["op_sequence"]) == [3, 4]
    assert str(frame["op_sequence"].dtype) == "Int64"


def test_missing_optional_columns_are_na_not_errors(write_result):
    frame = read_comparison(write_result(MINIMAL_HEADER, ["0,Relu,relu_0,relu_0,relu_0:output:0,0.5"])).frame
    check_schema(frame)
    assert frame["op_sequence"].isna().all()
    assert frame["overflow"].isna().all()
    assert frame["npu_dtype"].isna().all() and frame["shape"].isna().all()
    assert frame["max_abs_error"].isna().all()
    assert frame["compare_fail_reason"].isna().all()


@pytest.mark.parametrize("metrics", [
    ["CosineSimilarity"],
    ["MaxAbsoluteError", "KullbackLeiblerDivergence"],
    ["CosineSimilarity", "RelativeEuclideanDistance", "StandardDeviation", "MeanRelativeError"],
])
def test_any_subset_of_metrics_is_read_and_reported_as_present(write_result, metrics):
    values = {"StandardDeviation": '"(1.0;2.0),(3.0;4.0)"'}
    header = "Index,OpType,NPUDump,GroundTruth,TensorIndex," + ",".join(metrics)
    row = "0,Relu,relu_0,relu_0,relu_0:output:0," + ",".join(values.get(m, "0.25") for m in metrics)
    table = read_comparison(write_result(header, [row]))
    canonical = {"CosineSimilarity": "cosine", "MaxAbsoluteError": "max_abs_error",
                 "KullbackLeiblerDivergence": "kl_divergence",
                 "RelativeEuclideanDistance": "relative_euclidean_distance",
                 "MeanRelativeError": "mean_relative_error"}
    # schema order: the known metrics first, then the statistics StandardDeviation splits into
    expected_present = [canonical[m] for m in metrics if m in canonical]
    if "StandardDeviation" in metrics:
        expected_present += list(STAT_COLUMNS)
    assert table.present_metrics == expected_present
    for name in METRIC_COLUMNS:
        present = name in expected_present
        assert table.frame[name].notna().all() == present, name


def test_user_metric_columns_after_the_known_ones_are_kept_as_floats(write_result):
    header = ("Index,OpType,NPUDump,GroundTruth,TensorIndex,CosineSimilarity,MeanRelativeError,"
              "MyMetric,L1 Norm,ULPError,CompareFailReason")
    rows = ["0,Relu,relu_0,relu_0,relu_0:output:0,0.99,0.01,1.5,NaN,inf,",
            "1,Add,add_1,add_1,add_1:output:0,0.98,0.02,*,2.25,-inf,"]
    table = read_comparison(write_result(header, rows))
    assert table.extra_metrics == ["user_my_metric", "user_l1_norm", "user_ulp_error"]
    frame = table.frame
    assert list(frame.columns)[-3:] == table.extra_metrics
    assert all(str(frame[c].dtype) == "float64" for c in table.extra_metrics)
    assert frame["user_my_metric"].tolist()[0] == 1.5 and pd.isna(frame["user_my_metric"][1])
    assert frame["user_ulp_error"].tolist() == [float("inf"), float("-inf")]
    assert "user_my_metric" not in table.present_metrics


def test_unknown_columns_inside_the_identity_block_are_ignored(write_result):
    # e.g. a leading index column added when the file was re-saved with pandas
    header = ",Index,OpType,NPUDump,GroundTruth,TensorIndex,CosineSimilarity"
    frame = read_comparison(write_result(header, ["0,5,Relu,relu_0,relu_0,relu_0:output:0,0.5"])).frame
    assert frame.at[0, "op_index"] == 5
    assert frame.at[0, "cosine"] == 0.5


def test_legacy_layout_is_read_as_msaccucmp_legacy(write_result):
    table = read_comparison(write_result(LEGACY_HEADER, LEGACY_ROWS))
    check_schema(table.frame)
    assert table.format == "msaccucmp-legacy"
    frame = table.frame
    assert frame["op_name"].tolist() == ["data", "conv1conv1_relu", "pool1"]
    assert frame.at[1, "golden_ops"] == "conv1,conv1_relu"
    assert frame["npu_only"].tolist() == [False, False, True]
    assert frame.at[1, "cosine"] == pytest.approx(0.999876)
    assert frame.at[1, "golden_std"] == pytest.approx(0.4099)
    assert frame["op_type"].isna().all() and frame["npu_dtype"].isna().all()
    assert table.present_metrics == ["cosine", "max_abs_error", "accumulated_relative_error",
                                     "relative_euclidean_distance", "kl_divergence", *STAT_COLUMNS]


def test_format_argument_skips_detection(write_result):
    table = read_comparison(write_result(LEGACY_HEADER, LEGACY_ROWS), format="msaccucmp-legacy")
    assert table.format == "msaccucmp-legacy"


def test_windows_line_endings_read_the_same(write_result):
    unix = read_comparison(write_result(FULL_HEADER, FULL_ROWS, name="unix.csv")).frame
    windows = read_comparison(write_result(FULL_HEADER, FULL_ROWS, name="win.csv", newline="\r\n")).frame
    pd.testing.assert_frame_equal(unix, windows)
