"""``advisor batch``: analyse many comparisons at once, for a nightly accuracy watch.

Exit codes: 0 the batch ran (whatever the jobs found; failed jobs are listed on the index page, in
the digest and on stdout); 1 with ``--fail-on-regression`` when a job regressed (consistent in its
previous result, not consistent now) or with ``--fail-on-failure`` when a job failed; 2 a bad
manifest or usage (nothing ran); 3 an internal error.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster import connect, require_distributed, worker_threads
from ..config import load_config
from ..defaults import DEFAULT_PATTERN
from ..errors import UsageError
from ..inputfiles import input_path
from ..progress import ProgressBar
from . import command_help
from .options import ANALYSIS_OPTIONS, add_analysis_options
from .run import parse_formats

if TYPE_CHECKING:
    from ..batch import BatchResult
    from ..batch.records import JobOutcome


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "batch", help=command_help("batch"),
        description="Analyse every job of a manifest, or every comparison result under a folder, in parallel. "
                    "Unchanged jobs are skipped, results go to a history database as they finish (a killed "
                    "batch resumes), and index.html + digest.md lead with regressions.")
    parser.add_argument("manifest", nargs="?", type=input_path,
                        help="batch manifest (YAML), see README 'Nightly watch'")
    parser.add_argument("--scan", type=input_path, metavar="DIR",
                        help="make a job of every comparison result under DIR")
    parser.add_argument("--pattern", default=DEFAULT_PATTERN, metavar="GLOB",
                        help=f"with --scan: file names of comparison results (default: {DEFAULT_PATTERN})")
    parser.add_argument("--all-results", action="store_true",
                        help="with --scan: one job per file (default: one job per folder, its newest result)")
    parser.add_argument("--evidence", action="append", metavar="ROLE=GLOB",
                        help="with --scan: the name of the graph, golden, target (dump folders) or config beside "
                             "each result, instead of the documented ones (model.onnx, golden/, target/, "
                             "build.json...); an empty GLOB ignores that role; repeatable")
    parser.add_argument("-o", "--output", type=Path, metavar="OUTDIR",
                        help="folder for index.html, digest.md and the job reports (default: the manifest's "
                             "'output', else ./advisor-batch)")
    parser.add_argument("--db", type=Path, metavar="PATH", help="history database (default: OUTDIR/history.sqlite)")
    parser.add_argument("--workers", type=int, metavar="N", help="worker processes (default: every core)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the jobs on this dask cluster (tcp://host:8786, or a scheduler JSON file) instead "
                             "of local worker processes; needs the 'cluster' extra and storage the workers share "
                             "(README 'Scale-out')")
    parser.add_argument("--force", action="store_true", help="analyse every job, even unchanged ones")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit with 1 when a job that was consistent is not any more")
    parser.add_argument("--fail-on-failure", action="store_true", help="exit with 1 when a job could not be analysed")
    parser.add_argument("--link-base", metavar="URL",
                        help="prefix for report links in the digest and index (where OUTDIR is served)")
    parser.add_argument("--project-config", type=input_path, metavar="FILE",
                        help="advisor.toml or pyproject.toml to use (default: the nearest one above the current "
                             "folder)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print a line per job as it finishes")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    scan = parser.add_argument_group("analysis options for --scan (a manifest sets them in 'defaults:')")
    add_analysis_options(scan, defaults=False)       # advisor run's, declared once (options.py)


def execute(args: argparse.Namespace) -> int:
    from ..batch import load_manifest, run_batch, scan_batch
    from ..batch.evidence import parse_patterns
    from ..cluster.batch import executor

    if (args.manifest is None) == (args.scan is None):
        raise UsageError("give a MANIFEST or --scan DIR (one of them)")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.scheduler is not None:
        if args.workers is not None:
            raise UsageError("--workers: not with --scheduler (the cluster's workers run the jobs)")
        require_distributed()
    settings = load_config(args.project_config)
    if args.manifest is not None:
        given = [option.flags[0] for option in ANALYSIS_OPTIONS if getattr(args, option.dest) is not None]
        given += ["--pattern"] * (args.pattern != DEFAULT_PATTERN) + ["--all-results"] * args.all_results
        given += ["--evidence"] * bool(args.evidence)
        if given:
            raise UsageError(f"{', '.join(given)}: only with --scan; a manifest sets analysis options in its "
                             f"'defaults:' or per job")
        batch = load_manifest(args.manifest, settings, output=args.output, history=args.db)
    else:
        batch = scan_batch(args.scan, scan_options(args), settings, output=args.output, history=args.db,
                           pattern=args.pattern, every_file=args.all_results,
                           evidence=parse_patterns(args.evidence or ()))
    if not args.quiet:
        for note in batch.notes:
            print(f"advisor batch: {note}", flush=True)
    # A bar on a terminal (jobs done / to do); with -v also a line per job, printed above the bar.
    with ProgressBar("advisor batch", len(batch.jobs), enabled=False if args.quiet else None, unit="job") as bar:
        def progress(outcome: JobOutcome, done: int, total: int) -> None:
            bar.set_total(total)
            bar.advance()
            if args.verbose and not args.quiet:
                bar.write(_job_line(outcome, done, total))

        if args.scheduler is None:
            result = run_batch(batch, workers=args.workers, force=args.force, link_base=args.link_base,
                               progress=progress)
        else:
            with connect(args.scheduler) as client:
                result = run_batch(batch, workers=worker_threads(client), force=args.force,
                                   link_base=args.link_base, progress=progress, executor=executor(client))
    if not args.quiet:
        print(summary(result, batch.title), flush=True)
    regressed = args.fail_on_regression and result.overview.regressions
    failed = args.fail_on_failure and result.overview.failures
    return 1 if regressed or failed else 0


def scan_options(args: argparse.Namespace) -> dict[str, Any]:
    """The command line as the batch's option layer (see advisor/batch/jobs.py)."""
    layer: dict[str, Any] = {"rules": list(args.rules or []), "thresholds": list(args.threshold or []),
                             "params": list(args.params or []), "disable": list(args.disable or []),
                             "severity": dict(_pair(text) for text in args.severity or [])}
    if args.no_builtin_rules:
        layer["builtin_rules"] = False
    if args.input_nodes is not None:
        layer["input_nodes"] = tuple(n.strip() for n in args.input_nodes.split(";") if n.strip())
    if args.lang is not None:
        layer["lang"] = args.lang
    if args.format is not None:
        layer["formats"] = parse_formats(args.format)
    if args.comparison_format is not None:
        layer["comparison_format"] = args.comparison_format
    if args.max_op_facts is not None:
        if args.max_op_facts < 1:
            raise UsageError("--max-op-facts must be at least 1")
        layer["max_op_facts"] = args.max_op_facts
    return layer


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise UsageError(f"--severity '{text}': expected RULE=LEVEL")
    return key.strip(), value.strip()


