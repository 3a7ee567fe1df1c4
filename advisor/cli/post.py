"""``advisor post``: compare the detections of a golden and a target post-processing and write the
advice reports (same engine, report formats, output folder handling and exit codes as ``advisor run``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import load_config
from ..defaults import DEFAULT_FORMATS
from ..diagnosis import SEVERITY_RANK, Diagnosis
from ..inputfiles import input_path
from ..progress import ProgressBar
from . import command_help
from .run import DEFAULT_OUTDIR, _pair, exit_code, parse_formats

if TYPE_CHECKING:
    from ..pipeline_post import PostOptions


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("post", help=command_help("post"),
                                   description="Compare the detections of a golden and a target post-processing "
                                               "(class ids, box geometry, decode, score threshold, NMS) and write "
                                               "advice reports.")
    parser.add_argument("--golden", type=input_path, required=True, metavar="DETECTIONS",
                        help="the reference run's detections: COCO results JSON, or a CSV with --mapping")
    parser.add_argument("--target", type=input_path, required=True, metavar="DETECTIONS",
                        help="the target run's detections, same format")
    parser.add_argument("--mapping", type=input_path, metavar="MAPPING.yaml",
                        help="column mapping of CSV detections (docs/post.md)")
    parser.add_argument("--annotations", type=input_path, metavar="COCO.json",
                        help="ground truth (COCO instances): per-class AP of both runs, image sizes")
    parser.add_argument("--images-info", type=input_path, metavar="FILE",
                        help="image sizes and the network input size (YAML or JSON, docs/post.md)")
    parser.add_argument("--input-size", type=str, metavar="WxH",
                        help="the network input size, e.g. 640x640 (over --images-info's)")
    parser.add_argument("--rules", action="append", type=input_path, default=[], metavar="PACK",
                        help="extra rule pack; repeatable")
    parser.add_argument("--no-builtin-rules", action="store_true", help="use only the packs given with --rules")
    parser.add_argument("--threshold", action="append", default=[], metavar="post.KNOB=VALUE",
                        help="override a measurement knob (knowledge/thresholds.yaml, knobs.post); repeatable")
    parser.add_argument("--set", action="append", default=[], dest="params", metavar="RULE.PARAM=VALUE",
                        help="override a rule parameter; repeatable")
    parser.add_argument("--disable", action="append", default=[], metavar="RULE", help="do not fire this rule")
    parser.add_argument("--severity", action="append", default=[], metavar="RULE=LEVEL",
                        help="change a rule's severity (error, warning, info); repeatable")
    parser.add_argument("--project-config", type=input_path, metavar="FILE",
                        help="advisor.toml or pyproject.toml to use (default: the nearest one above)")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="report language")
    parser.add_argument("-o", "--output", type=Path, default=Path(DEFAULT_OUTDIR), metavar="OUTDIR",
                        help=f"folder for the reports (default: ./{DEFAULT_OUTDIR})")
    parser.add_argument("--format", default=",".join(DEFAULT_FORMATS), metavar="LIST",
                        help=f"comma-separated report formats (default: {','.join(DEFAULT_FORMATS)})")
    parser.add_argument("--fail-on", choices=("error", "warning"),
                        help="exit with 1 when a finding reaches this severity")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def options_from(args: argparse.Namespace) -> PostOptions:
    """Project settings first (packs, disabled rules, severities, parameters), the command line on top."""
    from ..detections.images import parse_input_size
    from ..pipeline_post import PostOptions

    config = load_config(args.project_config)
    return PostOptions(
        golden=args.golden, target=args.target, mapping=args.mapping, annotations=args.annotations,
        images_info=args.images_info,
        input_size=parse_input_size(args.input_size) if args.input_size else None,
        rule_packs=[*config.rules, *args.rules], builtin_rules=config.builtin_rules and not args.no_builtin_rules,
        thresholds=(*config.thresholds, *args.threshold), params=(*config.params, *args.params),
        disable=(*config.disable, *args.disable),
        severity={**config.severity, **dict(_pair(text, "--severity", "RULE=LEVEL") for text in args.severity)},
        settings=config.source)


def execute(args: argparse.Namespace) -> int:
    from ..pipeline_post import STAGES, analyse_post
    from ..report import write_reports

    formats = parse_formats(args.format)
    options = options_from(args)
    with ProgressBar("advisor post", len(STAGES) + 1, enabled=False if args.quiet else None, delay=2.0,
                     leave=False, unit="step") as bar:
        diagnosis = analyse_post(options, stage=bar.stage)
        bar.stage("writing reports")
        written = write_reports(diagnosis, args.output, formats=formats, lang=args.lang)
    if not args.quiet:
        try:
            print(summary(diagnosis, args.lang, written), flush=True)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exit_code(diagnosis, args.fail_on)


def summary(diagnosis: Diagnosis, lang: str, written: list[Path]) -> str:
    from ..advice import AdviceBook, preferred_backends, render_advice
    from ..report.labels import labels_for, plural

    words = labels_for(lang)
    net = diagnosis.network
    lines = [words["term.post_header"].format(version=diagnosis.version, golden=diagnosis.inputs.get("golden"),
                                              target=diagnosis.inputs.get("target"),
                                              golden_count=net.get("golden_count", 0),
                                              target_count=net.get("target_count", 0), images=net.get("images", 0))]
    root = diagnosis.root_cause
    if root is not None:
        title = root.title.get(lang, root.title["en"])
        lines.append(words["term.verdict"].format(text=title))
        lines.append(words["term.evidence"].format(text=root.evidence.get(lang, root.evidence.get("en", ""))))
        lines.append(words["term.fix"].format(text=render_advice(
            root, lang, preferred_backends(diagnosis.backends), AdviceBook(diagnosis.advice_pages)).summary))
    else:
        key = "term.post_consistent" if net.get("consistent") else "term.post_unexplained"
        lines.append(words["term.verdict"].format(text=words[key]))
    active = [f for f in diagnosis.findings if f.explained_by is None]
    counts = {s: sum(f.severity == s for f in active) for s in SEVERITY_RANK}
    lines.append(words["term.findings"].format(counts=words["term.list"].join(
        plural(words, key, counts[severity]) for severity, key in
        (("error", "term.errors"), ("warning", "term.warnings"), ("info", "term.notes")))))
    lines.extend(words["term.warning"].format(text=w) for w in diagnosis.warnings)
    lines.append(words["term.reports"].format(files=", ".join(str(p) for p in written if p.name.startswith("report."))))
    return "\n".join(lines)
