"""``advisor tensor``: statistics, FP16 range usage and a histogram of one dumped tensor."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..inputfiles import input_path, input_text
from . import command_help

if TYPE_CHECKING:
    from ..inspect.tensor import TensorSummary


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tensor", help=command_help("tensor"),
        description="Shape, dtype, min/max/mean/std, NaN/inf counts, FP16 range usage and a histogram. "
                    "FILE is an .npy file, or with --dumps DIR an op name (`conv1`, `conv1:input:0`).")
    parser.add_argument("file", type=input_text, metavar="FILE", help=".npy file, or an op name with --dumps")
    parser.add_argument("--dumps", type=input_path, metavar="DIR", help="dump folder to find FILE by op name")
    parser.add_argument("--txt", type=Path, metavar="OUT", help="also write the values as text (shape and "
                                                                "dtype in a header line)")
    parser.add_argument("--bins", type=int, default=20, metavar="N", help="histogram bins (default 20)")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def execute(args: argparse.Namespace) -> int:
    from ..inspect.common import load_array, resolve_tensor_file, use_colour
    from ..inspect.tensor import summarise_tensor
    from ..inspect.tensor_text import write_text

    path = resolve_tensor_file(args.file, args.dumps)
    array = load_array(path)
    summary = summarise_tensor(array, bins=args.bins, source=str(path))
    if args.txt:
        write_text(array, args.txt)
    if args.json:
        data = summary.to_dict()
        if args.txt:
            data["text_export"] = str(args.txt)
        print(json.dumps(data, indent=2))
    else:
        print(tensor_text(summary, colour=use_colour()))
        if args.txt:
            print(f"Wrote {args.txt}")
    return 0


def tensor_text(s: TensorSummary, *, colour: bool = False) -> str:
    from ..inspect.common import fmt, paint
    from ..inspect.tensor import histogram_lines

    nonfinite = s.nan + s.posinf + s.neginf
    fp16 = s.fp16
    lines = [f"{s.source or 'tensor'}",
             f"shape {s.shape}  dtype {s.dtype}  elements {s.size}",
             f"min {fmt(s.min)}  max {fmt(s.max)}  mean {fmt(s.mean)}  std {fmt(s.std)}  zeros {s.zeros}",
             paint(f"NaN {s.nan}  +inf {s.posinf}  -inf {s.neginf}", "red" if nonfinite else None, colour),
             paint(f"FP16: {100 * fp16['range_used']:.3g}% of range used (|x|max {fmt(s.abs_max)} of 65504); "
                   f"{fp16['overflow']} overflow, {fp16['subnormal']} subnormal, "
                   f"{fp16['underflow_to_zero']} flush to zero",
                   "red" if fp16["overflow"] else None, colour),
             "", "histogram (finite values):", *histogram_lines(s.histogram)]
    return "\n".join(lines)
