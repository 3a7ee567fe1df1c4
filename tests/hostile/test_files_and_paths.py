"""Special files, paths that leave their folder, links that run code, read-only and full disks."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.batch.store import HistoryStore
from advisor.engine.scaffold import scaffold_pack
from tests.conftest import EXAMPLE

from .conftest import advisor_process, model_with_external_weights


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "result.csv"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("argv", [
    ["run", "{fifo}"],
    ["run", EXAMPLE, "--config", "{fifo}"],
    ["run", EXAMPLE, "--graph", "{fifo}"],
    ["tensor", "{fifo}"],
    ["rules", "validate", "{fifo}"],
    ["batch", "{fifo}"],
], ids=lambda argv: "-".join(str(a) for a in argv if not str(a).startswith("/"))[:40])
def test_a_fifo_as_input_is_refused_at_once(tmp_path, fifo, argv):
    """It used to block forever (nothing ever writes into the FIFO)."""
    result = advisor_process(*[str(a).replace("{fifo}", str(fifo)) for a in argv], timeout=60, cwd=tmp_path)
    line = result.one_line_error(str(fifo))
    assert "FIFO" in line


def test_a_device_as_input_is_refused(advisor):
    advisor("run", "/dev/zero").one_line_error("/dev/zero", "character device")


def test_a_fifo_inside_a_rule_pack_is_refused(tmp_path):
    pack = scaffold_pack("team", tmp_path)
    os.mkfifo(pack / "zz-rule.yaml")
    result = advisor_process("rules", "validate", pack, timeout=60)
    assert result.code == 2 and "FIFO" in result.err and str(pack / "zz-rule.yaml") in result.err


def test_a_batch_job_whose_input_is_a_fifo_fails_alone(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - {{name: pipe, input: pipe.csv}}\n  - {{name: good, input: {EXAMPLE}}}\n",
                        encoding="utf-8")
    result = advisor_process("batch", manifest, "-o", tmp_path / "out", "--workers", "1", timeout=300)
    assert result.code == 0, result.err
    store = HistoryStore.open(tmp_path / "out" / "history.sqlite")
    try:
        rows = {row.job: row for row in store.results(store.runs()[0].id)}
    finally:
        store.close()
    assert rows["good"].status == "ok" and rows["pipe"].status == "failed" and "FIFO" in rows["pipe"].error


@pytest.mark.parametrize("output", ["../../elsewhere", "/tmp/advisor-elsewhere", "a/../../b"])
def test_a_job_output_outside_the_batch_folder_is_refused(advisor, tmp_path, output):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - name: a\n    input: {EXAMPLE}\n    output: {output}\n", encoding="utf-8")
    line = advisor("batch", manifest, "-o", tmp_path / "out").one_line_error(f"{manifest}:4")
    assert "allow_outside" in line
    assert not (tmp_path / "out").exists() and not Path("/tmp/advisor-elsewhere").exists()


def test_allow_outside_lets_a_job_write_elsewhere(advisor, tmp_path):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"allow_outside: true\njobs:\n  - name: a\n    input: {EXAMPLE}\n    output: ../elsewhere\n"
                        "    formats: [txt]\n", encoding="utf-8")
    result = advisor("batch", manifest, "-o", tmp_path / "out" / "batch", "-q")
    assert result.code == 0, result.err
    assert (tmp_path / "out" / "elsewhere" / "report.txt").is_file()


@pytest.mark.parametrize("link_base", ["javascript:alert(1)//", "JavaScript:alert(1)", "java\tscript:alert(1)",
                                       "data:text/html,<script>alert(1)</script>", "file:///etc/passwd",
                                       "//evil.example/", "vbscript:x"])
def test_link_base_must_be_http_or_relative(advisor, tmp_path, link_base):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - {{name: a, input: {EXAMPLE}}}\n", encoding="utf-8")
    advisor("batch", manifest, "-o", tmp_path / "out", "--link-base", link_base).one_line_error("--link-base")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("link_base", ["https://ci.example/nightly/", "http://host:8080/x", "reports/", "../nightly"])
def test_good_link_bases_are_used(advisor, tmp_path, link_base):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - {{name: a, input: {EXAMPLE}, formats: [html]}}\n", encoding="utf-8")
    result = advisor("batch", manifest, "-o", tmp_path / "out", "--link-base", link_base, "-q")
    assert result.code == 0, result.err
    assert f'href="{link_base.rstrip("/")}/a/report.html"' in (tmp_path / "out" / "index.html").read_text()


@contextlib.contextmanager
def small_filesystem(path: Path, size: str = "1m"):
    """A tmpfs of ``size`` at ``path`` (needs mount rights: root in CI's container), else skip."""
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_history_on_a_read_only_filesystem_can_be_read(advisor, tmp_path):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text(f"jobs:\n  - {{name: a, input: {EXAMPLE}, formats: [txt]}}\n", encoding="utf-8")
    assert advisor("batch", manifest, "-o", tmp_path / "built", "-q").code == 0
    with small_filesystem(tmp_path / "ro", "50m") as ro:
        shutil.copy(tmp_path / "built" / "history.sqlite", ro / "history.sqlite")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        with pytest.raises(OSError):
            (ro / "probe").write_text("x")
        result = advisor("history", "--db", ro / "history.sqlite")
        assert result.code == 0, result.err
        assert "a" in result.out
        assert sorted(os.listdir(ro)) == ["history.sqlite"]


def test_a_batch_on_a_full_disk_exits_with_one_line(tmp_path):
    manifest = tmp_path / "batch.yaml"
    manifest.write_text("jobs:\n" + "".join(f"  - {{name: j{i}, input: {EXAMPLE}}}\n" for i in range(4)),
                        encoding="utf-8")
    with small_filesystem(tmp_path / "full", "200k") as full:
        result = advisor_process("batch", manifest, "-o", full / "out", "--workers", "1", timeout=300)
        result.one_line_error(str(full / "out"))
        leftovers = [p for p in full.rglob("*") if p.name.endswith(".tmp") or ".advisor-reports/run-" in str(p)
                     and not _current_set(p)]
        assert not leftovers


def _current_set(path: Path) -> bool:
    """Whether ``path`` lies inside the report set its store's ``current`` link names."""
    parts = path.parts
    index = parts.index(".advisor-reports")
    store = Path(*parts[:index + 1])
    return parts[index + 1] == os.readlink(store / "current") if (store / "current").is_symlink() else False


# --- files found inside folders go through the same check as the ones named on the command line -----

@pytest.fixture
def dump_folders(tmp_path):
    from benchmarks.compare import write_dumps
    return write_dumps(tmp_path / "dumps", ops=2, elements=64)


def _plant(folder: Path, kind: str) -> Path:
    """A FIFO, or a link to a device, in place of the last dump of ``folder``."""
    path = sorted(folder.rglob("*.npy"))[-1]
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("side", [0, 1])
def test_a_special_file_inside_a_dump_folder_is_refused_by_compare(tmp_path, dump_folders, kind, side):
    """A FIFO named like a dump blocked `advisor compare` forever: only paths on the command line were checked."""
    planted = _plant(dump_folders[side], kind)
    golden, target = dump_folders
    result = advisor_process("compare", "--golden", golden, "--target", target, "-o", tmp_path / "r.csv", "-j", "1",
                             "-q", timeout=60)
    line = result.one_line_error(str(planted))
    assert ("FIFO" if kind == "fifo" else "character device") in line
    assert not (tmp_path / "r.csv").exists()


def test_a_fifo_inside_the_dumps_of_a_run_is_refused(tmp_path):
    scenario = next(p for p in sorted((EXAMPLE.parents[2] / "tests" / "data" / "scenarios").iterdir())
                    if (p / "golden").is_dir() and (p / "target").is_dir())
    golden, target = tmp_path / "golden", tmp_path / "target"
    shutil.copytree(scenario / "golden", golden)
    shutil.copytree(scenario / "target", target)
    planted = _plant(golden, "fifo")
    (csv,) = scenario.glob("result_*.csv")
    result = advisor_process("run", csv, "--dumps", f"{golden}:{target}", "-o", tmp_path / "out", "-q", timeout=120)
    assert "FIFO" in result.one_line_error(str(planted))


def test_a_fifo_as_an_onnx_models_external_data_is_refused(tmp_path):
    model_with_external_weights(tmp_path / "model.onnx", "weights.bin")
    (tmp_path / "weights.bin").unlink()
    os.mkfifo(tmp_path / "weights.bin")
    result = advisor_process("run", EXAMPLE, "--graph", tmp_path / "model.onnx", "-o", tmp_path / "out", "-q",
                             timeout=120)
    line = result.one_line_error(str(tmp_path / "weights.bin"))
    assert "FIFO" in line


def test_a_pack_folder_with_too_many_rule_files_is_refused(advisor, tmp_path):
    from advisor.inputfiles import MAX_FOLDER_FILES
    pack = scaffold_pack("team", tmp_path)
    for i in range(MAX_FOLDER_FILES["pack"] + 1):
        (pack / f"r{i}.yaml").write_bytes(b"")
    line = advisor("rules", "validate", pack).one_line_error(str(pack))
    assert f"{MAX_FOLDER_FILES['pack']:,}" in line
