"""The msaccucmp result CSV writer: header, ordering, number formats, flags, special rows."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from advisor.compare import HEADER, ComparedTensor, format_shape, result_file_name, write_result_csv


def _rows() -> list[ComparedTensor]:
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    return [
        ComparedTensor(2, None, "Node_Output", "Relu_1.0.1.npy", "Node_Output:output:0",
                       x.astype(np.float16), x, npu_dtype="DT_FLOAT", shape=()),
        ComparedTensor(1, "Relu", "Relu_1", "Relu_1", "Relu_1:output:0",
                       np.array([np.inf, 1.0], dtype=np.float16), np.array([7.0, 1.0], dtype=np.float32)),
        ComparedTensor(0, "Cast", "trans_Cast_0", "*", "trans_Cast_0:output:0",
                       x.astype(np.float16), None, address="0x10"),
        ComparedTensor(0, "Conv2D", "Conv_0", "Conv_0,Relu_1", "Conv_0:output:0",
                       x.astype(np.float16), x),
    ]


def test_header_is_msaccucmp_order_and_rows_are_sorted_stably_by_index(tmp_path):
    path = write_result_csv(_rows(), tmp_path / "result_20240101000000.csv")
    lines = path.read_text().splitlines()
    assert lines[0].split(",") == list(HEADER)
    frame = pd.read_csv(path)
    assert list(frame["Index"]) == [0, 0, 1, 2]
    assert list(frame["NPUDump"]) == ["trans_Cast_0", "Conv_0", "Relu_1", "Node_Output"]
    assert "DataType.1" in frame.columns


def test_cells_use_msaccucmp_formats(tmp_path):
    path = write_result_csv(_rows(), tmp_path / "r.csv")
    frame = pd.read_csv(path, keep_default_na=False, dtype=str)
    cast, conv, relu, output = (frame.iloc[i] for i in range(4))
    assert cast["GroundTruth"] == "*" and cast["CosineSimilarity"] == "NaN"
    assert cast["DataType.1"] == "NaN" and cast["CompareFailReason"] == "no golden data"
    assert conv["CosineSimilarity"] == "1.000000" and conv["DataType"] == "DT_FLOAT16"
    assert conv["DataType.1"] == "float32" and conv["Shape"] == "[2,2]"
    # msaccucmp (26.2.0, run on the CPU) prints (mean;std) with 3 decimals and an empty reason cell.
    assert conv["StandardDeviation"] == "(2.500;1.118),(2.500;1.118)" and conv["CompareFailReason"] == ""
    assert relu["OverFlow"] == "YES" and relu["MaxAbsoluteError"] == "inf"
    assert conv["OverFlow"] == "NO"
    assert output["OpType"] == "NaN" and output["Shape"] == "[]" and output["OverFlow"] == "NaN"


def test_helpers():
    assert format_shape((1, 3, 224, 224)) == "[1,3,224,224]"
    assert format_shape(()) == "[]"
    assert result_file_name(datetime(2024, 5, 6, 11, 23, 7)) == "result_20240506112307.csv"
