"""Nightly watch over freshly generated scenarios (the generator's folder layout is what --scan reads)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import SCENARIO_EXTRAS

from .conftest import Workspace

pytestmark = pytest.mark.scenarios
pytest.importorskip("torch", reason=SCENARIO_EXTRAS)

from benchmarks.scenarios import catalog  # noqa: E402
from benchmarks.scenarios.networks import package_file  # noqa: E402
from benchmarks.scenarios.scenario import generate  # noqa: E402

CLEAN_SPEC = "clean_fp16__mtcnn_pnet__allow_fp32_to_fp16__s0"
BROKEN_SPEC = "problem_node__mtcnn_pnet__prelu_layout__s0"


def _have_weights() -> bool:
    try:
        package_file("facenet_pytorch", "data", "pnet.pt")
        package_file("skimage", "data", "astronaut.png")
    except (ModuleNotFoundError, FileNotFoundError):
        return False
    return True


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not _have_weights():
        pytest.skip("facenet-pytorch / scikit-image data files not installed")
    root = tmp_path_factory.mktemp("generated")
    found = {}
    for name in (CLEAN_SPEC, BROKEN_SPEC):
        scenario = generate(next(s for s in catalog.CORPUS if s.name == name), root, dumps_kept="none",
                            onnx_max_bytes=0)
        assert not scenario.problems
        found[name] = scenario.result_csv
    return found


def test_scan_of_generated_scenarios_twice_with_a_broken_build_in_between(workspace: Workspace,
                                                                          generated: dict[str, Path]) -> None:
    nightly = workspace.root / "nightly"
    for job in ("pnet", "pnet-baseline"):
        (nightly / job).mkdir(parents=True)
        shutil.copy(generated[CLEAN_SPEC], nightly / job)
    first = workspace.batch("--scan", nightly, "-o", workspace.out, "--fail-on-regression")
    assert first.code == 0, first.err
    assert workspace.statuses(1) == {"pnet": "ok", "pnet-baseline": "ok"}

    # The next night's build of pnet carries the PReLU layout bug.
    for old in (nightly / "pnet").iterdir():
        old.unlink()
    shutil.copy(generated[BROKEN_SPEC], nightly / "pnet")
    second = workspace.batch("--scan", nightly, "-o", workspace.out, "--fail-on-regression")

    assert second.code == 1
    assert workspace.statuses(2) == {"pnet": "ok", "pnet-baseline": "unchanged"}
    assert "REGRESSION pnet: consistent -> problem_node" in second.out
    (job,) = workspace.history_json("diff", "--job", "pnet")["jobs"]
    assert job["transition"] == "regression"
    assert [f["kind"] for f in job["new"]] == ["problem_node"]
