"""The canonical schema: the columns msprobe brought are in every table, NA where a format lacks them."""

from __future__ import annotations

import csv
import io

import pandas as pd
from msaccucmp_samples import FULL_HEADER, FULL_ROWS

from advisor.ingest import read_comparison
from advisor.ingest.table import (
    COLUMNS,
    check_schema,
    coded,
    coded_from,
    empty_frame,
    first_present,
    lower_isin,
    row_at,
    text_mask,
)

MSPROBE_COLUMNS = {
    "direction": "string", "golden_shape": "category", "shape_mismatch": "boolean", "md5_match": "boolean",
    "euclidean_distance": "float64", "err_ratio_1e3": "float64", "err_ratio_5e3": "float64",
    "npu_max": "float64", "npu_min": "float64", "npu_norm": "float64",
    "golden_max": "float64", "golden_min": "float64", "golden_norm": "float64",
    "max_rel_diff": "float64", "min_rel_diff": "float64", "mean_rel_diff": "float64", "norm_rel_diff": "float64",
    "verdict": "category", "npu_nonfinite": "boolean", "golden_nonfinite": "boolean",
}
# Brought by msprobe 26 (argument values) and msquickcmp (its own marks, appended to every result).
ARGUMENT_AND_TOOL_COLUMNS = {
    "npu_arg": "string", "golden_arg": "string",
    "tool_npu_op": "boolean", "tool_output_node": "boolean", "tool_precision_error": "boolean",
}


def test_the_schema_lists_the_msprobe_columns_with_their_dtypes():
    assert {name: COLUMNS[name] for name in MSPROBE_COLUMNS} == MSPROBE_COLUMNS
    assert {name: COLUMNS[name] for name in ARGUMENT_AND_TOOL_COLUMNS} == ARGUMENT_AND_TOOL_COLUMNS
    assert len(COLUMNS) == 57


def test_msaccucmp_tables_carry_the_msprobe_columns_as_na(write_result):
    table = read_comparison(write_result(FULL_HEADER, FULL_ROWS))
    check_schema(table.frame)
    assert table.frame[list(MSPROBE_COLUMNS)].isna().all().all()
    assert table.derived_metrics == []


def test_an_empty_frame_has_every_column_na():
    frame = empty_frame(3)
    check_schema(frame)
    assert frame.drop(columns="source_line").isna().all().all()


def test_few_valued_text_columns_hold_codes_and_read_back_as_the_texts_of_the_file(write_result):
    rows = [f"{i},Relu,op{i},{'DT_FLOAT16' if i % 2 else 'DT_FLOAT'},op{i},DT_FLOAT,op{i}:output:0,"
            f"\"[1,{i % 3}]\",0.9" for i in range(6)]
    frame = read_comparison(write_result("Index,OpType,NPUDump,DataType,GroundTruth,DataType,TensorIndex,Shape,"
                                         "CosineSimilarity", rows)).frame
    check_schema(frame)
    assert list(frame["npu_dtype"]) == ["float32", "float16"] * 3
    assert list(frame["shape"]) == ["[1,0]", "[1,1]", "[1,2]"] * 2
    assert list(frame["io"].cat.categories) == ["output"] and frame["io"].cat.codes.dtype == "int8"


def test_first_present_is_factorize_of_the_first_column_filled_from_the_second():
    first = pd.Series(coded(pd.array([None, "float16", None, "float32", None], dtype="string")))
    second = pd.Series(coded(pd.array(["int8", "bfloat16", None, "int8", "float16"], dtype="string")))
    codes, names = first_present(first, second)
    expected_codes, expected_names = pd.factorize(first.astype("string").fillna(second.astype("string")))
    assert codes.tolist() == expected_codes.tolist() == [0, 1, -1, 2, 1]
    assert list(names) == list(expected_names) == ["int8", "float16", "float32"]


