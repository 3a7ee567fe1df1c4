"""advisor compare reproduces, from the dumps alone, the metrics of the scenario CSVs (to 1e-5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from advisor.compare.runner import CompareOptions, compare_dumps
from tests.compare.generated import generated_scenario
from tests.conftest import scenario_csv, scenario_dirs

METRICS = ["CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
           "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
           "MeanRelativeError"]
LABELS = ["Index", "OpType", "NPUDump", "DataType", "GroundTruth", "DataType.1", "Shape", "OverFlow"]
# Scenarios with every dump: fusion (Conv+PRelu, Pad+Conv+Relu, MatMul+Add), target-only Cast/TransData,
# branches, two network outputs, BF16 stored as float32, an FP16 overflow.
FULL = ["problem_node__mtcnn_pnet__prelu_layout__s0", "clean_bf16__mtcnn_pnet__mixed_bf16__s0",
        "fp16_overflow__byte_transformer__embedding_outliers__s0", "problem_node__crepe_tiny__bn_variance__s0"]


def read(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=["NaN"], dtype={"OverFlow": str})


def assert_same_metrics(got: pd.DataFrame, expected: pd.DataFrame, rows: pd.Index | None = None) -> None:
    got, expected = got.set_index("TensorIndex"), expected.set_index("TensorIndex")
    rows = expected.index if rows is None else rows
    for column in METRICS:
        a, b = got.loc[rows, column].to_numpy(float), expected.loc[rows, column].to_numpy(float)
        with np.errstate(invalid="ignore"):  # inf - inf
            same = (np.isnan(a) & np.isnan(b)) | (a == b) | (np.abs(a - b) <= 1e-5)
        assert same.all(), f"{column} differs at {list(rows[~same])}: {a[~same]} vs {b[~same]}"
    stats = ["StandardDeviation"]
    assert (got.loc[rows, stats].fillna("") == expected.loc[rows, stats].fillna("")).all().all()


def compare(directory: Path, tmp_path: Path, graph: Path | None = None, jobs: int = 1) -> pd.DataFrame:
    out = tmp_path / f"result_{directory.name}_{graph is not None}_{jobs}.csv"
    compare_dumps(CompareOptions(directory / "golden", directory / "target", out, graphs=(graph,) if graph else (),
                                 jobs=jobs, progress=False))
    return read(out)


@pytest.mark.parametrize("directory", scenario_dirs(), ids=lambda d: d.name)
def test_network_input_rows_match_the_committed_csv(directory, tmp_path):
    """The committed scenarios keep only the network-input dumps: their rows must match. (With the
    rest of the network gone, the Data op's output is the last tensor: its Node_Output row is not
    the scenario's.)"""
    got, expected = compare(directory, tmp_path), read(scenario_csv(directory))
    shared = pd.Index(sorted(set(got["TensorIndex"]) & set(expected["TensorIndex"]) - {"Node_Output:output:0"}))
    assert len(shared) >= 1
    assert_same_metrics(got, expected, shared)


@pytest.mark.scenarios
@pytest.mark.parametrize("name", FULL)
@pytest.mark.parametrize("with_graph", [False, True], ids=["names", "onnx"])
def test_every_row_of_a_generated_scenario_is_reproduced(name, with_graph, tmp_path, tmp_path_factory):
    directory = generated_scenario(name, tmp_path_factory)
    expected = read(scenario_csv(directory))
    got = compare(directory, tmp_path, graph=directory / "model.onnx" if with_graph else None)
    assert list(got["TensorIndex"]) == list(expected["TensorIndex"])
    labels = expected.columns.intersection(LABELS)
    assert (got[labels].fillna("") == expected[labels].fillna("")).all().all()
    assert_same_metrics(got, expected)


@pytest.mark.scenarios
def test_parallel_workers_write_the_same_csv_as_one_process(tmp_path, tmp_path_factory):
    directory = generated_scenario(FULL[2], tmp_path_factory)
    one = tmp_path / "one.csv"
    two = tmp_path / "two.csv"
    compare_dumps(CompareOptions(directory / "golden", directory / "target", one, jobs=1, progress=False))
    compare_dumps(CompareOptions(directory / "golden", directory / "target", two, jobs=2, progress=False))
    assert one.read_bytes() == two.read_bytes()
