"""One run's reports appear together or not at all: an output folder always shows the earlier complete
report set or the new complete set, whatever moment a run is killed at; no earlier report survives
beside a newer one; what killed runs leave is removed by the next run; nothing else is touched."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from advisor.report import write_outputs
from advisor.report.outset import STORE
from tests.conftest import EXAMPLE

# A writer that publishes report sets of two shapes, forever: run N writes every file with "run N" in
# it; even runs write four reports and a two-step remedy, odd runs two reports and a one-step remedy.
WRITER = textwrap.dedent("""
    import sys
    from advisor.report import write_outputs
    out, start = sys.argv[1], int(sys.argv[2])
    n = start
    while True:
        stamp = f"run {n}\\n" + "x" * 20000
        if n % 2 == 0:
            names = ["report.html", "report.md", "report.json", "report.txt", "remedy/README.md",
                     "remedy/step1/ascend/keep_dtype.cfg", "remedy/step2/ascend/keep_dtype.cfg"]
        else:
            names = ["report.json", "report.txt", "remedy/README.md", "remedy/step1/ascend/keep_dtype.cfg"]
        write_outputs(out, [(name, stamp) for name in names])
        print(n, flush=True)
        n += 1
""")
EVEN = {"report.html", "report.md", "report.json", "report.txt", "remedy/README.md",
        "remedy/step1/ascend/keep_dtype.cfg", "remedy/step2/ascend/keep_dtype.cfg"}
ODD = {"report.json", "report.txt", "remedy/README.md", "remedy/step1/ascend/keep_dtype.cfg"}


def visible_files(folder: Path) -> dict[str, str]:
    """Every file a reader sees in ``folder`` (following advisor's links), but not the hidden store."""
    found = {}
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = [d for d in dirs if d != STORE]
        for name in names:
            path = Path(root) / name
            if path.is_file():
                found[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return found


def assert_one_complete_set(folder: Path, user_files: dict[str, str]) -> int | None:
    """The reports a reader sees are one run's complete set; returns that run's number (None: no set yet)."""
    files = visible_files(folder)
    for name, text in user_files.items():
        assert files.pop(name) == text                           # never touched
    hidden = sorted(n for n in files if Path(n).name.startswith("."))
    assert not hidden, f"temporary files visible: {hidden}"
    if not files:
        return None
    stamps = {text.split("\n", 1)[0] for text in files.values()}
    assert len(stamps) == 1, f"a mixed report set: {sorted(stamps)} in {sorted(files)}"
    run = int(stamps.pop().split()[1])
    assert set(files) == (EVEN if run % 2 == 0 else ODD), f"run {run}: {sorted(files)}"
    return run


def test_kill_9_at_random_moments_leaves_one_complete_set(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    user_files = {"notes.txt": "my notes\n"}
    (out / "notes.txt").write_text("my notes\n", encoding="utf-8")
    rng = random.Random(19)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    seen, start = set(), 0
    for _ in range(16):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(out), str(start)], env=env,
                                 stdout=subprocess.PIPE, text=True)
        first = child.stdout.readline()                       # imported and published once: now kill it anywhere
        assert first.strip() == str(start), first
        time.sleep(rng.uniform(0, 0.15))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        run = assert_one_complete_set(out, user_files)
        assert run is not None and run >= start
        seen.add(run % 2)
        start = run + 1                                        # the next writer continues after what is shown
    assert seen == {0, 1}                                      # kills landed in both shapes of set
    write_outputs(out, [("report.txt", "run 1\nlast")])         # a clean run removes every leftover
    store = out / STORE
    assert sorted(os.listdir(store)) == [".advisor-store", "current", "lock", os.readlink(store / "current")]
    assert sorted(os.listdir(out)) == [STORE, "notes.txt", "report.txt"]


def test_kill_9_of_advisor_run_leaves_the_earlier_or_the_new_set(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    command = [sys.executable, "-m", "advisor", "run", str(EXAMPLE), "-q", "-o", str(out)]
    subprocess.run([*command, "--format", "txt,json"], env=env, check=True, timeout=300)
    earlier = visible_files(out)
    assert set(earlier) == {"report.txt", "report.json"}
    rng = random.Random(16)
    for delay in sorted(rng.uniform(0.5, 6) for _ in range(3)):
        child = subprocess.Popen([*command, "--format", "html,md,txt"], env=env)
        time.sleep(delay)
        child.kill()
        child.wait()
        files = visible_files(out)
        assert set(files) in ({"report.txt", "report.json"}, {"report.html", "report.md", "report.txt"}), sorted(files)
        if "report.json" in files:
            assert files == earlier
    subprocess.run([*command, "--format", "html,md,txt"], env=env, check=True, timeout=300)
    assert set(visible_files(out)) == {"report.html", "report.md", "report.txt"}       # no stale report.json


def test_a_new_set_removes_the_earlier_sets_other_reports(tmp_path):
    write_outputs(tmp_path, [("report.html", "old html"), ("report.txt", "old txt")])
    write_outputs(tmp_path, [("report.txt", "new txt")])
    assert sorted(os.listdir(tmp_path)) == [STORE, "report.txt"]
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == "new txt"


def test_an_older_advisors_folder_is_adopted_and_replaced_as_a_whole(tmp_path):
    """Real report files and a real remedy folder (with its list) from an older advisor."""
    (tmp_path / "report.html").write_text("old html", encoding="utf-8")
    (tmp_path / "report.json").write_text("old json", encoding="utf-8")
    step3 = tmp_path / "remedy" / "step3" / "ascend"
    step3.mkdir(parents=True)
    (step3 / "keep_dtype.cfg").write_text("Pow_3\n", encoding="utf-8")
    (tmp_path / "remedy" / ".advisor-files").write_text('["remedy/step3/ascend/keep_dtype.cfg"]', encoding="utf-8")
    (tmp_path / "remedy" / "mine.txt").write_text("mine", encoding="utf-8")
    (tmp_path / ".report.html.0123abcd.tmp").write_text("left by a killed run", encoding="utf-8")
    (tmp_path / "other.html").write_text("not ours", encoding="utf-8")
    write_outputs(tmp_path, [("report.txt", "new txt"), ("remedy/step1/ascend/keep_dtype.cfg", "Pow_1\n")])
    assert visible_files(tmp_path) == {"report.txt": "new txt", "remedy/step1/ascend/keep_dtype.cfg": "Pow_1\n",
                                       "remedy/mine.txt": "mine", "other.html": "not ours"}


def test_files_a_user_saves_into_the_remedy_survive_the_next_run(tmp_path):
    write_outputs(tmp_path, [("report.txt", "1"), ("remedy/README.md", "1")])
    (tmp_path / "remedy" / "my_notes.txt").write_text("mine", encoding="utf-8")
    write_outputs(tmp_path, [("report.txt", "2"), ("remedy/README.md", "2")])
    write_outputs(tmp_path, [("report.txt", "3")])
    assert visible_files(tmp_path) == {"report.txt": "3", "remedy/my_notes.txt": "mine"}


def test_leftovers_of_killed_runs_are_removed_by_the_next_run(tmp_path):
    write_outputs(tmp_path, [("report.txt", "1")])
    store = tmp_path / STORE
    (store / "run-0123456789ab").mkdir()                               # a killed run's half-written set
    (store / "run-0123456789ab" / ".advisor-run").write_text("", encoding="utf-8")     # (marked first)
    (store / "run-0123456789ab" / "report.txt").write_text("half", encoding="utf-8")
    (store / "run-fedcba987654").mkdir()                               # killed before its marker: empty
    os.symlink("run-0123456789ab", store / "current.89abcdef.tmp")      # killed just before the swap
    os.symlink(f"{STORE}/current/report.md", tmp_path / "report.md")    # a link made for a set that never came
    write_outputs(tmp_path, [("report.txt", "2")])
    assert sorted(os.listdir(tmp_path)) == [STORE, "report.txt"]
    assert sorted(os.listdir(store)) == [".advisor-store", "current", "lock", os.readlink(store / "current")]


def test_a_folder_named_like_a_report_that_advisor_did_not_write_is_an_error(tmp_path):
    (tmp_path / "remedy").mkdir()
    (tmp_path / "remedy" / "mine.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(Exception, match="'remedy' is a folder advisor did not write"):
        write_outputs(tmp_path, [("report.txt", "1"), ("remedy/README.md", "1")])
    assert visible_files(tmp_path) == {"remedy/mine.txt": "mine"}


CONCURRENT_WRITER = textwrap.dedent("""
    import sys
    from advisor.report import write_outputs
    out, me = sys.argv[1], int(sys.argv[2])
    for n in range(me * 100, me * 100 + 4):
        stamp = f"run {n}\\n"
        names = sorted(EVEN) if n % 2 == 0 else sorted(ODD)
        write_outputs(out, [(name, stamp) for name in names])
""").replace("sorted(EVEN)", repr(sorted(EVEN))).replace("sorted(ODD)", repr(sorted(ODD)))


def current_set(out: Path) -> dict[str, str] | None:
    """The set ``current`` names, read from its folder (a reader resolves the link once, then reads),
    or None when it stopped being current meanwhile (then it may be collected while it is read)."""
    try:
        name = os.readlink(out / STORE / "current")
        run = out / STORE / name
        files = {p.relative_to(run).as_posix(): p.read_text(encoding="utf-8") for p in run.rglob("*")
                 if p.is_file() and not p.name.startswith(".")}
        return files if os.readlink(out / STORE / "current") == name else None
    except (FileNotFoundError, NotADirectoryError):
        return None


def test_runs_into_one_new_folder_at_once_each_publish_a_whole_set(tmp_path):
    """Writers started together into a folder that does not exist yet (all making the store at once):
    every one succeeds, every set that is current is complete and of one run, and one set is left."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    writers = [subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, str(out), str(i)], env=env,
                                stderr=subprocess.PIPE, text=True) for i in range(12)]
    checks = 0
    while any(w.poll() is None for w in writers):
        files = current_set(out)
        if files:
            stamps = {text for text in files.values()}
            assert len(stamps) == 1, f"a mixed set: {stamps}"
            run = int(stamps.pop().split()[1])
            assert set(files) == (EVEN if run % 2 == 0 else ODD), (run, sorted(files))
            checks += 1
    errors = [w.stderr.read() for w in writers if w.wait() != 0]
    assert not errors, errors[0][-2000:]
    assert checks > 0 and assert_one_complete_set(out, {}) is not None
    store = out / STORE
    assert sorted(os.listdir(store)) == [".advisor-store", "current", "lock", os.readlink(store / "current")]
