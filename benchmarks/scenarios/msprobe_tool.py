"""Drive the real msprobe (PyPI ``mindstudio-probe``) on the CPU: dump a run with
``PrecisionDebugger`` and compare two dumps with ``msprobe compare``.

msprobe's debugger is a process-wide singleton (one config per process) that patches torch's APIs,
so dumps run in a child process (``python -m benchmarks.scenarios.msprobe_dump dump BATCH.json``),
one per task and level, each run of the batch one debugger step, as a training loop dumps its
steps. ``msprobe compare`` runs through msprobe's own command-line entry, several in one child
process (importing msprobe takes seconds).

Tasks as users name them: ``statistics`` (``task: statistics``, ``summary_mode: statistics``; the
compare writes summary mode), ``tensor`` (``task: tensor``; compare computes cosine etc. from the
saved tensors: "all" mode) and ``md5`` (``task: statistics``, ``summary_mode: md5``; compare writes
MD5 mode). Levels: ``L0`` (modules), ``L1`` (APIs), ``mix`` (both).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

TASKS: tuple[str, ...] = ("statistics", "tensor", "md5")
LEVELS: tuple[str, ...] = ("L0", "L1", "mix")
REPO = Path(__file__).resolve().parents[2]


class ToolError(RuntimeError):
    """msprobe failed (its own message is kept)."""


def versions() -> dict[str, str]:
    """The versions that made a corpus (written into each scenario's provenance)."""
    return {"mindstudio-probe": metadata.version("mindstudio-probe"), "torch": metadata.version("torch"),
            "python": sys.version.split()[0]}


def debugger_config(task: str, level: str, dump_path: Path) -> dict:
    """msprobe's config.json for one of :data:`TASKS` at one of :data:`LEVELS`."""
    if task not in TASKS or level not in LEVELS:
        raise ValueError(f"task must be one of {TASKS} and level one of {LEVELS}")
    config = {"task": "tensor" if task == "tensor" else "statistics", "dump_path": str(dump_path),
              "rank": [], "step": [], "level": level, "extra_info": True, "async_dump": False}
    if task == "tensor":
        config["tensor"] = {"scope": [], "list": [], "data_mode": ["all"]}
    else:
        config["statistics"] = {"scope": [], "list": [], "data_mode": ["all"],
                                "summary_mode": "md5" if task == "md5" else "statistics"}
    return config


def dump_runs(jobs: list[dict], directory: Path, task: str, level: str, timeout: float = 3600) -> list[Path]:
    """Dump ``jobs`` (see :mod:`benchmarks.scenarios.msprobe_dump`) with one debugger in a fresh
    process, job i as step i; returns the folder holding each job's ``dump.json``
    (``<directory>/step<i>/rank0``: the runs are rank 0 of a one-process gloo group)."""
    directory.mkdir(parents=True, exist_ok=True)
    config_path = directory / "config.json"
    config_path.write_text(json.dumps(debugger_config(task, level, directory.resolve()), indent=2) + "\n",
                           encoding="utf-8")
    batch = directory / "batch.json"
    batch.write_text(json.dumps({"config": str(config_path.resolve()), "jobs": jobs}, indent=1) + "\n",
                     encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "benchmarks.scenarios.msprobe_dump", "dump", str(batch)],
                         capture_output=True, text=True, timeout=timeout, cwd=REPO)
    folders = []
    for step in range(len(jobs)):
        found = sorted(directory.glob(f"step{step}/*/dump.json"))
        if run.returncode != 0 or not found:
            raise ToolError(f"msprobe dump failed ({task} {level}, run {step}): {_tail(run)}")
        folders.append(found[0].parent)
    return folders


def compare_args(target: Path, reference: Path, out: Path, *, xlsx: bool = False,
                 diff_analyze: bool = False) -> list[str]:
    """The arguments of ``msprobe compare -tp TARGET -gp REFERENCE -o OUT [--xlsx] [-da]``. Files
    compare two ``dump.json``; first-difference analysis (``-da``) takes the two step folders."""
    args = ["compare", "-tp", str(target), "-gp", str(reference), "-o", str(out)]
    if xlsx:
        args.append("--xlsx")
    if diff_analyze:
        args.append("-da")
    return args


def compare_many(requests: list[list[str]], timeout: float = 3600) -> dict[tuple[str, ...], str | None]:
    """Run each ``msprobe compare`` argument list (:func:`compare_args`) in one process; returns
    the error message of each (None when it ran). The output folders are created first."""
    for args in requests:
        Path(args[args.index("-o") + 1]).mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({"compares": requests}, handle)
    try:
        run = subprocess.run([sys.executable, "-m", "benchmarks.scenarios.msprobe_dump", "compare", handle.name],
                             capture_output=True, text=True, timeout=timeout, cwd=REPO)
    finally:
        Path(handle.name).unlink()
    outcome: dict[tuple[str, ...], str | None] = {tuple(a): f"no result: {_tail(run)}" for a in requests}
    for line in run.stdout.splitlines():
        if line.startswith("COMPARE-OK "):
            outcome[tuple(json.loads(line[len("COMPARE-OK "):]))] = None
        elif line.startswith("COMPARE-FAILED "):
            item = json.loads(line[len("COMPARE-FAILED "):])
            outcome[tuple(item["args"])] = item["error"]
    return outcome


def _tail(run: subprocess.CompletedProcess, lines: int = 8) -> str:
    text = (run.stderr or "") + (run.stdout or "")
    errors = [line for line in text.splitlines() if "ERROR" in line or "Error" in line]
    return " | ".join((errors or text.splitlines())[-lines:]) or f"exit {run.returncode}"
