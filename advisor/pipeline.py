"""One analysis, end to end: ingest -> facts -> engine -> Diagnosis. The CLI and batch jobs call this."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .config import load_config
from .diagnosis import Diagnosis, PackInfo
from .diagnosis.key_ops import key_ops, op_types_of
from .diagnosis.layout import op_metrics
from .diagnosis.neighbourhood import root_neighbourhood
from .diagnosis.series import op_series
from .diagnosis.vendor import vendor_note, vendor_verdict
from .engine.judgement import judgement
from .engine.loading import load_packs, parse_param_overrides, select_rules
from .engine.opfilter import op_candidates
from .engine.ranking import rank_findings
from .engine.registry import Registry
from .engine.runner import run_rules
from .errors import InputFormatError, UsageError
from .facts.builder import DEFAULT_MAX_OP_FACTS, FactSet, build_facts
from .facts.providers import load_providers, provided_facts
from .facts.thresholds import Thresholds, load_thresholds
from .filekind import sniff
from .graph import Graph, read_fusion_result, read_graph
from .ingest import read_comparison, read_dump_pair
from .ingest.table import ComparisonTable
from .memory import analysis_phase, give_back_free_heap, reading_phase
from .remedy import Remedy, remedy_for, resolve_backends
from .remedy.model import KeptOp
from .report.pairing import pairing_warnings
from .report.source_rows import attach_source_lines, source_rows_of

if TYPE_CHECKING:
    from .engine.judgement import Judgement
    from .evidence.facts import GoldenInputs
    from .evidence.quant_config import QuantSettings



@dataclass
class AnalysisOptions:
    comparison: Path | None                   # a comparison CSV; None with a bench/target dump pair
    rule_packs: list[Path] = field(default_factory=list)
    builtin_rules: bool = True
    input_nodes: tuple[str, ...] = ()
    thresholds: tuple[str, ...] = ()          # "cosine=0.995", "float16.cosine=0.98"
    params: tuple[str, ...] = ()              # "problem-node.min_confidence=0.7"
    comparison_format: str | None = None
    max_op_facts: int = DEFAULT_MAX_OP_FACTS
    plugins: bool = True                      # installed rule packs and fact providers (entry points)
    disable: tuple[str, ...] = ()             # rule ids not to fire
    severity: dict[str, str] = field(default_factory=dict)   # rule id -> error | warning | info
    settings: Path | None = None              # the project settings file these options came from
    dumps: tuple[Path, Path] | None = None    # (golden dump folder, target dump folder): tensor evidence
    build_config: Path | None = None          # the target's build config (MagicMind / ATC knobs)
    simulation: Path | None = None            # comparison of the framework's fake-quant simulation vs float
    mapping: Path | None = None               # YAML column mapping: read the CSV with the generic reader
    bench: Path | None = None                 # msprobe dump.json of the reference run ...
    target: Path | None = None                # ... and of the target run, compared by statistics
    graph: Path | None = None                 # model graph: model.onnx, ge_proto_*_Build.txt, OM JSON
    fusion: Path | None = None                # fusion_result.json of the target build
    backends: tuple[str, ...] = ()            # remedy files for these; () = the build config's tool's, else all
    overflow: Path | None = None              # hardware overflow records (Opdebug files) and the run's raw dumps
    verify: bool = False                      # check the diagnosis on the CPU (advisor/verify): needs graph + dumps


def check_settings(settings: Path | None, rules: list, knobs: tuple[str, ...]) -> None:
    """The project settings' own rule ids, parameters and thresholds, checked alone first, so a mistake in
    advisor.toml is named as one (not as a command-line option the user never gave). ``knobs``: the
    packs' thresholds, applied first."""
    if settings is None:
        return
    config = load_config(settings)
    try:
        checked = select_rules(rules, config.disable, config.severity)
        parse_param_overrides(config.params, checked)
        load_thresholds((*knobs, *config.thresholds))
    except UsageError as exc:
        raise UsageError(exc.message, path=settings) from None


