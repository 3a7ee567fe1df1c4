"""Any comparison CSV with a small YAML column mapping: the ``generic`` format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from advisor.errors import InputFormatError, UsageError
from advisor.ingest import load_mapping, read_comparison
from advisor.ingest.table import check_schema

MAPPING = """\
format: generic
columns:
  op_name: Layer
  tensor_id: Tensor
  op_type: Kind
  cosine: cos_sim
  max_abs_error: max_err
  euclidean_distance: l2
  golden_norm: ref_norm
  overflow: ovf
io_from: tensor_id
dtype: fp16
na_values: ["n.a."]
"""
HEADER = "Layer,Tensor,Kind,cos_sim,max_err,l2,ref_norm,ovf,comment"
ROWS = ["conv1,conv1:output:0,Conv,0.9999,0.01,0.5,10.0,no,fine",
        "conv1,conv1:input:0,Conv,1.0,0,0,5.0,no,",
        "block.0.attn,block.0.attn.forward.output.1,Attention,n.a.,inf,NaN,0,yes,overflowed"]


def write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def mapped(tmp_path: Path, mapping: str = MAPPING, header: str = HEADER, rows: list[str] = ROWS,
           encoding: str = "utf-8"):
    csv_path = write(tmp_path, "tool_output.csv", "\n".join([header, *rows]) + "\n", encoding)
    return read_comparison(csv_path, mapping=write(tmp_path, "tool.yaml", mapping)), csv_path


def test_a_mapped_csv_reads_into_the_canonical_table(tmp_path):
    table, _ = mapped(tmp_path)
    frame = table.frame
    check_schema(frame)
    assert table.format == "generic"
    assert list(frame["op_name"]) == ["conv1", "conv1", "block.0.attn"]
    assert list(frame["op_index"]) == [0, 0, 1]          # numbered in file order
    assert list(frame["op_type"]) == ["Conv", "Conv", "Attention"]
    assert list(frame["io"]) == ["output", "input", "output"]  # msaccucmp-style and msprobe-style names
    assert list(frame["slot"]) == [0, 0, 1]
    assert set(frame["npu_dtype"]) == set(frame["golden_dtype"]) == {"float16"}  # "dtype: fp16"
    assert frame["cosine"].tolist()[:2] == [0.9999, 1.0] and np.isnan(frame.at[2, "cosine"])  # n.a.
    assert frame.at[2, "max_abs_error"] == np.inf
    assert frame["overflow"].tolist() == [False, False, True]
    assert list(frame["source_line"]) == [2, 3, 4]
    # EucDist / golden norm, where the norm is > 0
    assert frame["relative_euclidean_distance"].tolist()[:2] == [0.05, 0.0]
    assert np.isnan(frame.at[2, "relative_euclidean_distance"])
    assert table.present_metrics == ["cosine", "max_abs_error", "relative_euclidean_distance", "euclidean_distance",
                                     "golden_norm"]
    assert table.derived_metrics == ["relative_euclidean_distance"]
    assert frame["compare_fail_reason"].isna().all()  # "comment" is not mapped


def test_separator_and_mapped_dtypes(tmp_path):
    mapping = "format: generic\nsep: ';'\ncolumns: {op_name: op, cosine: cos, npu_dtype: t, op_index: idx}\n"
    table, _ = mapped(tmp_path, mapping, "idx;op;cos;t", ["7;a,b;0.5;torch.bfloat16", "9;c;0.7;DT_FLOAT"])
    assert list(table.frame["op_index"]) == [7, 9] and list(table.frame["op_name"]) == ["a,b", "c"]
    assert list(table.frame["npu_dtype"]) == ["bfloat16", "float32"]
    assert table.frame["golden_dtype"].isna().all()


def test_gbk_files_read(tmp_path):
    mapping = "format: generic\ncolumns: {op_name: 算子, cosine: 余弦, compare_fail_reason: 原因}\n"
    table, _ = mapped(tmp_path, mapping, "算子,余弦,原因", ["卷积_1,0.5,精度不足"], encoding="gbk")
    assert (table.frame.at[0, "op_name"], table.frame.at[0, "compare_fail_reason"]) == ("卷积_1", "精度不足")


def test_format_generic_without_a_mapping_is_a_usage_error(tmp_path):
    path = write(tmp_path, "x.csv", "a,b\n1,2\n")
    with pytest.raises(UsageError, match="needs a column mapping"):
        read_comparison(path, format="generic")
    with pytest.raises(UsageError, match="a column mapping is for the generic format"):
        read_comparison(path, format="msprobe", mapping=tmp_path / "m.yaml")


@pytest.mark.parametrize(("mapping", "field", "message"), [
    ("format: generic\ncolums: {op_name: a}\n", "colums", "unknown key; did you mean columns?"),
    ("format: msprobe\ncolumns: {op_name: a, cosine: b}\n", "format", "must be 'generic'"),
    ("columns: {op_name: a, cosine: b}\n", "format", "must be 'generic', found None"),
    ("format: generic\n", "columns", "required: a mapping of canonical column -> CSV header"),
    ("format: generic\ncolumns: {op_name: a, cosin: b}\n", "columns.cosin", "did you mean cosine?"),
    ("format: generic\ncolumns: {op_name: a, cosine: 3}\n", "columns.cosine", "expected the CSV header text"),
    ("format: generic\ncolumns: {cosine: b}\n", "columns.op_name", "required"),
    ("format: generic\ncolumns: {op_name: a, op_type: b}\n", "columns", "at least one metric"),
    ("format: generic\ncolumns: {op_name: a, cosine: b}\nio_from: tensor_id\n", "io_from", "not one of the mapped"),
    ("format: generic\ncolumns: {op_name: a, cosine: b}\nsep: '::'\n", "sep", "one character"),
    ("format: generic\ncolumns: {op_name: a, cosine: b}\nna_values: x\n", "na_values", "list of strings"),
])
def test_mapping_mistakes_name_the_file_and_the_field(tmp_path, mapping, field, message):
    path = write(tmp_path, "tool.yaml", mapping)
    with pytest.raises(InputFormatError) as caught:
        load_mapping(path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(f"{path}, field '{field}': ")
    assert message in text


def test_a_mapping_that_is_not_yaml_or_missing(tmp_path):
    with pytest.raises(InputFormatError, match="invalid YAML") as caught:
        load_mapping(write(tmp_path, "bad.yaml", "format: generic\ncolumns: {op_name: [a\n"))
    assert caught.value.line is not None
    with pytest.raises(InputFormatError, match="column mapping file not found"):
        load_mapping(tmp_path / "none.yaml")
    with pytest.raises(InputFormatError, match="must be a YAML mapping"):
        load_mapping(write(tmp_path, "list.yaml", "- a\n- b\n"))


def test_a_mapped_header_missing_from_the_csv_names_both_files(tmp_path):
    mapping = MAPPING.replace("cos_sim", "cosine_similarity")
    with pytest.raises(InputFormatError) as caught:
        mapped(tmp_path, mapping)
    err = caught.value
    assert err.line == 1 and err.field == "columns.cosine"
    assert "column 'cosine_similarity' named by" in str(err) and "tool.yaml" in str(err)


def test_bad_values_name_the_column_and_the_line(tmp_path):
    rows = [*ROWS[:2], ROWS[2].replace("inf", "huge")]
    with pytest.raises(InputFormatError, match="bad number 'huge' in column max_err") as caught:
        mapped(tmp_path, rows=rows)
    assert caught.value.line == 4
    with pytest.raises(InputFormatError, match="bad yes/no value 'maybe' in column ovf") as caught:
        mapped(tmp_path, rows=[ROWS[0].replace(",no,", ",maybe,")])
    assert caught.value.line == 2
    mapping = "format: generic\ncolumns: {op_name: op, cosine: cos, op_index: idx}\n"
    with pytest.raises(InputFormatError, match="bad integer '1.5' in column idx"):
        mapped(tmp_path, mapping, "idx,op,cos", ["1.5,a,1"])


def test_the_generic_format_is_never_detected(tmp_path):
    path = write(tmp_path, "tool_output.csv", "\n".join([HEADER, *ROWS]) + "\n")
    with pytest.raises(InputFormatError, match="unknown header"):
        read_comparison(path)
    assert pd.api.types.is_string_dtype(read_comparison(path, mapping=write(tmp_path, "m.yaml", MAPPING))
                                        .frame["op_name"])
