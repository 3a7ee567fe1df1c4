"""``advisor diff``: compare two tensors: metrics, tolerance, worst elements, probes."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..inputfiles import input_path, input_text
from . import command_help

if TYPE_CHECKING:
    from ..inspect.diff import DiffReport

PROBE_KEYS = ("layout_match", "layout_fit", "layout_margin", "channel_order", "channel_margin",
              "norm_relation", "norm_fit", "scale_factor", "norm_known", "geometry_label", "skipped")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff", help=command_help("diff"),
        description="A is the golden (reference) tensor, B the target. Prints the ten msaccucmp metrics, "
                    "allclose, the share of elements beyond atol + rtol * |A|, the worst elements with "
                    "their coordinates and the channel / layout / affine probes. With --dumps DIR, A and B "
                    "may be op names (`conv1`, `conv1:input:0`); give --dumps twice for a golden and a "
                    "target folder, and B may then be left out (the same op on both sides).")
    parser.add_argument("a", type=input_text, metavar="A", help="golden .npy (or op name with --dumps)")
    parser.add_argument("b", type=input_text, metavar="B", nargs="?", help="target .npy (or op name with --dumps)")
    parser.add_argument("--dumps", type=input_path, action="append", default=[], metavar="DIR",
                        help="dump folder to find tensors by op name (twice: golden, then target)")
    parser.add_argument("--atol", type=float, default=1e-5, metavar="A", help="absolute tolerance (default 1e-5)")
    parser.add_argument("--rtol", type=float, default=1e-3, metavar="R", help="relative tolerance (default 1e-3)")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="worst elements to list (default 10)")
    parser.add_argument("--no-probes", action="store_true", help="skip the probes (faster on big tensors)")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def execute(args: argparse.Namespace) -> int:
    from ..inspect.common import load_array, resolve_tensor_file, use_colour
    from ..inspect.diff import diff_tensors

    if len(args.dumps) > 2:
        raise UsageError("--dumps at most twice (golden, then target)")
    if args.atol < 0 or args.rtol < 0 or args.top < 0:
        raise UsageError("--atol, --rtol and --top must be 0 or more")
    b = args.b
    if b is None:
        if len(args.dumps) != 2:
            raise UsageError("give B, or --dumps twice (golden, then target) to diff one op across both")
        b = args.a
    golden_dir = args.dumps[0] if args.dumps else None
    target_dir = args.dumps[-1] if args.dumps else None
    golden_path = resolve_tensor_file(args.a, golden_dir)
    target_path = resolve_tensor_file(b, target_dir)
    report = diff_tensors(load_array(golden_path), load_array(target_path), atol=args.atol, rtol=args.rtol,
                          top=args.top, probes=not args.no_probes)
    if args.json:
        data = report.to_dict()
        data.update(golden=str(golden_path), target=str(target_path))
        print(json.dumps(data, indent=2))
    else:
        print(diff_text(report, str(golden_path), str(target_path), colour=use_colour()))
    return 0


def diff_text(r: DiffReport, golden: str = "A", target: str = "B", *, colour: bool = False,
              width: int | None = None) -> str:
    from ..inspect.common import fmt, paint, render_table

    lines = [f"golden {golden}: {r.golden_shape} {r.golden_dtype}",
             f"target {target}: {r.target_shape} {r.target_dtype}", ""]
    lines.append(render_table(["metric", "value"], [[k, fmt(v) if not isinstance(v, str) else v]
                                                    for k, v in r.metrics.items()], width=width))
    for reason in r.fail_reasons:
        lines.append(f"note: {reason}")
    lines.append("")
    if r.allclose is None:
        lines.append(paint("element counts differ: no element-wise comparison", "red", colour))
    else:
        verdict = paint("allclose: yes" if r.allclose else "allclose: no", "green" if r.allclose else "red", colour)
        lines.append(f"{verdict}  (atol {r.atol:g}, rtol {r.rtol:g}); beyond tolerance: {r.beyond} "
                     f"({100 * r.beyond_share:.4g}%)")
    if r.worst:
        lines += ["", "worst elements:"]
        rows = [[str(tuple(e.coords)), fmt(e.golden), fmt(e.target), fmt(e.abs_error), fmt(e.rel_error)]
                for e in r.worst]
        lines.append(render_table(["coords", "golden", "target", "abs err", "rel err"], rows, width=width))
    if r.probes:
        shown = [[k, fmt(r.probes[k]) if not isinstance(r.probes[k], str) else r.probes[k]]
                 for k in PROBE_KEYS if k in r.probes]
        if shown:
            lines += ["", "probes:", render_table(["probe", "value"], shown, width=width)]
    return "\n".join(lines)
