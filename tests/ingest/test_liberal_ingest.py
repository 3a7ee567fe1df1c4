"""Liberal in what it accepts, exact in what it claims (issue #14): what the real tools write today
loads as written, and what cannot be known is derived and said, or left NA.

Data: tests/data/ingest/msprobe26 (written by msprobe 26.2.0 on the CPU, see PROVENANCE.md) and
tests/data/ingest/vendor_ut (the tables of the vendors' own unit tests, see README.md there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from msaccucmp_samples import FULL_HEADER, FULL_ROWS, MINIMAL_HEADER

from advisor.engine.judgement import builtin_judgement
from advisor.errors import InputFormatError
from advisor.facts.builder import build_facts
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison
from advisor.ingest.table import check_schema
from tests.conftest import SCENARIO_EXTRAS

DATA = Path(__file__).resolve().parents[1] / "data" / "ingest"
MSPROBE26 = DATA / "msprobe26"
VENDOR = DATA / "vendor_ut"
BN_TRAINING = "Functional.batch_norm.0.forward.input.5"            # F.batch_norm(..., training=True)
LOSS_REDUCTION = "Functional.cross_entropy.0.forward.input.reduction"  # reduction="mean"
BN_EPS = "Functional.batch_norm.0.forward.input.7"                  # the planted fault: 1e-2 vs 1e-5


def row(table, tensor_id: str) -> pd.Series:
    rows = table.frame[table.frame["tensor_id"] == tensor_id]
    assert len(rows) == 1, tensor_id
    return rows.iloc[0]


# --- msprobe 26, every mode and file kind -----------------------------------------------------

MSPROBE_FILES = {
    "statistics.csv": "msprobe-summary", "statistics.xlsx": "msprobe-summary",
    "statistics_first_diff.json": "msprobe-summary",
    "tensor.csv": "msprobe", "tensor.xlsx": "msprobe",
    "md5.csv": "msprobe-md5", "md5.xlsx": "msprobe-md5", "md5_first_diff.json": "msprobe-md5",
}


@pytest.mark.parametrize("name, format_name", MSPROBE_FILES.items())
def test_every_msprobe26_result_loads_as_written(name, format_name):
    table = read_comparison(MSPROBE26 / name)
    check_schema(table.frame)
    assert table.format == format_name
    assert len(table) == 73
    assert table.frame["op_name"].nunique() == 17
    assert table.warnings == []


@pytest.mark.parametrize("name", ["statistics.csv", "statistics.xlsx", "statistics_first_diff.json",
                                  "tensor.csv", "tensor.xlsx"])
def test_bool_and_str_statistic_cells_are_arguments_not_numbers(name):
    table = read_comparison(MSPROBE26 / name)
    training, reduction = row(table, BN_TRAINING), row(table, LOSS_REDUCTION)
    assert (training["npu_arg"], training["golden_arg"]) == ("True", "True")
    assert (reduction["npu_arg"], reduction["golden_arg"]) == ("mean", "mean")
    assert training["npu_dtype"] == "python.bool" and reduction["npu_dtype"] == "python.str"
    for argument in (training, reduction):
        assert np.isnan(argument[table.present_metrics].to_numpy(dtype=float)).all()
    # tensors and numeric arguments keep their numbers, and no argument value
    eps = row(table, BN_EPS)
    assert pd.isna(eps["npu_arg"]) and (eps["npu_max"], eps["golden_max"]) == (0.01, 1e-05)
    assert table.frame["npu_arg"].notna().sum() == 2


def test_the_summary_csv_and_its_xlsx_and_json_give_the_same_table():
    csv = read_comparison(MSPROBE26 / "statistics.csv").frame
    for other in ("statistics.xlsx", "statistics_first_diff.json"):
        frame = read_comparison(MSPROBE26 / other).frame
        columns = [c for c in csv.columns if c not in ("source_line", "compare_fail_reason", "verdict",
                                                     "tool_precision_error")]   # msprobe's verdict, as written
        pd.testing.assert_frame_equal(frame[columns], csv[columns], check_exact=False, rtol=1e-12)


def test_first_diff_json_keeps_its_own_columns_typed():
    table = read_comparison(MSPROBE26 / "statistics_first_diff.json")
    assert table.extra_columns["user_state"] == "state"
    assert set(table.frame["user_state"].dropna()) >= {"input", "output"}
    same = table.frame.groupby("op_name")["user_is_same"].first()
    assert str(table.frame["user_is_same"].dtype) == "boolean"
    assert not same["Functional.batch_norm.0.forward"] and same["Functional.conv2d.0.forward"]


@pytest.mark.parametrize("name", ["statistics.csv", "tensor.xlsx", "md5_first_diff.json"])
def test_a_real_msprobe_result_runs_through_the_fact_builder(name):
    """17 calls, of which BatchNorm's num_batches_tracked ``Tensor.add_`` is a counter: its rows are
    counted apart and it is not an op the rules judge."""
    facts = build_facts(read_comparison(MSPROBE26 / name), load_thresholds(), judge=builtin_judgement())
    assert facts.network["ops"] == 16
    assert facts.network["counter_rows"] > 0 and "Tensor.add_.0.forward" not in set(facts.ops["op"])


# --- known files that are not comparisons ----------------------------------------------------

@pytest.mark.parametrize("path, what", [
    (MSPROBE26 / "statistics_bench_dump.json", "is an msprobe dump.json"),
    (MSPROBE26 / "statistics_diff_analyze.json", "is an msprobe first-difference analysis"),
    (MSPROBE26 / "mix_bench_stack.json", "is an msprobe stack.json"),
    (MSPROBE26 / "mix_bench_construct.json", "is an msprobe construct.json"),
    (VENDOR / "msaccucmp_detail_header.csv", "is a msaccucmp single-op detail file"),
])
def test_a_known_non_comparison_file_is_named(path, what):
    with pytest.raises(InputFormatError) as caught:
        read_comparison(path)
    assert f"{path.name} {what}" in str(caught.value) and "not a comparison result" in str(caught.value)


def test_tensor_files_and_foreign_workbooks_are_named(tmp_path):
    npy = tmp_path / "Conv2D.conv1.0.1.123.output.0.npy"
    np.save(npy, np.zeros(3, dtype=np.float32))
    pd.DataFrame({"a": [1]}).to_pickle(tmp_path / "frame.pkl")
    workbook = tmp_path / "budget.xlsx"
    pd.DataFrame({"item": ["a"], "cost": [1]}).to_excel(workbook, index=False)
    expected = {npy: "is a NumPy tensor (.npy)", tmp_path / "frame.pkl": "is a Python pickle",
                workbook: "is an Excel workbook whose first sheet is not an msprobe compare result"}
    for path, what in expected.items():
        with pytest.raises(InputFormatError, match="not a comparison result") as caught:
            read_comparison(path)
        assert f"{path.name} {what}" in str(caught.value)


@pytest.mark.scenarios
def test_a_torch_tensor_file_is_named(tmp_path):
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    path = tmp_path / "Functional.conv2d.0.forward.input.0.pt"  # what msprobe's tensor mode dumps
    torch.save(torch.zeros(2), path)
    with pytest.raises(InputFormatError, match=r"\.pt is a PyTorch tensor file \(\.pt\), not a comparison result"):
        read_comparison(path)


# --- the vendors' own unit-test tables -------------------------------------------------------

@pytest.mark.parametrize("name", sorted(p.name for p in VENDOR.glob("mscmp_advisor_*.csv")))
def test_the_vendor_advisor_tables_load_as_written(name):
    table = read_comparison(VENDOR / name)
    check_schema(table.frame)
    assert table.format == "msaccucmp"
    assert table.frame["op_index"].tolist() == [0, 1, 2]
    assert table.frame["io"].tolist() == ["output"] * 3
    assert len(table.warnings) == 1 and "TensorIndex" in table.warnings[0]
    if "NPUDump" not in (VENDOR / name).read_text().splitlines()[0]:
        assert table.frame["op_name"].tolist() == ["Index 0", "Index 1", "Index 2"]


def test_the_vendor_overflow_table_keeps_its_flags():
    table = read_comparison(VENDOR / "mscmp_advisor_overflow.csv")
    assert table.frame["overflow"].tolist() == [False, True, False]


def test_the_msit_analyser_table_loads_as_written():
    table = read_comparison(VENDOR / "msit_analyser_fake_test_csv.csv")
    frame = table.frame
    assert len(table) == 12 and table.format == "msaccucmp"
    assert table.present_metrics == ["cosine", "relative_euclidean_distance", "kl_divergence",
                                     "root_mean_square_error", "max_relative_error", "mean_relative_error"]
    assert frame["tensor_id"].iloc[1:4].tolist() == ["Mul_6:output:0", "Mul_6:output:1", "Mul_6:output:2"]
    assert frame["npu_only"].tolist()[0] and frame["is_network_output"].tolist()[-1]
    assert table.warnings == ["msit_analyser_fake_test_csv.csv: no TensorIndex column: every row is read as an "
                              "output of its op, numbered in file order (TensorIndex = <NPUDump>:output:<n>)"]


def test_the_derivation_warning_reaches_the_facts():
    facts = build_facts(read_comparison(VENDOR / "mscmp_advisor_consistency_problem.csv"), load_thresholds(),
                        judge=builtin_judgement())
    assert any("no OpType, NPUDump, GroundTruth, TensorIndex columns" in w for w in facts.warnings)
    assert facts.network["first_deviating_op"] == "Index 0"


# --- header spellings and re-saved files ------------------------------------------------------

def test_a_pandas_resave_with_an_index_column_and_dotted_names_reads_like_the_original(tmp_path, write_result):
    original = read_comparison(write_result(FULL_HEADER, FULL_ROWS))
    resaved = tmp_path / "resaved.csv"
    pd.read_csv(original.source, dtype=str, keep_default_na=False).to_csv(resaved)  # DataType.1, Address.1
    assert "DataType.1" in resaved.read_text().splitlines()[0]
    table = read_comparison(resaved)
    columns = [c for c in original.frame.columns if c != "source_line"]
    pd.testing.assert_frame_equal(table.frame[columns], original.frame[columns])
    assert table.warnings == []


@pytest.mark.parametrize("spelling", ["OverFlow", "Overflow", "OVERFLOW"])
def test_the_overflow_column_is_read_in_any_spelling(write_result, spelling):
    table = read_comparison(write_result(MINIMAL_HEADER + f",{spelling}",
                                         ["0,Cast,a,a,a:output:0,0.5,YES", "1,Relu,b,b,b:output:0,0.9,NO"]))
    assert table.frame["overflow"].tolist() == [True, False]


def test_an_excel_trimmed_copy_loads(tmp_path):
    # Excel keeps the columns a user left, pads rows with empty trailing cells, writes CRLF.
    path = tmp_path / "trimmed.csv"
    path.write_bytes(b"\xef\xbb\xbfIndex,NPUDump,CosineSimilarity,,\r\n0,conv1,0.9999,,\r\n1,relu1,0.97,,\r\n")
    table = read_comparison(path)
    assert table.frame["op_name"].tolist() == ["conv1", "relu1"]
    assert table.frame["cosine"].tolist() == [0.9999, 0.97]
    assert table.frame["tensor_id"].tolist() == ["conv1:output:0", "relu1:output:0"]


# --- unknown columns: kept and typed; msquickcmp's marks ------------------------------------------

MSQUICKCMP_HEADER = FULL_HEADER + ",IsNpuOps,IsOutputNode,IsPrecisionError"


def msquickcmp_rows() -> list[str]:
    marks = ["NO,NO,NO", "NO,NO,YES", "NO,NO,YES", "NO,YES,YES", "NO,NO,NO"]
    return [f"{r},{m}" for r, m in zip(FULL_ROWS, marks * (len(FULL_ROWS) // len(marks) + 1), strict=False)]


def test_msquickcmp_columns_become_flags(write_result):
    table = read_comparison(write_result(MSQUICKCMP_HEADER, msquickcmp_rows()))
    frame = table.frame
    assert str(frame["tool_precision_error"].dtype) == "boolean"
    assert frame["tool_precision_error"].tolist()[:4] == [False, True, True, True]
    assert frame["tool_output_node"].tolist()[:4] == [False, False, False, True]
    assert table.extra_columns == {}


def test_msquickcmp_marks_arrive_as_facts(write_result):
    table = read_comparison(write_result(MSQUICKCMP_HEADER, msquickcmp_rows()))
    facts = build_facts(table, load_thresholds(), judge=builtin_judgement())
    frame = table.frame
    first = frame.loc[frame["tool_precision_error"].fillna(False).to_numpy(dtype=bool)].iloc[0]
    assert facts.network["tool_first_precision_error_index"] == int(first["op_index"])
    assert facts.network["tool_first_precision_error_op"] == first["op_name"]
    assert facts.network["tool_precision_error_ops"] == frame.loc[
        frame["tool_precision_error"].fillna(False).to_numpy(dtype=bool), "op_index"].nunique()
    outputs = frame.loc[frame["tool_output_node"].fillna(False).to_numpy(dtype=bool), "op_name"].unique()
    assert facts.network["tool_output_ops"] == ",".join(outputs)
    marked = [f for f in facts.op_facts if f["index"] == int(first["op_index"])]
    assert marked and marked[0]["tool_precision_error"] is True


def test_without_msquickcmp_marks_no_such_fact_is_claimed(write_result):
    facts = build_facts(read_comparison(write_result(FULL_HEADER, FULL_ROWS)), load_thresholds(),
                        judge=builtin_judgement())
    assert not [k for k in facts.network if k.startswith("tool_")]
    assert not [k for f in facts.op_facts for k in f if k.startswith("tool_")]


def test_unknown_columns_are_kept_and_typed(write_result):
    header = MINIMAL_HEADER + ",My Metric,Checked,Note,Empty"
    table = read_comparison(write_result(header, ["0,Relu,a,a,a:output:0,0.9,1.5,True,ok,",
                                                  "1,Relu,b,b,b:output:0,0.9,inf,false,oops,"]))
    frame = table.frame
    assert frame["user_my_metric"].tolist() == [1.5, np.inf] and table.extra_metrics == ["user_my_metric"]
    assert frame["user_checked"].tolist() == [True, False] and str(frame["user_checked"].dtype) == "boolean"
    assert frame["user_note"].tolist() == ["ok", "oops"] and str(frame["user_note"].dtype) == "string"
    assert frame["user_empty"].isna().all()
    assert table.extra_columns == {"user_my_metric": "My Metric", "user_checked": "Checked", "user_note": "Note",
                                   "user_empty": "Empty"}


def test_unknown_msprobe_columns_are_kept_too(tmp_path):
    text = (MSPROBE26 / "tensor.csv").read_text().splitlines()
    path = tmp_path / "tensor_tagged.csv"
    path.write_text("\n".join([text[0] + ",Reviewed"] + [line + ",YES" for line in text[1:]]) + "\n")
    table = read_comparison(path)
    assert table.frame["user_reviewed"].all() and table.extra_columns == {"user_reviewed": "Reviewed"}


def test_a_known_metric_column_with_text_is_still_an_error(write_result):
    with pytest.raises(InputFormatError, match="bad number 'abc' in column CosineSimilarity"):
        read_comparison(write_result(MINIMAL_HEADER, ["0,Relu,a,a,a:output:0,abc"]))


def test_only_index_and_a_metric_are_required(write_result):
    with pytest.raises(InputFormatError, match="missing required column Index"):
        read_comparison(write_result("NPUDump,GroundTruth,TensorIndex,CosineSimilarity", ["a,a,a:output:0,1"]))
    with pytest.raises(InputFormatError, match="no metric column"):
        read_comparison(write_result("Index,NPUDump,GroundTruth", ["0,a,a"]))


# --- end to end: every fixture is diagnosed, and the reader's warning reaches the diagnosis -------

@pytest.mark.parametrize("path", [
    MSPROBE26 / "statistics.csv", MSPROBE26 / "tensor.xlsx", MSPROBE26 / "md5_first_diff.json",
    VENDOR / "mscmp_advisor_overflow.csv", VENDOR / "mscmp_advisor_input.csv",
    VENDOR / "msit_analyser_fake_test_csv.csv",
], ids=lambda p: p.name)
def test_a_fixture_of_each_kind_is_diagnosed(path):
    from advisor.pipeline import AnalysisOptions, analyse

    diagnosis = analyse(AnalysisOptions(comparison=path, plugins=False))
    table = read_comparison(path)
    assert all(w in diagnosis.warnings for w in table.warnings)
