"""Without dumps, a network input's statistics in the comparison itself (msaccucmp's StandardDeviation
cell: mean and std per side, 3 decimals) checked against the normalisation the build folds into the
model: speech frames normalised twice (the utterance's CMVN in insert_bn_before_firstnode and in the
front end) and MTCNN pixels normalised twice are named duplicate_normalization at the input, raw
uint8 pixels fed to a model built to normalise them stay consistent. The scenarios are the
committed ones the generator wrote (tests/data/scenarios), run as `advisor run RESULT.csv --config
build.json` would."""

from __future__ import annotations

import json

import pytest

from advisor.evidence.normalisation import normalization_stats_errors
from advisor.pipeline import AnalysisOptions, analyse
from tests.evidence.conftest import path_of

TWICE = ["duplicate_normalization__crepe_tiny__cmvn_twice__s0", "duplicate_normalization__mtcnn_rnet__bn_inserted__s0"]
CLEAN = "clean_bn_inserted__mtcnn_rnet__raw_uint8__s0"


def _run(name: str, config: dict | None = None, tmp_path=None):
    directory = path_of(name)
    (csv,) = directory.glob("result_*.csv")
    build = directory / "build.json"
    if config is not None:
        build = tmp_path / "build.json"
        build.write_text(json.dumps(config), encoding="utf-8")
    return analyse(AnalysisOptions(comparison=csv, build_config=build)), json.loads(
        (directory / "label.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", TWICE)
def test_an_input_normalised_twice_is_named_from_the_comparisons_statistics(name):
    diagnosis, label = _run(name)
    root = diagnosis.root_cause
    assert (root.kind, root.op, root.index) == (label["kind"], label["op"], label["index"])
    assert root.rule == "duplicate-normalization-in-model"
    assert "comparison's statistics of the input (no dumps)" in root.evidence["en"]
    assert root.values["cfg_norm_again_stats_error"] <= 1


def test_raw_pixels_into_a_normalising_model_are_no_fault_without_dumps():
    """No cause is named and nothing is left to fix: the input row's difference is the model's own
    normalisation, which explains it. (network-consistent does not fire while the input row deviates,
    so the verdict every output states is "no root cause found", not "consistent".)"""
    diagnosis, _ = _run(CLEAN)
    assert diagnosis.root_cause is None
    assert [f.severity for f in diagnosis.findings if f.explained_by is None] == ["info"] * 2
    assert "normalization_in_model" in {f.kind for f in diagnosis.findings if f.explained_by is None}


def test_other_constants_in_the_knob_are_no_second_normalisation(tmp_path):
    """The CMVN frames with a knob whose std is 10% off: the statistics do not fit, no finding names it."""
    name = TWICE[0]
    config = json.loads((path_of(name) / "build.json").read_text(encoding="utf-8"))
    ((_, folded),) = config["insert_bn_before_firstnode"].items()
    folded["var"] = [v * 1.21 for v in folded["var"]]
    diagnosis, _ = _run(name, config, tmp_path)
    assert diagnosis.root_cause.kind == "input_mismatch"
    assert "duplicate_normalization" not in {f.kind for f in diagnosis.findings}


def test_statistics_errors_are_counted_in_roundings():
    """(mean, std) printed with 3 decimals: golden (0.000, 1.000) through (x + 0.00018) / 0.0821 is
    (0.0022, 12.18); the target's (0.002, 12.176) fits within the rounding, the golden's own does not."""
    errors = normalization_stats_errors((0.002, 12.176), (0.0, 1.0), -0.00018, 0.0821, 0.0005, 0.001)
    assert errors["again"] < 1 < errors["identity"] and errors["expected"] > 100
    same = normalization_stats_errors((0.5, 2.0), (0.5, 2.0), 0.0, 1.0, 0.0005, 0.001)
    assert same["again"] == same["identity"] == 0.0