# What analyse() reports to its ``stage`` callback, in order (a progress bar counts them).
STAGES = ("reading rule packs", "reading inputs", "building facts", "gathering evidence", "firing rules",
          "ranking findings", "checking on the CPU")


def analyse(options: AnalysisOptions, stage: Callable[[str], None] | None = None) -> Diagnosis:
    """``stage`` is called with each name of STAGES as that step starts (for a progress bar)."""
    stage = stage or (lambda name: None)
    stage(STAGES[0])
    # Validate everything the user controls before the (possibly large) input is read.
    # Plugins first: their fact kinds must be known before rule packs that use them are validated.
    if options.simulation is not None and options.build_config is None:
        raise UsageError("--simulation needs --config: the build config says which layers are quantised")
    registry = Registry()
    providers, provider_warnings = load_providers(registry) if options.plugins else ([], [])
    pack_set = load_packs(options.rule_packs, builtin=options.builtin_rules, installed=options.plugins,
                          registry=registry)
    packs = pack_set.packs
    check_settings(options.settings, pack_set.rules, pack_set.thresholds())
    rules = select_rules(pack_set.rules, options.disable, options.severity)
    # Precedence: built-in defaults < packs' settings (in load order) < project settings < command line
    # (options.params / thresholds hold the project's, then the command line's: the last one wins).
    params = pack_params(pack_set.params(), pack_set.rules, rules, options.params)
    thresholds = load_thresholds((*pack_set.thresholds(), *options.thresholds))
    # Which rows deviate: the judgement rules, with their params (the built-in ones where no pack judges).
    judge = judgement(rules, params, pack_set.rules, fallback=not options.builtin_rules)
    _check_kind(options.graph, "--graph", "a model graph (model.onnx, ge_proto_N_Build.txt or an OM model as JSON)",
                GRAPH_KINDS)
    _check_kind(options.build_config, "--config", "a build config (JSON or YAML)", CONFIG_KINDS)
    build = _build_config(options.build_config)
    stage(STAGES[1])
    reading_phase()
    graph = read_graph(options.graph) if options.graph else None
    fusion = read_fusion_result(options.fusion) if options.fusion else None
    table = read_dump_pair(options.bench, options.target) if options.bench else read_comparison(
        options.comparison, options.comparison_format, options.mapping)
    analysis_phase()
    stage(STAGES[2])
    facts = build_facts(table, thresholds, judge=judge, input_nodes=options.input_nodes,
                        max_op_facts=options.max_op_facts,
                        graph=graph, fusion=fusion,
                        wanted=lambda columns, n: op_candidates(rules, params, columns, n))
    _check_something_compared(table, facts.network)
    if options.bench is not None and options.target is not None:
        facts.warnings.extend(pairing_warnings(table, options.bench, options.target, thresholds))
    facts.warnings.extend(_partial_graph(facts, thresholds, options.graph))
    stage(STAGES[3])
    dumps = _dump_folders(options, table)
    evidence = _evidence(options, table, facts, graph, (thresholds, judge), build, dumps)
    stage(STAGES[4])
    asserted = facts.all_facts() + evidence + provided_facts(providers, table, facts.network, registry)
    config = build[0] if build else None
    remedy_warnings: list[str] = []
    explanations: list[tuple[str, str, str]] = []
    groups: list = []

    def conclude(extra: list[dict]) -> tuple:
        """Fire the rules (on the checks' facts too, the second time), rank, write the fix out."""
        result = run_rules(rules, asserted + extra, params)
        give_back_free_heap()   # the heap the engine freed with its ruleset (~120 MiB at 33k findings)
        explanations[:] = result.explanations
        groups[:] = result.groups
        attach_source_lines(result.findings, table)
        root, ordered = rank_findings(result.findings, result.explanations, {r.id: r.priority for r in rules},
                                      result.groups)
        remedy, warnings = remedy_for(root, ordered, options.backends, facts.network, config)
        remedy_warnings[:] = warnings
        return root, ordered, _typed_remedy(remedy, facts)

    root, ordered, remedy = conclude([])
    stage(STAGES[5])
    stage(STAGES[6])
    verification = None
    if options.verify:
        from .verify import VerifyInputs, verify_run
        (root, ordered, remedy), verification = verify_run(VerifyInputs(
            options.graph, graph, dumps, table, facts, thresholds, build[1] if build else None,
            {"input_nodes": options.input_nodes, "graph": graph, "fusion": fusion, "judge": judge}),
            (root, ordered, remedy), conclude)
    per_op = op_metrics(table)
    shown_ops = key_ops(facts, root.index if root is not None else None, per_op)
    vendor = vendor_note(vendor_verdict(table, options.input_nodes), root.kind if root else None,
                         root.index if root else None)
    if vendor:
        facts.warnings.append(vendor)
    return Diagnosis(
        root_cause=root,
        findings=ordered,
        network={k: v for k, v in facts.network.items() if k not in ("id", "fact")},
        inputs={"comparison": str(options.comparison or f"{options.bench} vs {options.target}"),
                "format": table.format,
                **({"mapping": str(options.mapping)} if options.mapping else {}),
                **({"golden_dumps": str(options.dumps[0]), "target_dumps": str(options.dumps[1])}
                   if options.dumps else {}),
                **({"build_config": str(options.build_config)} if options.build_config else {}),
                **({"simulation": str(options.simulation)} if options.simulation else {}),
                **({"overflow": str(options.overflow)} if options.overflow else {}),
                **({"graph": str(options.graph)} if options.graph else {}),
                **({"fusion": str(options.fusion)} if options.fusion else {})},
        packs=[PackInfo(p.name, p.version, str(p.source), len(p.rules)) for p in packs],
        thresholds=thresholds.as_dict(),
        overrides={"thresholds": [*pack_set.thresholds(), *options.thresholds], "params": params,
                   "input_nodes": list(options.input_nodes), "disabled": list(options.disable),
                   "severity": dict(options.severity),
                   "settings": str(options.settings) if options.settings else None},
        series=op_series(facts, judge.thresholds(thresholds), per_op),
        version=__version__,
        warnings=provider_warnings + pack_set.warnings + facts.warnings
        + ([f"graph: {w}" for w in graph.warnings[:5]] if graph is not None else [])
        + [f"remedy: {w}" for w in remedy_warnings] + _deprecated(rules, ordered),
        neighbourhood=root_neighbourhood(facts, root),
        remedy=remedy,
        backends=resolve_backends(options.backends, (config or {}).get("tool")),
        key_ops=shown_ops,
        advice_pages=dict(registry.advice.inline),
        verification=verification,
        source_rows=source_rows_of(options.comparison, table,
                                   [f.index for f in ordered if f.index is not None] + [op.index for op in shown_ops]),
        rule_aliases={rule.id: rule.aliases for rule in rules if rule.aliases},
        explanations=list(explanations),
        explanation_groups=list(groups),
    )


