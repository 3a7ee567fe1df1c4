"""The calibration-set scenarios made afresh: P-Net exported to ONNX, quantised with ONNX Runtime's
static quantisation on each calibration set, compared with advisor compare - and advisor run names each
wrong set of the fresh files as labelled."""

from __future__ import annotations

import pytest

from advisor.pipeline import AnalysisOptions, analyse
from tests.conftest import SCENARIO_EXTRAS
from tests.evidence.test_calibration import LABELS

pytestmark = pytest.mark.scenarios
pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
pytest.importorskip("onnxruntime", reason=SCENARIO_EXTRAS)
pytest.importorskip("skimage", reason=SCENARIO_EXTRAS)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    from benchmarks.scenarios.calibration import generate

    out = tmp_path_factory.mktemp("calibration")
    return out, generate(out)


@pytest.mark.parametrize("name", list(LABELS))
def test_fresh_calibration_sets_are_diagnosed_as_labelled(fresh, name):
    out, labels = fresh
    assert labels[name] == LABELS[name]
    folder = out / name
    diagnosis = analyse(AnalysisOptions(comparison=folder / "result.csv", dumps=(out / "golden", folder / "target"),
                                        build_config=folder / "build.yaml", graph=out / "model.onnx", plugins=False))
    calibration = {f.rule for f in diagnosis.findings if f.rule.startswith("calibration-") and f.explained_by is None}
    assert calibration == ({labels[name]["rule"]} if labels[name]["rule"] else set())
