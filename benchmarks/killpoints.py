"""Kill-point sweeps: kill -9 advisor before each filesystem step of publishing a report set, converting an
older advisor's output folder, and publishing a batch's jobs, then check what a reader sees and what the
next run leaves.

A scenario prepares a folder, then runs its step in a child forked from this process with the ``os``
calls that change or open files counted (open, mkdir, rmdir, unlink, rename, replace, symlink, link,
fsync); the child sends itself SIGKILL just before call number N. For N = 1, 2, ... until a child
finishes without reaching N:

* right after the kill, the folder must show one complete report set, the earlier one or the new one
  (a converted folder: the older advisor's files, or the new set);
* then the step runs again, whole, as the next run would: it must succeed (a folder a killed run left
  is never refused), show the new set, and leave nothing behind: no set but the current one, no
  temporary name, no extra report set in a batch job's folder.

``python -m benchmarks.killpoints`` sweeps every point of every scenario and prints the figures as JSON;
the test suite sweeps a bounded sample (tests/hostile/test_kill_points.py); the long fuzz run
(``python -m benchmarks.fuzz``) runs the full sweep first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "crepe_tiny_bn_fold" / "result_20240506043136.csv"
COUNTED = ("open", "mkdir", "rmdir", "unlink", "rename", "replace", "symlink", "link", "fsync")
STORE = ".advisor-reports"
OLD = {"report.txt": "old txt\n", "report.json": '{"old": true}\n', "remedy/README.md": "old remedy\n",
       "remedy/step1/ascend/keep_dtype.cfg": "Pow_1\n"}
NEW = {"report.txt": "new txt\n", "report.html": "<p>new</p>\n", "remedy/README.md": "new remedy\n"}
USER = {"notes.txt": "my notes\n", "remedy/mine.txt": "mine\n"}


class _Counter:
    """Wraps the ``os`` calls in COUNTED; kills this process before call ``at`` while ``active``
    (``at`` None: counts nothing, wraps nothing: the next run, in the sweeping process)."""

    def __init__(self, at: int | None) -> None:
        self.at, self.count, self.active, self.pid = at, 0, False, os.getpid()
        if at is not None:
            for name in COUNTED:
                setattr(os, name, self._wrap(getattr(os, name)))

    def _wrap(self, function: Callable) -> Callable:
        def counted(*args, **kwargs):
            if self.active and os.getpid() == self.pid:
                self.count += 1
                if self.count >= self.at:
                    os.kill(self.pid, signal.SIGKILL)
            return function(*args, **kwargs)
        return counted


@dataclass
class Scenario:
    name: str
    prepare: Callable[[Path], None]            # the folder before the step
    step: Callable[[Path, _Counter], None]     # the step, counting (``counter.active``) where it matters
    shown: Callable[[Path], list[str]]         # problems of what a reader sees right after a kill
    after: Callable[[Path], list[str]]         # problems once the step ran again, whole
    again: Callable[[Path, int], None] | None = None   # the next run after a kill at a point (default: step)


@dataclass
class Figures:
    scenario: str
    points: int = 0
    problems: list[str] = field(default_factory=list)


def visible(folder: Path) -> dict[str, str]:
    """Every file a reader sees in ``folder`` (links followed), the store left out."""
    found = {}
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = [d for d in dirs if d != STORE and not d.startswith(".")]
        for name in names:
            path = Path(root) / name
            if path.is_file() and not name.startswith("."):
                found[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return found


def leftovers(folder: Path) -> list[str]:
    """Temporary names anywhere, and sets in the store that are not current."""
    found = [str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp")]
    for store in folder.rglob(STORE):
        current = os.readlink(store / "current") if (store / "current").is_symlink() else None
        found += [f"{store.relative_to(folder)}/{e.name}" for e in store.iterdir()
                  if e.name not in (".advisor-store", "lock", "current", current)]
    return found


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def _publish_step(folder: Path, counter: _Counter) -> None:
    from advisor.report import write_outputs

    counter.active = True
    write_outputs(folder, list(NEW.items()))


def _one_set(expected: list[dict[str, str]]) -> Callable[[Path], list[str]]:
    def check(folder: Path) -> list[str]:
        seen = {k: v for k, v in visible(folder).items() if k not in USER}
        return [] if any(seen == e for e in expected) else [f"a mixed or partial set: {sorted(seen)}"]
    return check


def _clean_new(folder: Path) -> list[str]:
    problems = [f"left behind: {p}" for p in leftovers(folder)]
    if visible(folder) != {**NEW, **USER}:
        problems.append(f"after the next run: {sorted(visible(folder))}")
    return problems


def _prepare_published(folder: Path) -> None:
    from advisor.report import write_outputs

    write_outputs(folder, list(OLD.items()))
    _write(folder, USER)


def _prepare_legacy(folder: Path) -> None:
    """An older advisor's folder: real report files, a real remedy/ listing what it wrote."""
    _write(folder, {**OLD, **USER})
    names = [n for n in OLD if n.startswith("remedy/")]
    (folder / "remedy" / ".advisor-files").write_text(json.dumps(names), encoding="utf-8")