def _deprecated(rules: list, findings: list) -> list[str]:
    """A warning per deprecated rule that gave a finding: it still fires, and its docs say what replaces it."""
    fired = {finding.rule for finding in findings}
    return [f"rule '{rule.id}' is deprecated (advisor rules show {rule.id}); it will be removed"
            for rule in rules if rule.status == "deprecated" and rule.id in fired]


def pack_params(from_packs: tuple[str, ...], loaded: list, rules: list, given: tuple[str, ...]) -> dict[str, dict]:
    """The packs' params (checked against every ``loaded`` rule when the packs loaded; those of a rule
    the run disabled dropped) under the user's (``--set`` and the project settings, checked here
    against the run's ``rules`` as the user's own)."""
    enabled = {rule.id for rule in rules}
    merged = {rule_id: values for rule_id, values in parse_param_overrides(from_packs, loaded).items()
              if rule_id in enabled}
    for rule_id, values in parse_param_overrides(given, rules).items():
        merged.setdefault(rule_id, {}).update(values)
    return merged


def _typed_remedy(remedy: Remedy | None, facts: FactSet) -> Remedy | None:
    """The remedy's kept ops with the op types the comparison knows (an FP16 overflow's keep list
    names golden ops only)."""
    if remedy is None:
        return None
    wanted = {name for step in remedy.steps for op in step.keep if op.op_type is None for name in (op.op, *op.golden)}
    types = op_types_of(facts.ops, wanted)
    if not types:
        return remedy

    def typed(op: KeptOp) -> KeptOp:
        if op.op_type is not None:
            return op
        kind = types.get(op.op) or next((types[g] for g in op.golden if g in types), None)
        return replace(op, op_type=kind)
    return replace(remedy, steps=tuple(replace(step, keep=tuple(typed(op) for op in step.keep))
                                       for step in remedy.steps))


