"""``advisor run``: analyse a comparison result and write the advice reports (the stages are
imported by the functions that run them: advisor/cli/__init__.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import ProjectConfig, load_config
from ..defaults import DEFAULT_FORMATS
from ..diagnosis import CONSISTENT, SEVERITY_RANK, Diagnosis
from ..errors import UsageError
from ..inputfiles import input_path
from ..progress import ProgressBar
from ..remedy import BACKEND_NAMES, parse_backends
from . import command_help
from .inputs import add_dump_pair_arguments, check_comparison
from .options import add_analysis_options

if TYPE_CHECKING:
    from ..pipeline import AnalysisOptions

DEFAULT_OUTDIR = "advisor-report"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help=command_help("run"),
                                   description="Analyse a comparison result (msaccucmp CSV) and write advice "
                                               "reports.",
                                   epilog="Exit codes: 0 analysed, 1 a finding reached --fail-on, 2 bad input or "
                                          "usage, 3 an internal error. Formats and options in depth: advisor docs.")
    inputs = parser.add_argument_group("inputs", "the comparison to analyse: a result file, or two msprobe dump.json")
    evidence = parser.add_argument_group(
        "evidence", "what else the two runs left behind: each one sharpens the diagnosis (the report's 'What would "
                    "sharpen this' says which would)")
    judging = parser.add_argument_group("thresholds and rules", "how the comparison is judged")
    output = parser.add_argument_group("output", "the reports, the remedy files and the exit code")
    inputs.add_argument("input", type=input_path, nargs="?",
                        help="comparison result, e.g. result_20240101120000.csv (msaccucmp, msprobe, or any "
                             "CSV with --mapping)")
    add_dump_pair_arguments(inputs)
    inputs.add_argument("--mapping", type=input_path, metavar="MAPPING.yaml",
                        help="column mapping for a CSV from a tool advisor does not know (docs/formats.md)")
    evidence.add_argument("--dumps", metavar="GOLDEN_DIR:TARGET_DIR",
                        help="the dump folders the comparison was made from: probes the input tensors for "
                             "channel order, normalisation, layout, scale and geometry")
    evidence.add_argument("--overflow", type=input_path, metavar="DIR",
                        help="hardware overflow records (Opdebug.Node_OpDebug.*) with the raw dumps of the same run: "
                             "each record's kind (float, FP32->FP16 conversion, accumulation) joined to its op")
    evidence.add_argument("--config", type=input_path, metavar="BUILD.json|yaml",
                        help="the target's build config (MagicMind or ATC knobs) as evidence")
    evidence.add_argument("--simulation", type=input_path, metavar="SIM_RESULT.csv",
                        help="with --config: the comparison of the framework's fake-quant simulation of the build "
                             "(e.g. an AMCT fake-quant model) against the float model: tells a layer int8 cannot "
                             "hold from a target-only (backend) error")
    evidence.add_argument("--graph", type=input_path, metavar="MODEL.onnx|ge_proto_N_Build.txt|MODEL.json",
                        help="the model graph (ONNX model, GE graph dump or OM model as JSON): joins ops by name, "
                             "reads inputs from graph predecessors, names fusion passes and draws the root cause's "
                             "neighbourhood")
    evidence.add_argument("--fusion", type=input_path, metavar="fusion_result.json",
                        help="the fusion report of the target build (fusion passes that took effect)")
    evidence.add_argument("--verify", action="store_true",
                        help="with --graph model.onnx and --dumps: check the diagnosis on the CPU with ONNX Runtime "
                             "(replay the blamed op on the target's inputs, emulate the target's precision, apply each "
                             "remedy step) and let the rules judge the results (docs/verify.md)")
    add_analysis_options(parser, defaults=True,     # shared with advisor batch --scan (options.py)
                         groups={"inputs": inputs, "evidence": evidence, "judging": judging, "output": output})
    judging.add_argument("--project-config", type=input_path, metavar="FILE",
                        help="advisor.toml or pyproject.toml to use (default: the nearest one above the "
                             "current folder)")
    output.add_argument("--backend", action="append", default=[], dest="backends", metavar="NAME",
                        help=f"write the remedy files for this backend ({', '.join(BACKEND_NAMES)} or all); "
                             "repeatable or comma-separated (default: the --config build's tool, else all)")
    output.add_argument("-o", "--output", type=Path, default=Path(DEFAULT_OUTDIR), metavar="OUTDIR",
                        help=f"folder for the reports (default: ./{DEFAULT_OUTDIR})")
    output.add_argument("--fail-on", choices=("error", "warning"),
                        help="exit with 1 when a finding reaches this severity")
    output.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def execute(args: argparse.Namespace) -> int:
    from ..pipeline import STAGES, analyse
    from ..report import write_reports

    formats = parse_formats(args.format)
    if args.max_op_facts < 1:
        raise UsageError("--max-op-facts must be at least 1")
    options = analysis_options(args, load_config(args.project_config))
    # A large comparison takes tens of seconds: say which step runs (on a terminal, after 2 s).
    with ProgressBar("advisor run", len(STAGES) + 1, enabled=False if args.quiet else None, delay=2.0,
                     leave=False, unit="step") as bar:
        diagnosis = analyse(options, stage=bar.stage)
        bar.stage("writing reports")
        written = write_reports(diagnosis, args.output, formats=formats, lang=args.lang)
    for line in warning_lines(diagnosis, args.lang):
        print(line, file=sys.stderr, flush=True)
    if not args.quiet:
        try:
            print(summary(diagnosis, args.lang, written), flush=True)
        except BrokenPipeError:  # `advisor run ... | head`: the reports are written, the exit code stands
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exit_code(diagnosis, args.fail_on)


def analysis_options(args: argparse.Namespace, config: ProjectConfig) -> AnalysisOptions:
    """Project settings first, the command line on top: lists add up, single values override."""
    from ..pipeline import AnalysisOptions

    check_comparison(args)
    input_nodes = tuple(n.strip() for n in args.input_nodes.split(";") if n.strip()) or tuple(config.input_nodes)
    return AnalysisOptions(
        comparison=args.input, mapping=args.mapping, bench=args.bench, target=args.target,
        rule_packs=[*config.rules, *args.rules],
        builtin_rules=config.builtin_rules and not args.no_builtin_rules,
        input_nodes=input_nodes, thresholds=(*config.thresholds, *args.threshold),
        params=(*config.params, *args.params), comparison_format=args.comparison_format,
        max_op_facts=args.max_op_facts, disable=(*config.disable, *args.disable),
        severity={**config.severity, **dict(_pair(text, "--severity", "RULE=LEVEL") for text in args.severity)},
        settings=config.source, dumps=_dump_folders(args.dumps), build_config=args.config,
        simulation=args.simulation, overflow=args.overflow,
        graph=getattr(args, "graph", None), fusion=getattr(args, "fusion", None),
        backends=parse_backends(args.backends) or config.backends, verify=bool(getattr(args, "verify", False)))


def _dump_folders(text: str | None) -> tuple[Path, Path] | None:
    """``GOLDEN_DIR:TARGET_DIR``; split at the last ':' that leaves two existing folders (paths on
    Windows-mounted shares can hold one)."""
    if text is None:
        return None
    for at in [i for i, ch in enumerate(text) if ch == ":"][::-1]:
        golden, target = Path(text[:at]), Path(text[at + 1:])
        if golden.is_dir() and target.is_dir():
            return golden, target
    raise UsageError(f"--dumps '{text}': expected GOLDEN_DIR:TARGET_DIR, two existing folders")


def _pair(text: str, option: str, form: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise UsageError(f"{option} '{text}': expected {form}")
    return key.strip(), value.strip()


def parse_formats(text: str) -> tuple[str, ...]:
    """Checked before the analysis, so a typo fails fast instead of after reading a large input."""
    from ..report import get_reporter

    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    if not formats:
        raise UsageError(f"--format: no format given (choose from {', '.join(DEFAULT_FORMATS)})")
    for fmt in formats:
        get_reporter(fmt)
    return formats


def exit_code(diagnosis: Diagnosis, fail_on: str | None) -> int:
    worst = diagnosis.worst_severity()
    if fail_on and worst is not None and SEVERITY_RANK[worst] <= SEVERITY_RANK[fail_on]:
        return 1
    return 0


def warning_lines(diagnosis: Diagnosis, lang: str) -> list[str]:
    """The run's warnings as ``advisor run`` prints them, on stderr (stdout is the summary scripts read)."""
    from ..report.labels import labels_for

    words = labels_for(lang)
    return [f"advisor: {words['term.warning'].format(text=w)}" for w in diagnosis.warnings]


