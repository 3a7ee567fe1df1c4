"""What a loaded rule pack is: its rules (patterns, emit or explain, params, docs, cases), its inline
advice pages and its settings, and the problems validation reports (file, line, column)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Undefined

from ..errors import RulePackError
from ..facts.schema import FACT_FIELDS
from ..inputfiles import listed
from ..templating import BoundedEnvironment
from ..yamlfile import LineDict
from .conditions import MAX_ALTERNATIVES, Guard, PatternCompiler

SEVERITIES = ("error", "warning", "info")
LANGUAGES = ("en", "zh")
DOC_SECTIONS = ("what", "why", "fix")
RULE_KEYS = {"id", "aliases", "status", "title", "severity", "root_cause", "priority", "tags", "params", "docs",
             "when", "emit", "explain", "judges", "cases", "input_cases", "advice"}
EMIT_KEYS = {"kind", "subject", "op", "confidence", "evidence", "values"}
PACK_KEYS = {"pack", "version", "description", "rules", "authors", "min_advisor_version", "params", "settings"}
ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
ALIAS = re.compile(r"^[a-z][a-z0-9_]*$")
KIND = re.compile(r"^[a-z][a-z0-9_]*$")
FIELD_REF = re.compile(r"^\$([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")



def _num(value: Any, digits: int = 6) -> str:
    """Jinja filter for evidence: numbers with ``digits`` significant digits, 'n/a' when missing."""
    if value is None or isinstance(value, Undefined):
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and (math.isinf(value) or abs(value) >= 1e300):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


# Evidence and confidence templates: the whole environment here, where packs are checked (validation
# renders them once with sample facts) and run (engine/runner.py).
template_env = BoundedEnvironment(autoescape=False)
template_env.filters["num"] = _num


@dataclass
class Emit:
    kind: str
    subject: str | None                      # alias of the pattern the finding is about
    op: str | None                           # "$alias.field" naming the op; default: the subject's op
    confidence: float | str                  # number, "$alias.field" or a template rendering a number
    evidence: dict[str, str]                 # lang -> Jinja template
    values: list[str]                        # "alias.field" or "field" (of the subject)


@dataclass
class Rule:
    id: str
    title: dict[str, str]
    severity: str
    root_cause: bool
    priority: int
    tags: list[str]
    params: dict[str, Any]
    docs: dict[str, dict[str, str]]
    patterns: list[tuple[str, dict[str, Any]]]      # (alias, raw YAML pattern)
    emit: Emit | None
    explain: dict[str, str] | None                  # {"cause": alias, "symptom": alias}
    cases: list[dict[str, Any]]
    source: Path
    line: int
    pack: str = ""
    shared: tuple[str, ...] = ()        # names in ``params`` that are the pack's (pack.yaml ``params``)
    aliases: tuple[str, ...] = ()       # former ids: the user's settings that name them still reach this rule
    input_cases: list[dict[str, Any]] = field(default_factory=list)   # comparison files beside the rule
    status: str = "stable"              # stable | preview | deprecated (rules/schema/rule.schema.json)
    # A judgement rule: the row flag it decides for every comparison row (engine/judgement.py), not a finding.
    judges: str | None = None
    # The fact schema the rule was validated against (the run's Registry.fields): compiled with it.
    fields: Mapping[str, Mapping[str, tuple[str, str]]] = field(default_factory=lambda: FACT_FIELDS,
                                                                repr=False, compare=False)

    def compile_when(self, params: dict[str, Any] | None = None) -> list[CompiledAlternative]:
        """One durable_rules ``all`` list (with its guards) per alternative of the rule's ``any``/``in``
        conditions, with ``params`` overriding the defaults."""
        compiler = PatternCompiler({**self.params, **(params or {})}, self.fields)
        alternatives = [CompiledAlternative([], [])]
        for alias, node in self.patterns:
            options = compiler.pattern(node, alias)
            alternatives = [CompiledAlternative(done.all + [{alias: condition}], done.guards + guards)
                            for done in alternatives for condition, guards in options]
        if compiler.problems:
            first = compiler.problems[0]
            raise RulePackError(first.message, path=self.source, line=line_of(first.node, first.key))
        if len(alternatives) > MAX_ALTERNATIVES:
            raise RulePackError(f"rule '{self.id}' expands to {len(alternatives)} alternatives (at most "
                                f"{MAX_ALTERNATIVES}): split it or use fewer 'any'/'in' choices",
                                path=self.source, line=self.line)
        return alternatives


@dataclass
class CompiledAlternative:
    all: list[dict[str, Any]]       # durable_rules patterns, one per alias
    guards: list[Guard]             # ordering joins checked on the matched facts


@dataclass(frozen=True)
class Setting:
    """One entry of a pack's ``settings``: ``RULE.PARAM`` (params) or ``[DTYPE.]METRIC`` /
    ``SECTION.KNOB`` (thresholds), as the command line's --set / --threshold would give it."""

    key: str
    value: Any
    path: Path
    line: int | None

    def text(self) -> str:
        value = str(self.value).lower() if isinstance(self.value, bool) else self.value
        return f"{self.key}={value}"


@dataclass
class RulePack:
    name: str
    version: str
    description: str
    source: Path
    rules: list[Rule] = field(default_factory=list)
    advice: dict[str, tuple[dict, str]] = field(default_factory=dict)   # inline pages: kind -> (page, where)
    shared: dict[str, Any] = field(default_factory=dict)      # pack-level ``params``, shared by its rules
    params: list[Setting] = field(default_factory=list)       # settings.params: tune rules of any pack
    thresholds: list[Setting] = field(default_factory=list)   # settings.thresholds: thresholds and knobs
    command: str = "run"                                      # the command whose runs load it (run, post)


@dataclass
class Problem:
    path: Path
    line: int | None
    column: int | None
    message: str

    def __str__(self) -> str:
        where = str(self.path) + (f":{self.line}" if self.line else "")
        if self.line and self.column:
            where += f":{self.column}"
        return f"{where}: {self.message}"


class PackProblems(RulePackError):
    """Every problem found in a pack; ``str()`` is the first, ``problems`` has them all."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem(s); run 'advisor rules validate')" \
            if len(problems) > 1 else ""
        super().__init__(first.message + more, path=first.path, line=first.line, column=first.column)


CASES_FOLDER = "cases"       # beside a rule file: its input cases' comparison, dumps, graph, build config


def pack_files(path: Path) -> list[Path]:
    """Every file a pack is read from: pack.yaml first, then its rule files in name order. A ``cases``
    folder holds the input cases' files (a build config may be YAML too), never rules."""
    if not path.is_dir():
        return [path]
    meta_path = path / "pack.yaml"
    return [meta_path, *(p for p in listed(path.rglob("*.yaml"), path, "pack", RulePackError)
                         if p != meta_path and CASES_FOLDER not in p.relative_to(path).parts[:-1])]


def line_of(node: Any, key: str | None = None) -> int | None:
    return node.where(key)[0] if isinstance(node, LineDict) else None


# An input case's keys that name a file or folder of the run (the ``advisor run`` options of that name).
INPUT_PATHS = ("input", "graph", "fusion", "config", "overflow", "simulation")


def case_paths(case: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, path as written) of every file or folder an input case names."""
    named = [(key, case[key]) for key in INPUT_PATHS if isinstance(case.get(key), str)]
    dumps = case.get("dumps")
    if isinstance(dumps, dict):
        named += [(f"dumps.{side}", dumps[side]) for side in ("golden", "target") if isinstance(dumps.get(side), str)]
    return named