def test_op_names_golden_ops_and_op_types_are_coded_in_order_from_the_fast_read(write_result):
    rows = [row.replace("conv1", f"layer{i % 7}/conv1") for i in range(40) for row in FULL_ROWS]
    table = read_comparison(write_result(FULL_HEADER, rows))
    for column in ("op_name", "golden_ops", "op_type"):
        categories = table.frame[column].cat.categories
        assert categories.dtype == "string" and categories.is_monotonic_increasing and categories.is_unique
        written = pd.read_csv(write_result(FULL_HEADER, rows), dtype=str, keep_default_na=False)[
            {"op_name": "NPUDump", "golden_ops": "GroundTruth", "op_type": "OpType"}[column]]
        assert [None if pd.isna(v) else v for v in table.frame[column]] == \
               [None if v in ("*", "NaN", "") else v for v in written]


def test_a_star_in_any_coded_column_is_na_and_never_a_category(write_result):
    # msaccucmp writes * for "no such value" in any column, and * must not linger as a category.
    def edited(row: str, cells: dict[int, str]) -> str:
        out = io.StringIO()
        written = next(csv.reader([row]))
        csv.writer(out, lineterminator="").writerow([cells.get(i, cell) for i, cell in enumerate(written)])
        return out.getvalue()

    # OpType, the two DataTypes and Shape starred; then DT_FLOAT written as float32 beside DT_FLOAT,
    # two names of one dtype in one block: one category
    rows = [FULL_ROWS[2], edited(FULL_ROWS[2], dict.fromkeys((1, 3, 6, 8), "*")),
            edited(FULL_ROWS[2], {6: "float32"}), *FULL_ROWS]
    frame = read_comparison(write_result(FULL_HEADER, rows)).frame
    for column in ("op_type", "npu_dtype", "golden_dtype", "shape", "op_name", "golden_ops"):
        assert "*" not in set(frame[column].cat.categories), column
        assert sorted(set(frame[column].dropna().astype(str))) == list(frame[column].cat.categories), column
    assert frame.loc[frame.index[1], ["op_type", "npu_dtype", "golden_dtype", "shape"]].isna().all()
    assert frame["op_type"].iloc[0] == "Conv2D" and frame["npu_dtype"].iloc[0] == "float16"


def test_text_mask_answers_as_pandas_does_on_coded_and_plain_text_with_na_false():
    texts = pd.array(["Conv_1", None, "Relu_2", "Conv_1", "conv_3"], dtype="string")
    for column in (pd.Series(coded(texts)), pd.Series(texts)):
        assert text_mask(column, lambda t: t.isin({"Conv_1", "missing"})).tolist() == [True, False, False, True, False]
        assert text_mask(column, lambda t: t == "Relu_2").tolist() == [False, False, True, False, False]
        assert text_mask(column, lambda t: t.str.lower().str.startswith("conv")).tolist() == \
               [True, False, False, True, True]


def test_row_at_reads_the_row_iloc_gives():
    frame = pd.DataFrame({"op": coded(pd.array(["a", None, "c"], dtype="string")), "cos": [1.0, 0.5, float("nan")],
                          "deviates": [False, True, False]}, index=pd.Index([7, 8, 9], name="op_index"))
    for position in range(3):
        row, expected = row_at(frame, position), frame.iloc[position]
        assert row.name == expected.name
        assert [None if pd.isna(v) else v for v in row] == [None if pd.isna(v) else v for v in expected]


def test_coded_from_keeps_its_texts_in_order_and_minus_one_as_na():
    column = pd.Series(coded_from([2, 0, -1, 1, 2], ["previous_op", "input_rows", "graph"]))
    assert list(column.cat.categories) == ["graph", "input_rows", "previous_op"]
    assert column.astype("string").tolist() == ["graph", "previous_op", pd.NA, "input_rows", "graph"]


def test_lower_isin_lower_cases_each_text_and_counts_na_as_empty():
    texts = pd.array(["Data", None, "CAST", "Relu"], dtype="string")
    for column in (pd.Series(coded(texts)), pd.Series(texts)):
        assert lower_isin(column, {"data", "cast"}).tolist() == [True, False, True, False]
        assert lower_isin(column, {"", "relu"}).tolist() == [False, True, False, True]
