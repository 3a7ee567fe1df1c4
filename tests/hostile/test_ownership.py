"""Never touch what is not ours: the report store, its lock, compare's temporary and journal, the remedy's
links, the batch's index and history are made without following links, and advisor deletes only what its
own marker identifies. A store, lock or journal that is a link, or a folder advisor did not make, is
refused with one line (exit 2) and the place it points at is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.report import write_outputs
from advisor.report.outset import STORE
from benchmarks.compare import write_dumps
from tests.conftest import EXAMPLE


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) with its text: what must stay as it was."""
    found = {}
    for root, dirs, names in os.walk(folder):
        for name in names + [d for d in dirs if (Path(root) / d).is_symlink()]:
            path = Path(root) / name
            found[path.relative_to(folder).as_posix()] = (f"-> {os.readlink(path)}" if path.is_symlink()
                                                         else path.read_text(encoding="utf-8"))
    return found


@pytest.fixture
def shared(tmp_path):
    """Another team's folder on a shared disk: folders and files advisor never made."""
    folder = tmp_path / "shared"
    for name in ("team-a/model.onnx", "team-b/results.csv", "run-2024/notes.txt", "lock", "current"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"{name} of someone else\n", encoding="utf-8")
    return folder


def test_a_store_that_is_a_link_is_refused_and_its_target_untouched(advisor, tmp_path, shared):
    """It used to delete every folder in the link's target (exit 0, no message)."""
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(shared, out / STORE)
    before = tree(shared)
    advisor("run", EXAMPLE, "-o", out, "--format", "txt", "-q").one_line_error(str(out / STORE), "link")
    assert tree(shared) == before
    assert sorted(os.listdir(out)) == [STORE]


def test_a_store_folder_advisor_did_not_make_is_refused(advisor, tmp_path, shared):
    out = tmp_path / "out"
    out.mkdir()
    shared.rename(out / STORE)
    before = tree(out / STORE)
    advisor("run", EXAMPLE, "-o", out, "--format", "txt", "-q").one_line_error(str(out / STORE))
    assert tree(out / STORE) == before


def test_a_lock_that_is_a_link_is_refused_and_nothing_is_created_where_it_points(advisor, tmp_path):
    out = tmp_path / "out"
    assert advisor("run", EXAMPLE, "-o", out, "--format", "txt", "-q").code == 0
    victim = tmp_path / "elsewhere" / "created-by-advisor"
    victim.parent.mkdir()
    (out / STORE / "lock").unlink()
    os.symlink(victim, out / STORE / "lock")
    advisor("run", EXAMPLE, "-o", out, "--format", "txt", "-q").one_line_error(str(out / STORE / "lock"))
    assert not victim.exists() and os.listdir(victim.parent) == []


def test_only_run_folders_advisor_marked_are_removed(tmp_path):
    """A folder a user (or another program) put into the store, even one named like a set, is kept."""
    write_outputs(tmp_path, [("report.txt", "1")])
    mine = tmp_path / STORE / "run-0123456789ab"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine\n", encoding="utf-8")
    (tmp_path / STORE / "photos").mkdir()
    write_outputs(tmp_path, [("report.txt", "2")])
    write_outputs(tmp_path, [("report.txt", "3")])
    assert (mine / "keep.txt").read_text(encoding="utf-8") == "mine\n"
    assert (tmp_path / STORE / "photos").is_dir()
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == "3"


def test_a_killed_runs_remedy_link_is_collected(tmp_path):
    """``.remedy.<hex>.tmp`` links to the current set's remedy folder: a folder once followed, so it was kept."""
    write_outputs(tmp_path, [("report.txt", "1"), ("remedy/README.md", "1")])
    os.symlink(f"{STORE}/current/remedy", tmp_path / ".remedy.0123abcd.tmp")
    os.symlink(f"{STORE}/current/report.txt", tmp_path / ".report.txt.89abcdef.tmp")
    write_outputs(tmp_path, [("report.txt", "2"), ("remedy/README.md", "2")])
    assert sorted(os.listdir(tmp_path)) == [STORE, "remedy", "report.txt"]


@pytest.fixture
def dumps(tmp_path):
    return write_dumps(tmp_path / "dumps", ops=2, elements=64)


