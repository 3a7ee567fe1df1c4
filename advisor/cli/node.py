"""``advisor node``: everything known about one op."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import TYPE_CHECKING

from ..errors import AdvisorError, UsageError
from ..inputfiles import input_path
from . import command_help
from .inputs import add_dump_pair_arguments, read_table

if TYPE_CHECKING:
    from ..facts.thresholds import Thresholds
    from ..inspect.node import NodeReport


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "node", help=command_help("node"),
        description="Type, fused-from ops and fusion passes, attributes, input and output tensors with their "
                    "metrics, predecessors and successors (with --graph) and the findings that mention it. "
                    "NAME is an op name (fuzzy: a unique substring will do), a golden op it was fused from, "
                    "or an op index.")
    parser.add_argument("name", metavar="NAME", help="op name, golden op name or op index")
    parser.add_argument("comparison", type=input_path, nargs="?", metavar="RESULT.csv", help="comparison result")
    add_dump_pair_arguments(parser)
    parser.add_argument("--graph", type=input_path, metavar="FILE", help="model graph (ONNX, GE dump, OM JSON)")
    parser.add_argument("--depth", type=int, default=1, metavar="K",
                        help="predecessors and successors up to K data edges away (default 1)")
    parser.add_argument("--no-findings", action="store_true",
                        help="do not run the analysis (faster on a large comparison)")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def execute(args: argparse.Namespace) -> int:
    from ..graph import read_graph
    from ..inspect.common import use_colour
    from ..inspect.limits import project_thresholds
    from ..inspect.node import inspect_node

    if args.depth < 0:
        raise UsageError("--depth must be 0 or more")
    table = read_table(args)
    graph = read_graph(args.graph) if args.graph else None
    diagnosis = None
    if not args.no_findings:
        from ..pipeline import AnalysisOptions, analyse
        try:
            diagnosis = analyse(AnalysisOptions(comparison=args.comparison, bench=args.bench, target=args.target))
        except AdvisorError as exc:  # the findings are extra: show the rest and say why they are missing
            print(f"advisor: warning: no findings (the analysis failed: {exc.one_line()})", file=sys.stderr)
    report = inspect_node(args.name, table, graph, depth=args.depth, diagnosis=diagnosis)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(node_text(report, colour=use_colour(), thresholds=project_thresholds()))
    return 0


def node_text(report: NodeReport, *, colour: bool = False, width: int | None = None,
              thresholds: Thresholds | None = None) -> str:
    """A tensor's cosine is coloured by its own limit (advisor/inspect/limits.py): ``thresholds``
    (default: knowledge/thresholds.yaml as shipped)."""
    from ..ingest.table import STAT_DIFF_COLUMNS
    from ..inspect.common import SHORT_NAMES, fmt, render_table, terminal_width
    from ..inspect.limits import cosine_limit, cosine_tint, project_thresholds

    thresholds = thresholds or project_thresholds()
    identical = report.summary is not None and report.summary.inputs_identical
    lines = [f"{report.name}  ({report.op_type or 'unknown type'})"
             + (f"  index {report.index}" if report.index is not None else "  not in the comparison")]
    if report.fused_from:
        lines.append(f"fused from: {', '.join(report.fused_from)}")
    if report.passes:
        lines.append(f"fusion passes: {', '.join(report.passes)}")
    if report.in_graph is False:
        lines.append("graph: no op of this name in the graph")
    if report.attributes:
        lines.append("attributes:")
        for key, value in list(report.attributes.items())[:30]:
            text = str(value)
            lines.append(f"  {key} = {text if len(text) <= 100 else text[:99] + '…'}")
        if len(report.attributes) > 30:
            lines.append(f"  ... {len(report.attributes) - 30} more (see --json)")
    if report.tensors:
        metrics = [m for m in ("cosine", "relative_euclidean_distance", "max_abs_error", "mean_relative_error",
                               "kl_divergence", *STAT_DIFF_COLUMNS, "checksum_differs")
                   if any(m in t.metrics for t in report.tensors)]
        headers = ["tensor", "dtype", "shape", "ovf", *(SHORT_NAMES.get(m, m) for m in metrics)]
        rows, tints = [], []
        for t in report.tensors:
            rows.append([t.tensor, t.dtype or "-", t.shape or "-", "yes" if t.overflow else "",
                         *(fmt(t.metrics.get(m)) for m in metrics)])
            limit = cosine_limit(thresholds, t.dtype, backward=t.direction == "backward",
                                 identical_inputs=identical and t.io != "input")
            tint = cosine_tint(t.metrics.get("cosine"), limit)
            tints.append([None, None, None, "red" if t.overflow else None,
                          *((tint if tint == "red" else None) if m == "cosine" else None for m in metrics)])
        lines += ["", render_table(headers, rows, width=width, shrink=(0, 2), colours=tints, colour=colour)]
    if report.graph_inputs or report.graph_outputs:
        lines.append("")
        lines.append(f"graph inputs: {', '.join(report.graph_inputs) or '-'}")
        lines.append(f"graph outputs: {', '.join(report.graph_outputs) or '-'}")
    for title, items in (("predecessors", report.predecessors), ("successors", report.successors)):
        if report.in_graph:
            lines += ["", f"{title}:" if items else f"{title}: none"]
            if items:
                rows = [[str(n.distance), n.name, n.op_type, fmt(n.index), fmt(n.out_cosine)] for n in items]
                lines.append(render_table(["d", "op", "type", "#", "out cos"], rows, width=width, shrink=(1,)))
    if report.in_graph is None:
        lines += ["", "predecessors/successors: give --graph FILE"]
    if report.findings:
        lines += ["", "findings:"]
        for f in report.findings:
            mark = "root cause " if f["root_cause"] else ""
            head = f"  [{f['severity']}] {mark}{f['kind']} ({f['rule']}) at {f['op']}"
            lines.append(head if not colour else f"\x1b[1m{head}\x1b[0m")
            lines.append(textwrap.fill(f["evidence"], width=width or terminal_width(),
                                       initial_indent="    ", subsequent_indent="    "))
    return "\n".join(lines)
