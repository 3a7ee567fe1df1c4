"""``advisor compare``: compare golden and target dump folders into an msaccucmp result CSV."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..cluster import connect, require_distributed
from ..errors import UsageError
from ..inputfiles import input_path
from . import command_help

if TYPE_CHECKING:
    from ..compare.runner import CompareOptions, CompareSummary

EXIT_INTERRUPTED = 130


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help=command_help("compare"),
        description="Pair the tensors of two dump folders (Ascend NPU numpy or raw device dumps, TF-style "
                    "golden .npy or tfdbg folders, msprobe .npy, PyTorch 1.5 .h5 dumps), compute the ten msaccucmp "
                    "metrics and write a result CSV that "
                    "`advisor run` reads. An interrupted run resumes when started again.")
    parser.add_argument("--golden", type=input_path, required=True, metavar="DIR", help="golden (reference) dumps")
    parser.add_argument("--target", type=input_path, required=True, metavar="DIR", help="target (NPU) dumps")
    parser.add_argument("--graph", type=input_path, metavar="FILE", action="append", default=[],
                        help="for fused ops, repeatable: the golden model.onnx (its decomposition patterns pair a "
                             "fused LayerNorm, GELU... with the golden subgraph), the target graph "
                             "ge_proto_*_Build.txt or OM model JSON (_datadump_original_op_names), or a JSON "
                             "{target op: golden ops} map (default: pair by names and execution order)")
    parser.add_argument("--map", dest="mapping", type=input_path, metavar="MAP.yaml",
                        help="which golden ops each target op computes, YAML or JSON: {target op: [golden ops]}, "
                             "or {target op: {golden: [...], outputs: [op:slot...], inputs: [op:slot | null...]}}")
    parser.add_argument("--fusion", type=input_path, metavar="fusion_result.json",
                        help="the build's fusion report: a decomposition pattern is used only when one of its "
                             "fusion passes took effect")
    parser.add_argument("--pair-by-shape", action="store_true",
                        help="opt-in guess: compare an input that no dumped op produced and no graph names with the "
                             "latest earlier golden tensor of its shape; such rows say so in CompareFailReason")
    parser.add_argument("--op-map", type=input_path, metavar="FILE",
                        help="target op and argument names -> golden ones: torch.utils.get_op_map() saved as JSON, "
                             "or {ops: {...}, arguments: {...}} (docs/formats.md)")
    parser.add_argument("-o", "--output", type=Path, default=Path("."), metavar="CSV",
                        help="result CSV, or a folder for result_<time>.csv (default: the current folder)")
    parser.add_argument("-j", "--jobs", type=int, metavar="N", help="worker threads (default: every core)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="compare the tensor pairs on this dask cluster (tcp://host:8786, or a scheduler JSON "
                             "file); the workers must read both dump folders at the same paths (README 'Scale-out')")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="always show the progress bar (default: when stderr is a terminal and CI is not set)")
    progress.add_argument("--no-progress", dest="progress", action="store_false", help="never show it")
    parser.add_argument("--restart", action="store_true",
                        help="ignore what an interrupted run saved and start over")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def execute(args: argparse.Namespace) -> int:
    from ..compare.runner import CompareOptions, compare_dumps, journal_path

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.scheduler is not None and args.jobs is not None:
        raise UsageError("--jobs: not with --scheduler (the cluster's workers compare the tensors)")
    options = CompareOptions(golden=args.golden, target=args.target, output=args.output, graphs=tuple(args.graph),
                             mapping=args.mapping, fusion=args.fusion, pair_by_shape=args.pair_by_shape,
                             op_map=args.op_map, jobs=args.jobs, progress=False if args.quiet else args.progress,
                             resume=not args.restart)
    try:
        summary = compare_dumps(options) if args.scheduler is None else _on_cluster(options, args.scheduler)
    except KeyboardInterrupt:
        print(f"advisor: interrupted; finished work is kept in {journal_path(args.output)}: run the same "
              "command again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not args.quiet:
        print(summary_text(summary))
    return 0


def _on_cluster(options: CompareOptions, scheduler: str) -> CompareSummary:
    """Workers open the dumps by the paths this process found, so they travel absolute."""
    from ..cluster.compare import mapper
    from ..compare.runner import compare_dumps

    require_distributed()
    with connect(scheduler) as client:
        return compare_dumps(replace(options, golden=options.golden.resolve(), target=options.target.resolve(),
                                     mapper=mapper(client)))


def summary_text(summary: CompareSummary) -> str:
    resumed = summary.pairs - summary.computed
    lines = [f"advisor compare: {summary.rows} rows, {summary.pairs} distinct tensor pairs"
             + (f" ({resumed} resumed)" if resumed else "")
             + f" in {summary.seconds:.1f} s; pairing: {summary.pairing}",
             coverage_text(summary.coverage),
             f"Wrote {summary.output}"]
    lines.extend(f"Note: {note}" for note in summary.notes[:20])
    if len(summary.notes) > 20:
        lines.append(f"Note: ... and {len(summary.notes) - 20} more")
    return "\n".join(lines)


#: How rows were paired, in the order the summary lists them (tensors/pairing.py).
PAIRED_BY = ("name", "lineage", "fusion-info", "map", "pattern", "graph", "order", "shape")


def coverage_text(coverage: dict[str, int]) -> str:
    """``Coverage: 130 of 142 rows compared (name 40, lineage 70, pattern 20); 12 not compared; 8
    target-only``: every row counted once, shape-paired rows called out."""
    from ..tensors.pairing import TARGET_ONLY

    compared = {k: v for k, v in coverage.items() if k and k != TARGET_ONLY}
    total = sum(coverage.values())
    ways = ", ".join(f"{k} {compared[k]}" for k in sorted(compared, key=_paired_rank))
    text = f"Coverage: {sum(compared.values())} of {total} rows compared" + (f" ({ways})" if ways else "")
    text += f"; {coverage.get('', 0)} not compared"
    if coverage.get(TARGET_ONLY):
        text += f"; {coverage[TARGET_ONLY]} of target-only ops"
    if coverage.get("shape"):
        text += f". {coverage['shape']} paired by shape alone (--pair-by-shape): check them before trusting them"
    return text


def _paired_rank(kind: str) -> int:
    return PAIRED_BY.index(kind) if kind in PAIRED_BY else len(PAIRED_BY)
