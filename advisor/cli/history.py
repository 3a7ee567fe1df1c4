"""``advisor history``: read the batch history — runs, one run's jobs, what changed between two runs.

    advisor history [--db PATH] [--job NAME] [--json] [list | show [RUN] | diff [RUN_A RUN_B]]

RUN is a run id, ``latest`` or ``previous`` (with ``--job``: among the runs that have that job).
``show`` defaults to the latest run, ``diff`` to previous -> latest. Findings are matched across runs
by (rule, kind, op): new, fixed, persists. ``--json`` prints one JSON document for scripts.
Exit codes: 0, or 2 for a missing database, an unknown run or job.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..defaults import DEFAULT_OUTPUT, HISTORY_FILE
from ..errors import UsageError
from ..inputfiles import input_path
from ..text import suggest
from . import command_help

if TYPE_CHECKING:
    from ..batch.overview import RunOverview
    from ..batch.records import FindingRecord
    from ..batch.store import HistoryStore, ResultRow, RunRow

ACTIONS = ("list", "show", "diff")
DEFAULT_DB = Path(DEFAULT_OUTPUT) / HISTORY_FILE


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("history", help=command_help("history"),
                                   description="Read the history of `advisor batch`: runs, a run's jobs, and what "
                                               "is new, fixed or persists between two runs.")
    parser.add_argument("action", nargs="?", default="list", choices=ACTIONS,
                        help="list runs (default), show a run, or diff two runs")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run id, 'latest' or 'previous'")
    parser.add_argument("--db", type=input_path, default=DEFAULT_DB, metavar="PATH",
                        help=f"history database or the batch output folder holding it (default: {DEFAULT_DB})")
    parser.add_argument("--job", metavar="NAME", help="only this job")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def execute(args: argparse.Namespace) -> int:
    from ..batch.store import HistoryStore

    wanted = {"list": (0, 0), "show": (0, 1), "diff": (0, 2)}[args.action]
    if not wanted[0] <= len(args.runs) <= wanted[1] or (args.action == "diff" and len(args.runs) == 1):
        usage = {"list": "list", "show": "show [RUN]", "diff": "diff [RUN_A RUN_B]"}[args.action]
        raise UsageError(f"usage: advisor history {usage}")
    store = HistoryStore.open(args.db)
    try:
        runs = store.runs(args.job)
        if args.job is not None and not runs:
            known = sorted({row.job for run in store.runs() for row in store.results(run.id)})
            raise UsageError(f"no job '{args.job}' in this history{suggest(args.job, known)}", path=store.path)
        if args.action == "list":
            data, text = _list(store, runs, args.job)
        elif args.action == "show":
            run = _resolve(args.runs[0] if args.runs else "latest", runs, store)
            data, text = _show(store, run, args.job)
        else:
            first, second = args.runs or ["previous", "latest"]
            data, text = _diff(store, _resolve(first, runs, store), _resolve(second, runs, store), args.job)
    finally:
        store.close()
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text, flush=True)
    return 0


def _resolve(ref: str, runs: list[RunRow], store: HistoryStore) -> RunRow:
    if not runs:
        raise UsageError("the history holds no run yet", path=store.path)
    if ref in ("latest", "previous"):
        if ref == "previous" and len(runs) < 2:
            raise UsageError("there is no previous run yet (only one run)", path=store.path)
        return runs[-1] if ref == "latest" else runs[-2]
    try:
        run_id = int(ref)
    except ValueError:
        raise UsageError(f"RUN '{ref}': expected a run id, 'latest' or 'previous'") from None
    found = next((run for run in runs if run.id == run_id), None)
    if found is None:
        raise UsageError(f"no run {run_id} here (runs: {', '.join(str(r.id) for r in runs[-10:])})", path=store.path)
    return found


# -- list ------------------------------------------------------------------------------------------

def _list(store: HistoryStore, runs: list[RunRow], job: str | None) -> tuple[Any, str]:
    from ..batch.hashing import short
    from ..report.text import fmt_value

    if job is None:
        data = [_run_json(run) for run in runs]
        lines = [f"{'run':>4}  {'started (UTC)':<25} {'status':<11} {'jobs':>4} {'analysed':>8} {'unchanged':>9} "
                 f"{'failed':>6}  title"]
        lines += [f"{r.id:>4}  {r.started_at:<25} {r.status:<11} {r.jobs:>4} {r.counts.get('ok', 0):>8} "
                  f"{r.counts.get('unchanged', 0):>9} {r.counts.get('failed', 0):>6}  {r.title}" for r in runs]
        return data, "\n".join(lines) if runs else "no runs yet"
    rows = [(run, store.result(run.id, job)) for run in runs]
    data = [{"run": run.id, "started_at": run.started_at, **_result_json(row)} for run, row in rows if row]
    lines = [f"job {job}", f"{'run':>4}  {'started (UTC)':<25} {'status':<9} {'verdict':<24} {'cosine':>9} "
                           f"{'E':>3} {'W':>3} {'I':>3}  hash"]
    for run, row in rows:
        if row is None:
            continue
        v = row.verdict
        lines.append(f"{run.id:>4}  {run.started_at:<25} {row.status:<9} "
                     f"{(v.verdict if v else 'failed'):<24} {fmt_value(v.output_cosine) if v else '—':>9} "
                     f"{v.errors if v else '':>3} {v.warnings if v else '':>3} {v.notes if v else '':>3}  "
                     f"{short(row.job_hash)}" + (f"  {row.error}" if row.error else ""))
    return data, "\n".join(lines)


# -- show ------------------------------------------------------------------------------------------

def _show(store: HistoryStore, run: RunRow, job: str | None) -> tuple[Any, str]:
    from ..batch.overview import build_overview
    from ..report.text import fmt_value

    overview = build_overview(store, run.id)
    if job is not None:
        return _show_job(store, overview, job)
    data = {**_run_json(run), "jobs": [
        {"job": state.name, "transition": state.transition, **_result_json(state.result),
         "previous_verdict": state.previous.verdict.verdict if state.previous and state.previous.verdict else None,
         "new": len(state.changes.new) if state.changes else 0,
         "fixed": len(state.changes.fixed) if state.changes else 0} for state in overview.jobs]}
    lines = [_run_line(run), ""]
    for state in overview.jobs:
        v = state.result.verdict
        change = f" (+{len(state.changes.new)} new, -{len(state.changes.fixed)} fixed)" \
            if state.changes and state.changes.changed else ""
        what = (f"{v.verdict}" + (f" at {v.root_op}" if v.root_op else "") + f", cosine {fmt_value(v.output_cosine)}"
                if v else f"FAILED: {state.result.error}")
        lines.append(f"{state.transition.upper() if state.transition in ('regression', 'recovered') else ' ':<10} "
                     f"{state.name}: {what} [{state.result.status}]{change}")
    return data, "\n".join(lines)


def _show_job(store: HistoryStore, overview: RunOverview, job: str) -> tuple[Any, str]:
    from ..batch.hashing import short

    state = next((s for s in overview.jobs if s.name == job), None)
    if state is None:
        raise UsageError(f"job '{job}' has no result in run {overview.run.id}")
    result = state.result
    findings = store.findings(result)
    packs = store.packs(result)
    data = {"run": overview.run.id, "transition": state.transition, **_result_json(result),
            "findings": [asdict(f) for f in findings], "packs": [asdict(p) for p in packs]}
    lines = [_run_line(overview.run), f"job {job}: {state.transition}, {result.status}"
             + (f", reused from result {result.reused_from}" if result.reused_from else "")]
    if result.error:
        lines.append(f"error: {result.error}")
    lines += [f"  {role}: {item['path']} ({short(item['digest'].rpartition(':')[2])})"
              for role, item in result.inputs.items()]
    lines += [f"  pack {p.name} {p.version} ({short(p.digest)}) {p.source}" for p in packs]
    lines += [_finding_line(f) for f in findings]
    return data, "\n".join(lines)


# -- diff ------------------------------------------------------------------------------------------

def _diff(store: HistoryStore, first: RunRow, second: RunRow, job: str | None) -> tuple[Any, str]:
    before = {row.job: row for row in store.results(first.id)}
    after = {row.job: row for row in store.results(second.id)}
    names = [job] if job else sorted(set(before) | set(after))
    jobs, lines = [], [f"run {first.id} -> run {second.id}"]
    for name in names:
        a, b = before.get(name), after.get(name)
        entry, text = _diff_job(store, name, a, b, first.id, second.id)
        jobs.append(entry)
        lines.extend(text)
    return {"from": _run_json(first), "to": _run_json(second), "jobs": jobs}, "\n".join(lines)


def _diff_job(store: HistoryStore, name: str, a: ResultRow | None, b: ResultRow | None, first: int,
              second: int) -> tuple[dict[str, Any], list[str]]:
    from ..batch.changes import finding_changes, transition

    if a is None or b is None:
        only = first if b is None else second
        return {"job": name, "only_in": only}, [f"{name}: only in run {only}"]
    move = transition(a.verdict, b.verdict) if a.verdict else ("failed" if b.verdict is None else "new")
    entry: dict[str, Any] = {"job": name, "transition": move, "from": _result_json(a), "to": _result_json(b)}
    head = f"{name}: {_verdict_text(a)} -> {_verdict_text(b)} [{move}]"
    if a.verdict is None or b.verdict is None:
        return {**entry, "new": [], "fixed": [], "persists": []}, [head]
    changes = finding_changes(store.findings(a), store.findings(b))
    entry.update({key: [asdict(f) for f in getattr(changes, key)] for key in ("new", "fixed", "persists")})
    lines = [head]
    lines += ["  new      " + _finding_line(f).strip() for f in changes.new]
    lines += ["  fixed    " + _finding_line(f).strip() for f in changes.fixed]
    lines += ["  persists " + _finding_line(f).strip() for f in changes.persists]
    return entry, lines


# -- formatting ------------------------------------------------------------------------------------

def _run_line(run: RunRow) -> str:
    return (f"run {run.id} · {run.title} · {run.status} · started {run.started_at}"
            + (f" · finished {run.finished_at}" if run.finished_at else "")
            + f" · advisor {run.advisor_version} · {run.workers} worker(s)"
            + (f" · resumed {run.resumed}x" if run.resumed else ""))


def _verdict_text(row: ResultRow) -> str:
    v = row.verdict
    if v is None:
        return "failed"
    return v.verdict + (f" at {v.root_op}" if v.root_op else "")


def _finding_line(finding: FindingRecord) -> str:
    where = f" at {finding.op}" + (f" (op {finding.index})" if finding.index is not None else "") if finding.op else ""
    tags = [finding.severity] + (["root cause"] if finding.root_cause else []) + \
        (["propagation"] if finding.explained else [])
    return f"  {finding.rule}: {finding.kind}{where} [{', '.join(tags)}]"


def _run_json(run: RunRow) -> dict[str, Any]:
    return asdict(run)


def _result_json(row: ResultRow) -> dict[str, Any]:
    return {"job": row.job, "status": row.status, "job_hash": row.job_hash, "reused_from": row.reused_from,
            "verdict": asdict(row.verdict) if row.verdict else None, "error": row.error,
            "report_dir": row.report_dir, "report_files": row.report_files, "inputs": row.inputs,
            "duration": row.duration, "cpu": row.cpu, "finished_at": row.finished_at}