def summary(diagnosis: Diagnosis, lang: str, written: list[Path]) -> str:
    """What the terminal shows after a run, in the report's language (labels: term.* in report/labels.py)."""
    from ..advice import AdviceBook, preferred_backends, render_advice
    from ..report.labels import labels_for, plural
    from ..report.sharpen import sharpen_hints

    words = labels_for(lang)
    net = diagnosis.network
    lines = [words["term.header"].format(version=diagnosis.version, comparison=diagnosis.inputs.get("comparison"),
                                         format=diagnosis.inputs.get("format"), rows=net.get("rows"),
                                         ops=net.get("ops"))]
    root = diagnosis.root_cause
    if root is None:      # the verdict the reports state, read from the findings (Diagnosis.verdict)
        consistent = diagnosis.verdict == CONSISTENT
        lines.append(words["term.verdict"].format(
            text=words["term.consistent" if consistent else "term.no_root_cause"].format(
                judged=_judged(net, words, consistent))))
    else:
        title = root.title.get(lang, root.title["en"])
        if root.index is not None:
            title = words["term.at_index"].format(title=title, index=root.index, op=root.op)
        elif root.op:
            title = words["term.at_op"].format(title=title, op=root.op)
        rating = words["term.rating"].format(severity=words.get(f"severity.{root.severity}", root.severity),
                                             confidence=f"{root.confidence:.2f}")
        lines.append(words["term.verdict"].format(text=f"{title} {rating}"))
        lines.append(words["term.evidence"].format(text=root.evidence.get(lang, root.evidence.get("en", ""))))
        lines.append(words["term.fix"].format(
            text=render_advice(root, lang, preferred_backends(diagnosis.backends, bool(net.get("training"))),
                               AdviceBook(diagnosis.advice_pages)).summary))
    hints = sharpen_hints(diagnosis)
    if hints:
        lines.append(words["term.sharpen"])
        lines.extend(words["term.sharpen_item"].format(option=h.option, text=h.text[lang]) for h in hints)
    active = [f for f in diagnosis.findings if f.explained_by is None]
    counts = {s: sum(f.severity == s for f in active) for s in SEVERITY_RANK}
    explained = len(diagnosis.findings) - len(active)
    tally = words["term.list"].join(plural(words, key, counts[severity]) for severity, key in
                                    (("error", "term.errors"), ("warning", "term.warnings"), ("info", "term.notes")))
    lines.append(words["term.findings"].format(counts=tally)
                 + (words["term.explained"].format(n=explained) if explained else ""))
    reports = [p for p in written if p.name.startswith("report.")]
    lines.append(words["term.reports"].format(files=", ".join(str(p) for p in reports)))
    remedy = diagnosis.remedy
    readme = next((p for p in written if p.name == "README.md" and p.parent.name == "remedy"), None)
    if remedy is not None and readme is not None:
        lines.append(words["term.remedy"].format(readme=readme, steps=plural(words, "term.steps", len(remedy.steps)),
                                                 backends=", ".join(remedy.backends)))
    return "\n".join(lines)


def _judged(net: dict, words: dict[str, str], consistent: bool) -> str:
    """How much of the comparison the verdict speaks for, in parts that add up to the compared rows:
    tensors judged, the rows that are no tensor of their own (a call's arguments, compared by value;
    the tensor an in-place update writes, judged through its output), and tensors that could not be
    judged."""
    compared, judged = int(net.get("compared_tensors", 0)), int(net.get("judged_tensors", 0))
    unjudged = int(net.get("unjudged_tensors", 0))
    text = words["term.judged"].format(judged=judged, compared=compared)
    other = compared - judged - unjudged
    if other > 0:
        text += words["term.judged_other"].format(n=other)
    if net.get("checksums_compared"):
        text += words["term.judged_checksums"].format(n=net["checksums_compared"],
                                                      differ=net.get("checksums_differ", 0))
    elif consistent:
        deviating = net.get("deviating_ops") or 0
        text += words["term.judged_allowed"].format(n=deviating) if deviating else words["term.judged_within"]
    if unjudged:
        text += words["term.unjudged"].format(n=unjudged)
    return text
