"""The committed scenarios (tests/data/scenarios) show the signature their label promises.

Needs only pandas/numpy: the committed files are read as a consumer would read them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.scenarios import checks
from tests.conftest import SCENARIO_EXTRAS

DATA = Path(__file__).resolve().parents[1] / "data" / "scenarios"
KINDS = {"consistent", "input_scale_mismatch", "fp16_overflow", "input_mismatch", "problem_node",
         "single_point_deviation",
         "rgb_bgr_swap", "duplicate_normalization", "layout_nchw_nhwc", "quant_per_tensor",
         "quant_symmetric"}
SCENARIOS = sorted(p for p in DATA.iterdir() if p.is_dir())


def _result(directory: Path) -> Path:
    (csv,) = directory.glob("result_*.csv")
    return csv


@pytest.mark.scenarios
def test_the_committed_subset_is_the_small_selection():
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)   # the catalog imports the fault code, which needs torch
    from benchmarks.scenarios.catalog import SMALL

    assert [p.name for p in SCENARIOS] == sorted(SMALL)


@pytest.mark.parametrize("directory", SCENARIOS, ids=lambda p: p.name)
def test_label_is_complete_and_points_at_real_rows(directory):
    label = json.loads((directory / "label.json").read_text())
    for key in ("family", "kind", "op", "index", "network", "seed", "description", "expected"):
        assert key in label
    assert label["kind"] in KINDS
    frame = checks.read_result(_result(directory))
    if label["op"] is not None:
        rows = frame[frame["Index"] == label["index"]]
        assert set(rows["NPUDump"]) == {label["op"]}


@pytest.mark.parametrize("directory", SCENARIOS, ids=lambda p: p.name)
def test_scenario_shows_its_intended_signature(directory):
    label = json.loads((directory / "label.json").read_text())
    assert checks.check_signature(_result(directory), label) == []


def _input_pair(name: str) -> tuple[np.ndarray, np.ndarray]:
    directory = DATA / name
    (golden,) = (directory / "golden").glob("images.0.*.npy")
    (target,) = (directory / "target").glob("Data.images.*.output.0.npy")
    return np.load(golden), np.load(target)


def test_rgb_bgr_scenario_feeds_the_channels_reversed():
    golden, target = _input_pair("rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0")
    np.testing.assert_array_equal(target, golden[:, ::-1])


def test_layout_scenario_feeds_an_nhwc_buffer_as_nchw():
    golden, target = _input_pair("layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0")
    np.testing.assert_array_equal(target, golden.transpose(0, 2, 3, 1).reshape(golden.shape))


def test_duplicate_normalisation_scenario_normalises_twice():
    golden, target = _input_pair("duplicate_normalization__mtcnn_rnet__bn_inserted__s0")
    np.testing.assert_allclose(target, (golden - 127.5) * 0.0078125, rtol=1e-6)


def test_dump_names_follow_the_vendor_patterns():
    directory = DATA / "rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0"
    (target,) = (directory / "target").glob("*.npy")
    op_type, op_name, task_id, stream_id, timestamp, io, slot, ext = target.name.split(".")
    assert (op_type, op_name, io, slot, ext) == ("Data", "images", "output", "0", "npy")
    assert task_id.isdigit() and stream_id.isdigit() and len(timestamp) == 16
    (golden,) = (directory / "golden").glob("*.npy")
    assert golden.name.split(".")[:2] == ["images", "0"] and len(golden.name.split(".")[2]) == 16


def test_bundled_example_shows_its_labelled_problem_node():
    example = Path(__file__).resolve().parents[2] / "examples" / "crepe_tiny_bn_fold"
    label = json.loads((example / "label.json").read_text())
    assert label["kind"] == "problem_node"
    assert checks.check_signature(_result(example), label) == []
