"""A batch and its jobs, resolved: every option a job's analysis uses, layered the way ``advisor run`` does.

Options come in layers, weakest first: the project settings (``advisor.toml``, see advisor/config.py),
the batch defaults (the manifest's ``defaults:`` or the command line of ``advisor batch --scan``),
then the job itself. Lists add up (rules, thresholds, params, disable), ``severity`` merges rule by
rule, single values (builtin_rules, input_nodes, comparison_format, max_op_facts, lang, formats, backends)
take the strongest layer that sets them. A resolved ``Job`` is frozen and picklable: it travels to
a worker process as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ProjectConfig
from ..facts.builder import DEFAULT_MAX_OP_FACTS
from ..pipeline import AnalysisOptions
from ..report import DEFAULT_FORMATS

DEFAULT_LANG = "en"
LIST_OPTIONS = ("rules", "thresholds", "params", "disable")
SINGLE_OPTIONS = ("builtin_rules", "input_nodes", "comparison_format", "max_op_facts", "lang", "formats",
                  "backends", "verify")
OPTION_KEYS: tuple[str, ...] = (*LIST_OPTIONS, "severity", *SINGLE_OPTIONS)

# One layer of options: a subset of OPTION_KEYS, already type-checked. Values: rules -> list[Path],
# thresholds/params/disable -> list[str] ("KEY=VALUE" like the command line), severity -> dict,
# builtin_rules/verify -> bool, input_nodes/formats -> tuple[str, ...], max_op_facts -> int, others -> str.
OptionLayer = Mapping[str, Any]


@dataclass(frozen=True)
class Job:
    """One comparison to analyse and where its reports go. ``line`` points into the manifest."""

    name: str
    input: Path
    outdir: Path
    graph: Path | None = None
    dumps: tuple[Path, Path] | None = None        # (golden, target) dump folders
    config: Path | None = None                    # the target's build config
    rule_packs: tuple[Path, ...] = ()
    builtin_rules: bool = True
    input_nodes: tuple[str, ...] = ()
    thresholds: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()
    comparison_format: str | None = None
    max_op_facts: int = DEFAULT_MAX_OP_FACTS
    lang: str = DEFAULT_LANG
    formats: tuple[str, ...] = DEFAULT_FORMATS
    backends: tuple[str, ...] = ()                # remedy files for these; () = inferred like advisor run
    verify: bool = False                          # check the diagnosis on the CPU (advisor run --verify)
    settings: Path | None = None
    line: int | None = None

    def analysis_options(self) -> AnalysisOptions:
        """What ``analyse`` gets: what ``advisor run`` with the same options and files would."""
        return AnalysisOptions(
            comparison=self.input, rule_packs=list(self.rule_packs), builtin_rules=self.builtin_rules,
            input_nodes=self.input_nodes, thresholds=self.thresholds, params=self.params,
            comparison_format=self.comparison_format, max_op_facts=self.max_op_facts,
            disable=self.disable, severity=dict(self.severity), settings=self.settings,
            graph=self.graph, dumps=self.dumps, build_config=self.config, backends=self.backends,
            verify=self.verify)

    def input_paths(self) -> dict[str, Path]:
        """role -> path of every file or folder the job reads (all of them are hashed)."""
        paths = {"comparison": self.input}
        if self.graph is not None:
            paths["graph"] = self.graph
        if self.dumps is not None:
            paths["dumps_golden"], paths["dumps_target"] = self.dumps
        if self.config is not None:
            paths["config"] = self.config
        return paths

    def options_spec(self) -> dict[str, Any]:
        """Every option that shapes the job's result or its reports, as canonical JSON values.
        Part of the job's content hash (input bytes and rule packs are hashed apart)."""
        return {
            "builtin_rules": self.builtin_rules, "input_nodes": list(self.input_nodes),
            "thresholds": list(self.thresholds), "params": list(self.params), "disable": list(self.disable),
            "severity": dict(self.severity), "comparison_format": self.comparison_format,
            "max_op_facts": self.max_op_facts, "lang": self.lang, "formats": list(self.formats),
            "backends": list(self.backends), "verify": self.verify,
            "outdir": str(self.outdir), "rule_packs": [str(p) for p in self.rule_packs],
            "settings": str(self.settings) if self.settings else None,
        }

    def spec(self) -> dict[str, Any]:
        """The whole job definition (paths included): what makes two batches the same batch."""
        return {"name": self.name, **self.options_spec(),
                "inputs": {role: str(path) for role, path in self.input_paths().items()}}


@dataclass
class Batch:
    """Jobs to run together. ``source`` names the batch in the history (manifest or scanned folder);
    ``digest`` covers every job's definition, so a killed run resumes only an identical batch."""

    source: str
    digest: str
    title: str
    output: Path
    history: Path
    jobs: list[Job]
    workers: int | None = None
    notes: list[str] = field(default_factory=list)    # said once when the batch starts


def settings_layer(config: ProjectConfig) -> dict[str, Any]:
    """The project settings as the weakest option layer."""
    layer: dict[str, Any] = {"rules": list(config.rules), "thresholds": list(config.thresholds),
                             "params": list(config.params), "disable": list(config.disable),
                             "severity": dict(config.severity)}
    if not config.builtin_rules:
        layer["builtin_rules"] = False
    if config.input_nodes:
        layer["input_nodes"] = tuple(config.input_nodes)
    if config.backends:
        layer["backends"] = tuple(config.backends)
    return layer


def merge_layers(layers: Iterable[OptionLayer]) -> dict[str, Any]:
    """Lists add up, severity merges, single values: the last layer that sets one wins."""
    merged: dict[str, Any] = {key: [] for key in LIST_OPTIONS}
    merged["severity"] = {}
    for layer in layers:
        for key in LIST_OPTIONS:
            merged[key].extend(layer.get(key, ()))
        merged["severity"].update(layer.get("severity", {}))
        for key in SINGLE_OPTIONS:
            if key in layer:
                merged[key] = layer[key]
    return merged


def make_job(name: str, input: Path, outdir: Path, options: Mapping[str, Any], *, graph: Path | None = None,
             dumps: tuple[Path, Path] | None = None, config: Path | None = None,
             settings: Path | None = None, line: int | None = None) -> Job:
    """A Job from merged options (see ``merge_layers``)."""
    return Job(
        name=name, input=input, outdir=outdir, graph=graph, dumps=dumps, config=config,
        rule_packs=tuple(options["rules"]), builtin_rules=options.get("builtin_rules", True),
        input_nodes=tuple(options.get("input_nodes", ())), thresholds=tuple(options["thresholds"]),
        params=tuple(options["params"]), disable=tuple(options["disable"]),
        severity=tuple(sorted(options["severity"].items())),
        comparison_format=options.get("comparison_format"),
        max_op_facts=options.get("max_op_facts", DEFAULT_MAX_OP_FACTS),
        lang=options.get("lang", DEFAULT_LANG), formats=tuple(options.get("formats", DEFAULT_FORMATS)),
        backends=tuple(options.get("backends", ())), verify=bool(options.get("verify", False)), settings=settings,
        line=line)
