"""The comparison a command reads: a result file (INPUT), or two msprobe dump.json files compared by
their statistics (``--bench BENCH/dump.json --target TARGET/dump.json``). One set of arguments and one
check for ``run``, ``ops`` and ``node``."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from ..inputfiles import input_path


def add_dump_pair_arguments(parser: Any) -> None:
    """``--bench`` and ``--target`` on ``parser`` (a parser or an argument group)."""
    parser.add_argument("--bench", type=input_path, metavar="DUMP_JSON",
                        help="msprobe dump.json of the reference run; with --target instead of INPUT")
    parser.add_argument("--target", type=input_path, metavar="DUMP_JSON",
                        help="msprobe dump.json of the target run, compared with --bench by statistics")


def check_comparison(args: argparse.Namespace, positional: str = "input") -> None:
    """Exactly one comparison: the positional result, or --bench with --target."""
    if (args.bench is None) != (args.target is None):
        raise UsageError("--bench and --target go together: the two msprobe dump.json files to compare")
    if (getattr(args, positional) is None) == (args.bench is None):
        raise UsageError("give either a comparison result (INPUT) or --bench and --target, not both or neither")


def read_table(args: argparse.Namespace, positional: str = "comparison") -> Any:
    """The ComparisonTable the arguments name (checked by :func:`check_comparison`)."""
    check_comparison(args, positional)
    from ..ingest import read_comparison, read_dump_pair

    if args.bench is not None:
        return read_dump_pair(args.bench, args.target)
    return read_comparison(getattr(args, positional))
