"""``advisor ops``: list the ops of a comparison (fuzzy name/type match, metric thresholds)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..inputfiles import input_path
from . import command_help
from .inputs import add_dump_pair_arguments, read_table

if TYPE_CHECKING:
    from ..facts.thresholds import Thresholds
    from ..inspect.ops import OpSummary


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ops", help=command_help("ops"),
        description="One line per op: index, type, name, fused-from ops and its worst input and output "
                    "metrics (lowest cosine, highest errors). Names and types match fuzzily (case and "
                    "separators ignored).")
    parser.add_argument("comparison", type=input_path, nargs="?", metavar="RESULT.csv", help="comparison result")
    add_dump_pair_arguments(parser)
    parser.add_argument("--graph", type=input_path, metavar="FILE", help="model graph, for fused-from ops and passes")
    parser.add_argument("--name", metavar="SUBSTR", help="keep ops whose name (or a fused-from op) contains it")
    parser.add_argument("--type", dest="op_type", metavar="TYPE", help="keep ops whose type contains it")
    parser.add_argument("--below", metavar="METRIC=VALUE",
                        help="keep ops whose worst output METRIC is below VALUE, e.g. cosine=0.98")
    parser.add_argument("--above", metavar="METRIC=VALUE",
                        help="keep ops whose worst output METRIC is above VALUE, e.g. red=0.01")
    parser.add_argument("--limit", type=int, metavar="N", help="show at most N ops")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def execute(args: argparse.Namespace) -> int:
    from ..graph import read_graph
    from ..inspect.common import jsonable, parse_threshold, use_colour
    from ..inspect.limits import project_thresholds
    from ..inspect.ops import list_ops

    if args.limit is not None and args.limit < 0:
        raise UsageError("--limit must be 0 or more")
    below = parse_threshold(args.below) if args.below else None
    above = parse_threshold(args.above) if args.above else None
    table = read_table(args)
    graph = read_graph(args.graph) if args.graph else None
    ops = list_ops(table, graph, name=args.name, op_type=args.op_type, below=below, above=above, limit=args.limit)
    if args.json:
        print(json.dumps(jsonable({"comparison": str(args.comparison or f"{args.bench} vs {args.target}"),
                                   "count": len(ops),
                                   "ops": [op.to_dict() for op in ops]}), indent=2))
        return 0
    print(ops_text(ops, colour=use_colour(), thresholds=project_thresholds()))
    return 0


def ops_text(ops: list[OpSummary], *, colour: bool = False, width: int | None = None,
             thresholds: Thresholds | None = None) -> str:
    """The ops as a table with the metrics the comparison has: cosine and errors per tensor, or the
    relative error of each statistic (msprobe's summary mode), or whether the checksums differ. The
    output cosine is coloured by the op's own limit (advisor/inspect/limits.py): ``thresholds``
    (default: knowledge/thresholds.yaml as shipped)."""
    from ..inspect.common import SHORT_NAMES, fmt, render_table
    from ..inspect.limits import project_thresholds

    if not ops:
        return "no op matches"
    metrics = list(ops[0].outputs)
    if "cosine" in metrics or not metrics:
        return _tensor_ops_text(ops, colour=colour, width=width, thresholds=thresholds or project_thresholds())
    headers = ["#", "type", "name", *(f"out {SHORT_NAMES.get(m, m)}" for m in metrics)]
    rows, tints = [], []
    for op in ops:
        rows.append([fmt(op.index), op.op_type, op.name, *(fmt(op.outputs.get(m)) for m in metrics)])
        bad = op.overflow or any(op.outputs.get(m, 0.0) > 0 for m in metrics if m == "checksum_differs")
        tints.append([None, None, "red" if bad else None, *([None] * len(metrics))])
    table = render_table(headers, rows, width=width, shrink=(2,), colours=tints, colour=colour)
    return table + f"\n{len(ops)} op{'s' if len(ops) != 1 else ''}"


def _tensor_ops_text(ops: list[OpSummary], *, colour: bool, width: int | None, thresholds: Thresholds) -> str:
    from ..inspect.common import fmt, render_table
    from ..inspect.limits import cosine_limit, cosine_tint

    headers = ["#", "type", "name", "fused from", "in cos", "out cos", "out red", "out max_abs"]
    rows, tints = [], []
    for op in ops:
        out_cos = op.outputs.get("cosine", float("nan"))
        rows.append([fmt(op.index), op.op_type, op.name, ",".join(op.fused_from) if op.fused_from != [op.name] else "",
                     fmt(op.inputs.get("cosine")), fmt(out_cos), fmt(op.outputs.get("relative_euclidean_distance")),
                     fmt(op.outputs.get("max_abs_error"))])
        tint = cosine_tint(out_cos, cosine_limit(thresholds, op.dtype, backward=op.backward,
                                                 identical_inputs=op.inputs_identical))
        bad = tint == "red" or op.overflow
        tints.append([None, None, "red" if bad else None, None, None, tint, None, None])
    table = render_table(headers, rows, width=width, shrink=(3, 2), colours=tints, colour=colour)
    return table + f"\n{len(ops)} op{'s' if len(ops) != 1 else ''}"
