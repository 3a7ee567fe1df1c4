"""`advisor batch` started inside a source checkout (a folder holding another `advisor/` and `rules/`)
analyses with the installed advisor and its pack, and records that pack's content hash: the worker
processes must not import the package from the current folder."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import advisor
from advisor.resources import data_dir

from .conftest import CLEAN

SCRIPT = Path(sys.executable).with_name("advisor")


def test_a_batch_run_inside_another_checkout_uses_the_installed_pack(tmp_path: Path) -> None:
    if not SCRIPT.is_file():
        pytest.skip(f"advisor is not installed next to {sys.executable}")
    # The folder looks like an older checkout: its own advisor package and a core pack of another version.
    shutil.copytree(Path(advisor.__file__).parent, tmp_path / "advisor",
                    ignore=shutil.ignore_patterns("__pycache__", "_data"))
    for name in ("rules", "knowledge", "reports"):
        shutil.copytree(data_dir(name), tmp_path / name)
    pack = tmp_path / "rules" / "core" / "pack.yaml"
    installed_version = yaml.safe_load(pack.read_text(encoding="utf-8"))["version"]
    pack.write_text(re.sub(r"(?m)^version:.*$", 'version: "0.0.1-checkout"', pack.read_text(encoding="utf-8")),
                    encoding="utf-8")
    (tmp_path / "inputs").mkdir()
    shutil.copyfile(CLEAN, tmp_path / "inputs" / "clean.csv")
    (tmp_path / "nightly.yaml").write_text(yaml.safe_dump({"output": "out", "jobs": [
        {"name": "clean", "input": "inputs/clean.csv"}]}), encoding="utf-8")

    done = subprocess.run([str(SCRIPT), "batch", "nightly.yaml", "--workers", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})

    assert done.returncode == 0, done.stderr
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    packs = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td><code>([^<]*)</code></td></tr>", html)
    assert [(name, version) for name, version, _ in packs] == [("core", installed_version)]
    assert re.fullmatch(r"[0-9a-f]{8,}", packs[0][2]), packs
