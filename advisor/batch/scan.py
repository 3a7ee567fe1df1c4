"""``advisor batch --scan DIR``: a batch made of every comparison result under a folder.

A nightly pipeline typically writes each model's comparison into its own folder and names it by
time (msaccucmp's ``result_<timestamp>.csv``). So by default a *folder* is a job, named by its
path under DIR, and it analyses the newest result in it (last in name order, which is time order for
msaccucmp names): night after night the same job, one trend. ``every_file`` makes each file a job
of its own (named by its path without the suffix) instead.

The graph, the dump folders and the build config lying beside a result are that job's ``--graph``,
``--dumps`` and ``--config``, found by their documented names (advisor/batch/evidence.py), so a
scanned job gets the verdict ``advisor run`` gives with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from ..config import ProjectConfig
from ..defaults import DEFAULT_PATTERN
from ..errors import UsageError
from .evidence import find_evidence, patterns
from .jobs import Batch, Job, make_job, merge_layers, settings_layer
from .manifest import DEFAULT_OUTPUT, HISTORY_FILE, batch_digest, check_job_name, check_unique


def scan_batch(folder: Path, options: Mapping[str, Any], settings: ProjectConfig, *, output: Path | None = None,
               history: Path | None = None, pattern: str = DEFAULT_PATTERN, every_file: bool = False,
               workers: int | None = None, evidence: Mapping[str, tuple[str, ...]] | None = None) -> Batch:
    """``options``: the batch's option layer (from the command line), see jobs.merge_layers;
    ``evidence``: names of the evidence beside each result replacing the documented ones (role -> globs)."""
    if not folder.is_dir():
        raise UsageError("not a folder to scan", path=folder)
    out = output or Path(DEFAULT_OUTPUT)
    found = sorted(p for p in folder.rglob(pattern) if p.is_file() and not _hidden(p, folder)
                   and not _inside(p, out))
    if not found:
        raise UsageError(f"no comparison results named '{pattern}' under this folder", path=folder)
    merged = merge_layers([settings_layer(settings), options])
    chosen, ignored = (found, 0) if every_file else _newest_per_folder(found)
    jobs = []
    names = patterns(evidence)
    for path in chosen:
        name = _job_name(path, folder, every_file)
        problem = check_job_name(name)
        if problem:
            raise UsageError(f"cannot name a job after '{name}': it {problem}", path=path)
        found = find_evidence(path.parent, names)
        jobs.append(make_job(name, path.absolute(), out / name, merged, graph=found.graph, dumps=found.dumps,
                             config=found.config, settings=settings.source))

    def fail(job: Job, message: str) -> NoReturn:
        raise UsageError(message, path=folder)

    check_unique(jobs, fail)
    notes = [f"{ignored} older result(s) ignored: a folder is one job and analyses its newest result "
             f"(use --all-results for one job per file)"] if ignored else []
    notes += _evidence_note(jobs)
    return Batch(source=f"scan:{folder.resolve()}", digest=batch_digest(jobs), title=f"{folder.resolve().name}",
                 output=out, history=history or out / HISTORY_FILE, jobs=jobs, workers=workers, notes=notes)


def _evidence_note(jobs: list[Job]) -> list[str]:
    """How many jobs got which evidence from beside their result (said once when the batch starts)."""
    counts = {"a graph": sum(j.graph is not None for j in jobs), "dumps": sum(j.dumps is not None for j in jobs),
              "a build config": sum(j.config is not None for j in jobs)}
    found = [f"{what} for {n}" for what, n in counts.items() if n]
    if not found:
        return []
    return [f"evidence beside the results: {', '.join(found)} of {len(jobs)} job(s) (README 'Nightly watch'; "
            f"--evidence ROLE=GLOB to name it)"]


def _newest_per_folder(found: list[Path]) -> tuple[list[Path], int]:
    newest: dict[Path, Path] = {}
    for path in found:                      # sorted: the last one of a folder is the newest
        newest[path.parent] = path
    return sorted(newest.values()), len(found) - len(newest)


def _job_name(path: Path, folder: Path, every_file: bool) -> str:
    relative = path.relative_to(folder)
    if every_file:
        return relative.with_suffix("").as_posix()
    parent = relative.parent.as_posix()
    return parent if parent != "." else folder.resolve().name


def _hidden(path: Path, folder: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(folder).parts[:-1])


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True
