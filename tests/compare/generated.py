"""Scenarios generated with every dump kept, once per test session (needs torch and the network wheels).

``generated_scenario(name, tmp_path_factory)`` returns the scenario folder (golden/, target/,
result_*.csv, model.onnx, build.json, label.json), or skips the test when the generator's
dependencies are missing. Several test modules share one generation per scenario name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SCENARIO_EXTRAS


def generated_scenario(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    root = tmp_path_factory.getbasetemp() / "generated-scenarios"
    directory = root / name
    if (directory / "label.json").is_file():
        return directory
    from benchmarks.scenarios import catalog
    from benchmarks.scenarios.scenario import generate

    spec = next((s for s in catalog.CORPUS if s.name == name), None)
    if spec is None:
        pytest.skip(f"scenario {name} is not in the catalog")
    try:
        generated = generate(spec, root, dumps_kept="all")
    except (ImportError, FileNotFoundError) as exc:  # network weights / data wheels not installed
        pytest.skip(f"cannot generate {name}: {exc}")
    assert not generated.problems, generated.problems
    return generated.directory
