"""The canonical schema: the columns msprobe brought are in every table, NA where a format lacks them."""

from __future__ import annotations

from msaccucmp_samples import FULL_HEADER, FULL_ROWS

from advisor.ingest import read_comparison
from advisor.ingest.table import COLUMNS, check_schema, empty_frame

MSPROBE_COLUMNS = {
    "direction": "string", "golden_shape": "string", "shape_mismatch": "boolean", "md5_match": "boolean",
    "euclidean_distance": "float64", "err_ratio_1e3": "float64", "err_ratio_5e3": "float64",
    "npu_max": "float64", "npu_min": "float64", "npu_norm": "float64",
    "golden_max": "float64", "golden_min": "float64", "golden_norm": "float64",
    "max_rel_diff": "float64", "min_rel_diff": "float64", "mean_rel_diff": "float64", "norm_rel_diff": "float64",
    "verdict": "string",
}
# Brought by msprobe 26 (argument values) and msquickcmp (its own marks, appended to every result).
ARGUMENT_AND_TOOL_COLUMNS = {
    "npu_arg": "string", "golden_arg": "string",
    "tool_npu_op": "boolean", "tool_output_node": "boolean", "tool_precision_error": "boolean",
}


def test_the_schema_lists_the_msprobe_columns_with_their_dtypes():
    assert {name: COLUMNS[name] for name in MSPROBE_COLUMNS} == MSPROBE_COLUMNS
    assert {name: COLUMNS[name] for name in ARGUMENT_AND_TOOL_COLUMNS} == ARGUMENT_AND_TOOL_COLUMNS
    assert len(COLUMNS) == 55


def test_msaccucmp_tables_carry_the_msprobe_columns_as_na(write_result):
    table = read_comparison(write_result(FULL_HEADER, FULL_ROWS))
    check_schema(table.frame)
    assert table.frame[list(MSPROBE_COLUMNS)].isna().all().all()
    assert table.derived_metrics == []


def test_an_empty_frame_has_every_column_na():
    frame = empty_frame(3)
    check_schema(frame)
    assert frame.drop(columns="source_line").isna().all().all()