def _job_line(outcome: JobOutcome, done: int, total: int) -> str:
    if outcome.status == "failed":
        what = f"FAILED: {outcome.error}"
    elif outcome.status == "unchanged":
        what = "unchanged"
    else:
        verdict = outcome.verdict
        what = verdict.verdict + (f" at {verdict.root_op}" if verdict and verdict.root_op else "") if verdict else "ok"
    return f"[{done}/{total}] {outcome.job}: {what} ({outcome.duration:.1f} s)"


def summary(result: BatchResult, title: str) -> str:
    from ..report.labels import labels_for, plural

    words = labels_for("en")
    overview = result.overview
    resumed = (f" (resumed: {plural(words, 'term.jobs', result.already_done)} done before it stopped)"
               if result.resumed else "")
    lines = [f"advisor batch: run {result.run_id} of {title}{resumed}",
             f"{plural(words, 'term.jobs', len(overview.jobs))}: {overview.count('ok')} analysed, "
             f"{overview.count('unchanged')} unchanged, {overview.count('failed')} failed; "
             f"{plural(words, 'term.regressions', len(overview.regressions))}, "
             f"{len(overview.where('recovered'))} recovered, {len(overview.where('changed'))} changed"]
    for job in overview.regressions:
        verdict = job.result.verdict
        where = f" at {verdict.root_op}" if verdict and verdict.root_op else ""
        lines.append(f"REGRESSION {job.name}: consistent -> {verdict.verdict if verdict else '?'}{where}")
    lines.extend(f"FAILED {job.name}: {job.result.error}" for job in overview.failures)
    lines.append("Index: " + ", ".join(str(p) for p in result.written))
    return "\n".join(lines)
