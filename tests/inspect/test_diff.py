from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.cli import main
from advisor.cli.diff import diff_text
from advisor.inspect.diff import diff_tensors
from advisor.tensors.metrics import METRIC_NAMES

from .conftest import LAYOUT

RNG = np.random.default_rng(0)


def _image() -> np.ndarray:
    return RNG.normal(size=(1, 3, 16, 16)).astype(np.float32)


def test_metrics_tolerance_and_worst_elements():
    golden = _image()
    target = golden.copy()
    target[0, 2, 5, 7] += 3.0
    target[0, 0, 1, 1] += 1.0
    r = diff_tensors(golden, target, atol=1e-3, rtol=1e-3, top=2)
    assert list(r.metrics) == list(METRIC_NAMES)
    assert r.metrics["MaxAbsoluteError"] == pytest.approx(3.0, rel=1e-5)
    assert r.allclose is False and r.beyond == 2 and r.beyond_share == pytest.approx(2 / golden.size)
    assert [e.coords for e in r.worst] == [[0, 2, 5, 7], [0, 0, 1, 1]]
    assert diff_tensors(golden, golden + 1e-7).allclose is True


def test_probes_name_channel_swap_and_scale():
    golden = _image()
    swapped = golden[:, ::-1].copy()
    assert diff_tensors(golden, swapped).probes["channel_reversed"] is True
    scaled = diff_tensors(golden, golden * 255.0).probes
    assert scaled["norm_relation"] == "scale" and scaled["scale_factor"] == pytest.approx(255.0, rel=1e-3)


def test_different_sizes_and_nonfinite_do_not_fail():
    r = diff_tensors(np.ones((2, 3)), np.ones((4,)))
    assert r.allclose is None and np.isnan(r.metrics["CosineSimilarity"]) and r.fail_reasons
    g = np.array([1.0, 2.0, 3.0])
    t = np.array([1.0, np.nan, 3.0])
    r = diff_tensors(g, t, top=1)
    assert r.beyond == 1 and r.worst[0].coords == [1] and r.probes["probed"] is False
    assert "allclose: no" in diff_text(r)


def test_cli_on_scenario_dumps_finds_the_layout(capsys):
    assert main(["diff", "images", "--dumps", str(LAYOUT / "golden"), "--dumps", str(LAYOUT / "target"),
                 "--top", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["probes"]["layout_match"] == "nhwc_buffer_as_nchw"
    assert data["metrics"]["CosineSimilarity"] < 0.5 and len(data["worst"]) == 3
    # the same floored KL as the compare CSV (msaccucmp 26): large, but finite where the old one was inf
    assert 0.1 < data["metrics"]["KullbackLeiblerDivergence"] < float("inf")
    golden = next((LAYOUT / "golden").glob("*.npy"))
    target = next((LAYOUT / "target").glob("*.npy"))
    assert main(["diff", str(golden), str(target), "--no-probes"]) == 0
    out = capsys.readouterr().out
    assert "CosineSimilarity" in out and "worst elements" in out and "probes" not in out


def test_cli_usage_errors(capsys):
    golden = next((LAYOUT / "golden").glob("*.npy"))
    assert main(["diff", str(golden)]) == 2
    assert main(["diff", str(golden), str(golden), "--atol", "-1"]) == 2
    assert "advisor: error:" in capsys.readouterr().err