@pytest.mark.parametrize("suffix", [".tmp", ".journal"])
def test_compare_never_writes_through_a_link_beside_its_output(advisor, tmp_path, dumps, suffix):
    """``-o X.csv`` followed a link planted at ``X.csv.tmp`` or ``X.csv.journal`` and overwrote its target."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    out = tmp_path / "result.csv"
    os.symlink(victim, out.with_name(out.name + suffix))
    golden, target = dumps
    result = advisor("compare", "--golden", golden, "--target", target, "-o", out, "-j", "1", "-q")
    assert victim.read_text(encoding="utf-8") == "precious\n"
    if suffix == ".journal":
        result.one_line_error(str(out) + ".journal", "link")
    else:
        assert result.code == 0, result.err
        assert out.is_file() and not out.is_symlink()


def test_compare_collects_the_temporaries_of_a_killed_run(advisor, tmp_path, dumps):
    out = tmp_path / "result.csv"
    golden, target = dumps
    (tmp_path / ".result.csv.0123abcd.tmp").write_text("half a CSV", encoding="utf-8")
    assert advisor("compare", "--golden", golden, "--target", target, "-o", out, "-j", "1", "-q").code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps", "result.csv"]


def manifest(tmp_path: Path, top: str = "", job: str = "") -> Path:
    path = tmp_path / "batch.yaml"
    path.write_text(f"{top}jobs:\n  - name: a\n    input: {EXAMPLE}\n    formats: [txt]\n{job}", encoding="utf-8")
    return path


def test_a_batch_never_replaces_an_index_page_it_did_not_write(advisor, tmp_path):
    """A manifest's output pointing at a web folder replaced its index.html."""
    site = tmp_path / "out"
    site.mkdir()
    (site / "index.html").write_text("<html>the team's home page</html>", encoding="utf-8")
    advisor("batch", manifest(tmp_path), "-o", site, "-q").one_line_error(str(site / "index.html"))
    assert (site / "index.html").read_text(encoding="utf-8") == "<html>the team's home page</html>"


def test_a_batch_rewrites_its_own_index_page(advisor, tmp_path):
    path = manifest(tmp_path)
    assert advisor("batch", path, "-o", tmp_path / "out", "-q").code == 0
    assert advisor("batch", path, "-o", tmp_path / "out", "-q", "--force").code == 0
    assert "run 2" in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("key, value", [("output", "/tmp/advisor-elsewhere"), ("output", "../site"),
                                        ("history", "../history.sqlite"), ("history", "/tmp/advisor-history.sqlite")])
def test_a_manifests_own_output_and_history_stay_beside_it(advisor, tmp_path, key, value):
    """Like a job's output: no absolute path, no '..', unless the manifest says allow_outside: true."""
    path = manifest(tmp_path, top=f"{key}: {value}\n")
    line = advisor("batch", path).one_line_error(f"{path}:1")
    assert "allow_outside" in line
    assert not Path("/tmp/advisor-elsewhere").exists() and not (tmp_path.parent / "site").exists()
    assert not Path("/tmp/advisor-history.sqlite").exists() and not (tmp_path.parent / "history.sqlite").exists()


def test_allow_outside_lets_the_batch_output_go_elsewhere(advisor, tmp_path):
    path = manifest(tmp_path, top="allow_outside: true\noutput: ../elsewhere\n")
    (tmp_path / "manifests").mkdir()
    moved = path.rename(tmp_path / "manifests" / "batch.yaml")
    assert advisor("batch", moved, "-q").code == 0
    assert (tmp_path / "elsewhere" / "index.html").is_file()


@pytest.mark.parametrize("link_base", ["/\\evil.example/", "\\\\evil.example\\x/", "\\/evil.example/",
                                       " //evil.example/", "https://ci.example\\@evil.example/"])
def test_link_bases_a_browser_takes_to_another_host_are_refused(advisor, tmp_path, link_base):
    advisor("batch", manifest(tmp_path), "-o", tmp_path / "out", "--link-base", link_base).one_line_error(
        "--link-base")
    assert not (tmp_path / "out").exists()


def test_a_history_lock_that_is_a_link_is_refused(advisor, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    os.symlink(victim, out / "history.sqlite.lock")
    advisor("batch", manifest(tmp_path), "-o", out, "-q").one_line_error(str(out / "history.sqlite.lock"))
    assert victim.read_text(encoding="utf-8") == "precious\n"


def test_a_history_database_that_is_a_link_is_refused(advisor, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.sqlite"
    os.symlink(victim, out / "history.sqlite")
    advisor("batch", manifest(tmp_path), "-o", out, "-q").one_line_error(str(out / "history.sqlite"), "link")
    assert not victim.exists()