def _partial_graph(facts: FactSet, thresholds: Thresholds, path: Path | None) -> list[str]:
    """A graph that shares names with less than ``graph.min_matched_share`` of the comparison's ops is
    probably another build's (or the golden graph of a renamed export): said, since where it does not
    match, inputs are taken from execution order. A graph that matches nothing is warned about when joined."""
    join, total = facts.join, len(facts.ops)
    if join is None or not total or join.matched >= thresholds.knob("graph", "min_matched_share") * total:
        return []
    name = path.name if path is not None else "the graph"
    return [f"{name} matches {join.matched} of the comparison's {total} ops ({join.matched / total:.0%}): is it the "
            f"graph of this run? Where it does not match, an op's inputs are taken from execution order"]


def _check_something_compared(table: ComparisonTable, network: dict) -> None:
    """A comparison that judged no tensor, no checksum and no argument gives no verdict: saying
    "consistent" about nothing would be a lie, so it is an input error (exit 2)."""
    if network.get("judged_tensors") or network.get("checksums_compared") or network.get("arguments_compared"):
        return
    frame = table.frame
    npu_only = int(frame["npu_only"].fillna(False).sum())
    golden_only = int(frame["golden_only"].fillna(False).sum())
    unjudged = int(network.get("unjudged_tensors", 0))
    raise InputFormatError(
        f"nothing was compared: none of its {len(frame)} rows pairs a target and a reference tensor with a usable "
        f"metric ({npu_only} target-only, {golden_only} reference-only, {unjudged} without any metric)",
        path=table.source)


# What --graph and --config take, by the kind advisor.filekind tells from a file's first bytes.
GRAPH_KINDS = ("onnx", "binary", "text", "json")     # ONNX protobuf, GE text dump, OM / ONNX JSON
CONFIG_KINDS = ("json", "text")                      # JSON, or YAML
# Where a file of a kind goes instead (said when it is given to the wrong option).
GOES_TO = {"comparison": "a comparison result is the INPUT of advisor run", "onnx": "a model goes to --graph",
           "npy": "dumps go to --dumps GOLDEN_DIR:TARGET_DIR", "raw-dump": "dumps go to --dumps GOLDEN_DIR:TARGET_DIR",
           "overflow-record": "overflow records go to --overflow DIR"}


def _check_kind(path: Path | None, option: str, what: str, accepted: tuple[str, ...]) -> None:
    """A file of another kind given to ``option`` is named as what it looks like ("a comparison CSV
    (msaccucmp)") instead of failing inside a parser ("not valid protobuf text")."""
    if path is None or not path.is_file():
        return
    from .ingest import detect_format

    try:
        kind = sniff(path, detect_format)
    except OSError:
        return                                       # the reader says why it cannot read the file
    if not kind.is_a(*accepted):
        where = GOES_TO.get(kind.name)
        raise InputFormatError(f"is {kind.description}, not {what} as {option} expects"
                               + (f"; {where}" if where else ""), path=path)


