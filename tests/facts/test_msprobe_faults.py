"""Faults in comparisons the real msprobe wrote (tests/data/msprobe_faults, see PROVENANCE.md) that advisor
once judged confidently wrong: a float16 model read as another training step, an inf/NaN output read as
consistent, ``Diff`` cells refused, token ids blamed on the embedding. Each is named with its kind and op."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline import AnalysisOptions, analyse

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe_faults"
OVERFLOW_OP = ("fp16_overflow", "Functional.linear.1.forward", 2)


def run(name: str):
    return analyse(AnalysisOptions(comparison=DATA / name, plugins=False))


def active(diagnosis, *severities: str) -> list:
    return [f for f in diagnosis.findings if f.explained_by is None and f.severity in severities]


@pytest.mark.parametrize("name", ["fp16_overflow_statistics.csv", "fp16_overflow_tensor.csv",
                                  "fp16_overflow_statistics.xlsx"])
def test_a_float16_model_whose_matmul_overflows_is_an_fp16_overflow_at_that_matmul(name):
    diagnosis = run(name)
    root = diagnosis.root_cause
    assert (root.kind, root.op, root.index) == OVERFLOW_OP
    assert root.severity == "error" and "inf or NaN" in root.evidence["en"]
    # the NaN output is never consistent, and nothing blames the weights held in float16
    assert diagnosis.network["output_nonfinite"] is True and diagnosis.network["output_deviates"] is True
    assert not [f for f in diagnosis.findings if f.kind in ("consistent", "step_mismatch", "parameter_mismatch")]


def test_the_same_overflow_from_the_two_dump_json_files():
    diagnosis = analyse(AnalysisOptions(comparison=None, bench=DATA / "fp16_overflow_bench_dump.json",
                                        target=DATA / "fp16_overflow_target_dump.json", plugins=False))
    root = diagnosis.root_cause
    assert (root.kind, root.op, root.index) == OVERFLOW_OP


@pytest.mark.parametrize("name", ["bf16_no_overflow_statistics.csv", "bf16_no_overflow_tensor.csv",
                                  "fp16_model_statistics.csv", "bf16_model_statistics.csv"])
def test_the_same_weights_in_a_lower_precision_are_consistent_not_another_step(name):
    diagnosis = run(name)
    assert diagnosis.root_cause is None
    assert [f.kind for f in diagnosis.findings if f.explained_by is None and f.severity == "info"][0] == "consistent"
    assert not active(diagnosis, "error", "warning")
    assert diagnosis.network["differing_parameters"] == 0 and diagnosis.network["parameters_compared"] >= 6


def test_checksums_of_a_float16_model_say_only_where_the_dtype_changes():
    root = run("fp16_model_md5.csv").root_cause
    assert (root.rule, root.severity) == ("checksum-dtype-change", "info")
    assert not active(run("fp16_model_md5.csv"), "error", "warning")


@pytest.mark.parametrize("name", ["token_ids_statistics.csv", "token_ids_md5.csv"])
def test_token_ids_that_differ_are_an_input_mismatch_at_the_first_call(name):
    root = run(name).root_cause
    assert (root.kind, root.op, root.index) == ("input_mismatch", "Functional.embedding.0.forward", 0)
    assert root.severity == "error"


@pytest.mark.parametrize(("name", "op", "index", "argument", "values"), [
    ("interpolate_mode_statistics.csv", "Functional.interpolate.0.forward", 3, "mode", ("nearest", "bilinear")),
    ("batchnorm_training_statistics.csv", "Functional.batch_norm.0.forward", 2, "training", ("True", "False")),
])
def test_a_diff_cell_is_an_argument_that_differs_not_a_bad_number(name, op, index, argument, values):
    text = (DATA / name).read_text(encoding="utf-8")
    assert ",Diff," in text   # what msprobe writes in the relative-error cells of that row
    diagnosis = run(name)
    root = diagnosis.root_cause
    assert (root.kind, root.op, root.index) == ("argument_mismatch", op, index)
    assert (root.values["arg_npu"], root.values["arg_golden"]) == values
    assert [f.kind for f in active(diagnosis, "error", "warning")] == ["argument_mismatch"]


@pytest.mark.parametrize(("name", "kind", "relation", "constants"), [
    ("input_not_scaled_statistics.csv", "input_scale_mismatch", "scale", None),
    ("input_normalised_twice_statistics.csv", "duplicate_normalization", "extra_normalization", "0.5/0.5"),
    ("input_not_normalised_statistics.csv", "input_scale_mismatch", "missing_normalization", "0.5/0.5"),
])
def test_preprocessing_faults_are_named_from_the_inputs_statistics(name, kind, relation, constants):
    """No dumps: the affine map the two inputs' printed max, min, mean and norm imply names the fault."""
    diagnosis = run(name)
    root = diagnosis.root_cause
    assert (root.kind, root.op, root.index) == (kind, "Functional.conv2d.0.forward", 0)
    assert root.values["norm_relation"] == relation and root.values["norm_basis"] == "statistics"
    if constants:
        assert constants in root.values["norm_known"]
    else:
        assert root.values["scale_known"] == "255"
