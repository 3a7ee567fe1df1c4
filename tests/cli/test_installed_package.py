"""The installed `advisor` command works from any directory: rule packs, knowledge and templates
ship inside the wheel (CI installs the project with a regular `pip install .`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import EXAMPLE, REPO

SCRIPT = Path(sys.executable).with_name("advisor")


def installed(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})


@pytest.fixture
def location(tmp_path: Path) -> Path:
    if not SCRIPT.is_file():
        pytest.skip(f"advisor is not installed next to {sys.executable}")
    probe = subprocess.run([sys.executable, "-c", "import advisor; print(advisor.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True)
    return Path(probe.stdout.strip()).parent


def test_installed_command_runs_the_example_from_another_directory(tmp_path, location):
    example = tmp_path / EXAMPLE.name
    shutil.copy(EXAMPLE, example)
    done = installed(tmp_path, "run", example.name, "-o", "out")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["root_cause"]["op"] == "BatchNormalization_13"
    assert report["packs"][0]["name"] == "core"
    if REPO not in location.parents:
        # A regular install: the data must come from inside the package, not from this checkout.
        assert (location / "_data" / "rules" / "core" / "pack.yaml").is_file()
        assert str(REPO) not in report["packs"][0]["source"]


def test_installed_rules_test_passes(tmp_path, location):
    done = installed(tmp_path, "rules", "test")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].endswith("0 failed")


def test_installed_docs_print_from_another_directory(tmp_path, location):
    done = installed(tmp_path, "docs", "formats")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    if REPO not in location.parents:
        assert (location / "_data" / "docs" / "formats.md").is_file()
