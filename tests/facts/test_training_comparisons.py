"""Training comparisons written by the real msprobe (tests/data/training, see PROVENANCE.md): each fault
is named with its kind, op and the tensor and statistic that differ; clean runs give no error."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from advisor.advice import preferred_backends, render_advice
from advisor.cli import main
from advisor.errors import InputFormatError
from advisor.pipeline import AnalysisOptions, analyse

DATA = Path(__file__).resolve().parents[1] / "data" / "training"


def run(name: str, **options):
    return analyse(AnalysisOptions(comparison=DATA / f"{name}.csv", plugins=False, **options))


def active(diagnosis, severity: str) -> list:
    return [f for f in diagnosis.findings if f.explained_by is None and f.severity == severity]


def test_a_changed_weight_is_named_with_its_statistic_not_called_an_input_mismatch():
    diagnosis = run("weight")
    root = diagnosis.root_cause
    assert (root.kind, root.op) == ("parameter_mismatch", "Functional.linear.0.forward")
    assert root.values["param_tensor"] == "Functional.linear.0.forward.input.1"
    assert root.values["param_name"] == "weight"
    evidence = root.evidence["en"]
    assert "Functional.linear.0.forward.input.1" in evidence and "vs" in evidence
    assert not [f for f in diagnosis.findings if f.kind == "input_mismatch"]
    # what the wrong weight causes downstream hangs under it
    assert [f.kind for f in active(diagnosis, "error")] == ["parameter_mismatch"]
    assert not active(diagnosis, "warning")


def test_runs_a_step_apart_are_a_step_mismatch_from_the_first_op():
    diagnosis = run("step")
    root = diagnosis.root_cause
    assert (root.kind, root.index) == ("step_mismatch", 0)
    assert root.values["differing_parameters"] >= 5
    assert "Functional.linear.0.forward.input.1 (weight)" in root.values["differing_parameter_list"]


def test_a_changed_argument_names_the_op_the_argument_and_both_values():
    root = run("eps").root_cause
    assert (root.kind, root.op) == ("argument_mismatch", "Functional.layer_norm.0.forward")
    assert (root.values["arg_name"], root.values["arg_npu"], root.values["arg_golden"]) == ("eps", "1", "1e-05")
    assert "does not cover" not in root.evidence["en"]


def test_a_different_batch_is_an_input_mismatch_with_training_advice_first():
    diagnosis = run("batch")
    assert (diagnosis.root_cause.kind, diagnosis.root_cause.index) == ("input_mismatch", 0)
    assert diagnosis.network["training"] is True
    prefer = preferred_backends(diagnosis.backends, training=True)
    assert prefer[0] == "training"
    assert "same batch" in render_advice(diagnosis.root_cause, "en", prefer).fixes[0][1]
    assert "training" not in preferred_backends(diagnosis.backends, training=False)


@pytest.mark.parametrize("name", ["bf16", "bf16md5"])
def test_clean_autocast_runs_give_no_error_or_warning(name):
    diagnosis = run(name)
    assert diagnosis.root_cause is None or diagnosis.root_cause.severity == "info"
    assert not active(diagnosis, "error") and not active(diagnosis, "warning")


def test_checksums_that_first_differ_on_the_network_input_name_an_input_mismatch():
    root = run("batchmd5").root_cause   # another batch: the first call's data already differs
    assert (root.kind, root.index, root.severity, root.rule) == ("input_mismatch", 0, "error",
                                                                 "checksum-input-mismatch")
    assert root.values["bits_tensor"] == "Functional.conv2d.0.forward.input.0"
    clean = run("bf16md5")
    note = clean.root_cause   # where bits start to differ, as information: a dtype change, not a fault
    assert (note.kind, note.severity, note.rule) == ("checksum_mismatch", "info", "checksum-dtype-change")
    assert note.values["bits_npu_dtype"] == "bfloat16" and note.values["bits_golden_dtype"] == "float32"
    assert clean.network["checksums_differ"] > 0 and clean.verdict != "consistent"


def test_a_weight_with_another_checksum_is_still_a_parameter_mismatch():
    root = run("weightmd5").root_cause
    assert (root.kind, root.op, root.values["param_stat"]) == ("parameter_mismatch", "Functional.linear.0.forward",
                                                               "md5")


def test_unjudged_tensors_are_counted_and_listed_apart(tmp_path, capsys):
    diagnosis = run("bf16")
    net = diagnosis.network
    assert net["unjudged_tensors"] >= 1 and net["judged_tensors"] < net["compared_tensors"]
    listed = next(f for f in diagnosis.findings if f.kind == "unjudged_tensors")
    assert "Functional.conv2d.0.backward.output.0" in listed.values["unjudged_list"]
    consistent = next(f for f in diagnosis.findings if f.kind == "consistent")
    assert f"All {net['judged_tensors']} judged tensors" in consistent.evidence["en"]
    assert main(["run", str(DATA / "bf16.csv"), "-o", str(tmp_path / "r"), "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert f"{net['judged_tensors']} of {net['compared_tensors']} compared tensors judged" in out


def test_nothing_compared_is_an_error_with_one_line_and_exit_2(tmp_path, capsys):
    # every row's bench side removed from a real file: target-only rows, nothing to compare
    target_only = tmp_path / "target_only.csv"
    rows = pd.read_csv(DATA / "bf16.csv", dtype=str, keep_default_na=False)
    for column in rows.columns:
        if column.startswith("Bench"):
            rows[column] = "N/A"
    rows.to_csv(target_only, index=False)
    with pytest.raises(InputFormatError, match="nothing was compared"):
        analyse(AnalysisOptions(comparison=target_only, plugins=False))
    assert main(["run", str(target_only), "-o", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "nothing was compared" in err and "\n" not in err
    assert not (tmp_path / "r").exists()


def test_a_buffer_counter_is_never_a_cause_and_buffers_count_as_state():
    diagnosis = run("step_batchnorm")
    root = diagnosis.root_cause
    assert (root.kind, root.index) == ("step_mismatch", 0)
    assert diagnosis.network["differing_buffers"] >= 1   # running mean/var: listed as state, never the cause
    assert diagnosis.network["counter_rows"] >= 3       # num_batches_tracked.add_(1): input, argument, output
    assert not [f for f in diagnosis.findings if f.op and f.op.startswith("Tensor.add_")]


def test_a_bool_argument_that_agrees_is_not_flagged():
    diagnosis = run("eps_batchnorm")
    assert (diagnosis.root_cause.kind, diagnosis.root_cause.values["arg_name"]) == ("argument_mismatch", "eps")
    assert diagnosis.network["differing_arguments"] == 1
    assert diagnosis.network["arguments_compared"] > 1


def test_a_parameter_without_printed_statistics_is_not_counted_as_compared(tmp_path):
    """``parameters_compared`` counts the parameters whose statistics both sides printed: a row whose
    statistic cells are empty (a tensor msprobe could not summarise) was not compared."""
    frame = pd.read_csv(DATA / "eps.csv", dtype=str, keep_default_na=False)
    before = run("eps").network["parameters_compared"]
    parameter = frame.index[frame["NPU Name"].str.endswith(".input.1")][0]   # a weight (conv2d input 1)
    for side in ("NPU", "Bench"):
        for stat in ("max", "min", "mean", "l2norm"):
            frame.loc[parameter, f"{side} {stat}"] = ""
    frame.to_csv(tmp_path / "eps.csv", index=False)
    after = analyse(AnalysisOptions(comparison=tmp_path / "eps.csv", plugins=False)).network["parameters_compared"]
    assert (before, after) == (10, 9)
