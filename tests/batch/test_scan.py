"""`advisor batch --scan DIR`: a folder is a job analysing its newest result, or one job per file."""

from __future__ import annotations

import shutil
from pathlib import Path

from .conftest import CLEAN, OVERFLOW, PROBLEM, Workspace


def _tree(root: Path) -> Path:
    folder = root / "nightly"
    for relative, source in {"resnet/result_20240501000000.csv": CLEAN,
                             "resnet/result_20240502000000.csv": PROBLEM,       # newer: this one counts
                             "team/bert/result_20240501000000.csv": OVERFLOW,
                             ".cache/result_20240501000000.csv": CLEAN}.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / relative)
    (folder / "resnet" / "notes.csv").write_text("not,a result\n", encoding="utf-8")
    return folder


def test_scan_makes_a_job_per_folder_from_its_newest_result(workspace: Workspace) -> None:
    folder = _tree(workspace.root)
    run = workspace.batch("--scan", folder, "-o", workspace.out, "--format", "json", "--threshold", "cosine=0.99")
    assert run.code == 0, run.err
    assert "1 older result(s) ignored" in run.out
    assert workspace.statuses(1) == {"resnet": "ok", "team/bert": "ok"}
    shown = workspace.history_json("show", "--job", "resnet")
    assert shown["inputs"]["comparison"]["path"].endswith("resnet/result_20240502000000.csv")
    assert shown["verdict"]["verdict"] == "problem_node"
    # only the formats asked for, and the fix written out for the FP16 overflow (as advisor run writes it)
    folder = workspace.out / "team" / "bert"
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == ["remedy", "report.json"]
    assert (workspace.out / "team" / "bert" / "remedy" / "README.md").is_file()


def test_scan_all_results_makes_a_job_per_file(workspace: Workspace) -> None:
    folder = _tree(workspace.root)
    run = workspace.batch("--scan", folder, "-o", workspace.out, "--all-results")
    assert run.code == 0, run.err
    assert set(workspace.statuses(1)) == {"resnet/result_20240501000000", "resnet/result_20240502000000",
                                          "team/bert/result_20240501000000"}


def test_scan_usage_errors_exit_2(workspace: Workspace) -> None:
    empty = workspace.root / "empty"
    empty.mkdir()
    assert "no comparison results named 'result_*.csv'" in workspace.batch("--scan", empty).err
    both = workspace.batch(workspace.root / "m.yaml", "--scan", empty)
    assert both.code == 2 and "give a MANIFEST or --scan DIR" in both.err
    manifest = workspace.manifest({"resnet": CLEAN})
    mixed = workspace.batch(manifest, "--rules", "x", "--lang", "zh")
    assert mixed.code == 2 and "--rules, --lang: only with --scan" in mixed.err
    assert workspace.batch(manifest, "--workers", "0").code == 2