def _shown_converting(folder: Path) -> list[str]:
    """Old files unchanged (remedy/ may be briefly absent while it becomes a link), or the new set."""
    seen = {k: v for k, v in visible(folder).items() if k not in USER}
    old_reports = {k: v for k, v in OLD.items() if not k.startswith("remedy/")}
    if seen in (OLD, NEW, old_reports):
        return []
    return [f"a mixed or partial set while converting: {sorted(seen)}"]


def _batch_manifest(folder: Path) -> Path:
    manifest = folder / "batch.yaml"
    manifest.write_text("jobs:\n" + "".join(f"  - {{name: j{i}, input: {EXAMPLE}, formats: [json, txt]}}\n"
                                            for i in range(2)), encoding="utf-8")
    return manifest


def _run_batch(folder: Path, force: bool, counter: _Counter | None = None) -> None:
    from advisor.batch import runner
    from advisor.batch.manifest import load_manifest
    from advisor.config import ProjectConfig

    batch = load_manifest(_batch_manifest(folder), ProjectConfig(), output=folder / "out")
    original = runner.publish

    def publishing(outcome):
        if counter is not None:
            counter.active = True
        try:
            return original(outcome)
        finally:
            if counter is not None:
                counter.active = False

    runner.publish = publishing
    try:
        runner.run_batch(batch, force=force, executor=lambda tasks, workers, run: (run(t) for t in tasks))
    finally:
        runner.publish = original


def _batch_shown(folder: Path) -> list[str]:
    problems = []
    for job in ("j0", "j1"):
        files = visible(folder / "out" / job) if (folder / "out" / job).is_dir() else {}
        if set(files) != {"report.json", "report.txt"}:
            problems.append(f"job {job} shows {sorted(files)}")
    return problems


def _batch_after(folder: Path) -> list[str]:
    return _batch_shown(folder) + [f"left behind: {p}" for p in leftovers(folder / "out")]


SCENARIOS = {s.name: s for s in [
    Scenario("publish", _prepare_published, _publish_step, _one_set([OLD, NEW]), _clean_new),
    Scenario("convert", _prepare_legacy, _publish_step, _shown_converting, _clean_new),
    # The next run of a killed batch resumes it: its killed job is published again (--force) or found
    # unchanged (its reports are there), which collects what the killed publish left; both are swept.
    Scenario("batch", lambda folder: _run_batch(folder, force=False),
             lambda folder, counter: _run_batch(folder, force=True, counter=counter), _batch_shown, _batch_after,
             again=lambda folder, at: _run_batch(folder, force=at % 2 == 1)),
]}


def kill_at(scenario: Scenario, at: int, scratch: Path) -> list[str] | None:
    """Kill the step before counted call ``at``; the problems found, or None when the step finished first.
    The scenario is prepared once per ``scratch`` (at the same path, which batch histories record) and
    copied back, links as links, before each point."""
    folder, prepared = scratch / "work", scratch / "prepared"
    if not prepared.exists():
        folder.mkdir(parents=True)
        scenario.prepare(folder)
        shutil.copytree(folder, prepared, symlinks=True)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(prepared, folder, symlinks=True)
    try:
        pid = os.fork()
        if pid == 0:                                       # the child: count, run, and be killed
            code = 0
            try:
                scenario.step(folder, _Counter(at))
            except BaseException:                          # noqa: BLE001 - reported as a problem below
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status):
            return None if os.WEXITSTATUS(status) == 0 else [f"the step failed on its own (point {at})"]
        problems = scenario.shown(folder)
        try:
            if scenario.again is not None:                 # the next run, whole
                scenario.again(folder, at)
            else:
                scenario.step(folder, _Counter(None))
        except Exception as exc:  # noqa: BLE001 - a folder the next run refuses is the problem
            problems.append(f"the next run failed: {type(exc).__name__}: {exc}")
        problems += scenario.after(folder)
        return [f"point {at}: {p}" for p in problems]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()


def sweep(name: str, points: list[int] | None = None, limit: int = 5000) -> Figures:
    """Kill ``name``'s step at each of ``points`` (default: every point, until the step finishes)."""
    scenario = SCENARIOS[name]
    figures = Figures(name)
    with tempfile.TemporaryDirectory(prefix=f"advisor-kill-{name}-") as scratch:
        for at in points or range(1, limit):
            found = kill_at(scenario, at, Path(scratch))
            if found is None:
                if points is None:
                    break
                continue
            figures.points += 1
            figures.problems += found
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.killpoints", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated: " + ", ".join(SCENARIOS))
    args = parser.parse_args(argv)
    os.environ.setdefault("ADVISOR_CACHE_DIR", tempfile.mkdtemp(prefix="advisor-kill-cache-"))
    results = [sweep(n.strip()) for n in args.scenarios.split(",") if n.strip()]
    print(json.dumps([{"scenario": r.scenario, "kill points": r.points, "problems": r.problems} for r in results],
                     indent=1))
    return 1 if any(r.problems for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