def _build_config(path: Path | None) -> tuple[dict, QuantSettings] | None:
    """The build config's ``config`` fact and its quantisation settings, read (and checked) before
    the comparison is."""
    if path is None:
        return None
    # The evidence stage is imported when an input asks for it: a plain comparison does not load it.
    from .evidence.config import config_fact
    from .evidence.quant_config import quant_settings
    from .ingest.build_config import config_warnings
    from .ingest.config_file import read_build_config

    raw = read_build_config(path)
    settings = quant_settings(raw, path)
    unknown = config_warnings(raw)
    if unknown:   # said with the settings' own warnings ("read but not understood")
        settings = replace(settings, warnings=(*settings.warnings, *unknown))
    return config_fact(raw, source=path, settings=settings), settings


def _dump_folders(options: AnalysisOptions, table: ComparisonTable) -> GoldenInputs | None:
    """The dump folders (--dumps), scanned on first use and shared by every consumer of the run."""
    if not options.dumps:
        return None
    from .evidence.facts import GoldenInputs
    return GoldenInputs(*options.dumps, table)


def _evidence(options: AnalysisOptions, table: ComparisonTable, facts: FactSet, graph: Graph | None,
              judging: tuple[Thresholds, Judgement], build: tuple[dict, QuantSettings] | None,
              dumps: GoldenInputs | None) -> list[dict]:
    """Facts from the build config, the tensor probes of the inputs (with dumps), and the evidence
    on each quantised layer (an int8 build config; weights from an ONNX graph, inputs from dumps).
    ``judging``: the run's thresholds and judgement (a simulation's comparison is judged as the run's)."""
    thresholds, judge = judging
    config, settings = build if build else (None, None)
    out = [config] if config else []
    out += _overflow_records(options, facts)
    if options.dumps:
        from .evidence.facts import evidence_facts

        out += evidence_facts(*options.dumps, table, facts.network, config, input_nodes=options.input_nodes,
                              dumps=dumps, thresholds=thresholds)
    elif config is not None or "golden_max" in table.present_metrics:
        # The network inputs' statistics in the comparison: against the build config, and (with the
        # extrema msprobe prints) the affine map between the two sides they imply.
        from .evidence.facts import statistics_facts

        out += statistics_facts(table, facts.network, config, input_nodes=options.input_nodes, thresholds=thresholds)
    if settings is not None:
        from .evidence.layers import LayerInputs, layer_facts

        simulated = build_facts(read_comparison(options.simulation), thresholds,
                                judge=judge).ops if options.simulation else None
        sources = LayerInputs(graph=graph, model=options.graph if graph is not None and graph.format == "onnx"
                              else None, golden_input=dumps, simulation=simulated)
        facts.warnings.extend(f"{options.build_config}: {w}" for w in settings.warnings)
        out += layer_facts(settings, facts.ops, thresholds, sources)
        if settings.ranges and options.dumps:      # calibration provenance: the ranges against real inputs
            from .evidence.calibration import calibration_facts

            out += calibration_facts(settings.ranges, settings.calibration_table, options.dumps[0], graph, thresholds,
                                     facts.ops)
    return out


def _overflow_records(options: AnalysisOptions, facts: FactSet) -> list[dict]:
    """``overflow_record`` facts from --overflow, and from the target dumps when they hold records."""
    sources = [options.overflow] if options.overflow else []
    if options.dumps and options.dumps[1] not in sources:
        from .tensors.staging import find_sources

        if options.dumps[1].is_dir() and find_sources(options.dumps[1]).records:
            sources.append(options.dumps[1])
    if not sources:
        return []
    from .evidence.overflow_records import overflow_facts

    records, warnings = overflow_facts(sources, facts.ops, facts.network)
    facts.warnings.extend(warnings)
    return records
