"""Rule packs: YAML an expert writes without reading our Python.

A pack is a folder with ``pack.yaml`` (name, version, description) and one ``<rule-id>.yaml`` per rule,
possibly in sub-folders; or a single YAML file with ``pack:``, ``version:`` and a ``rules:`` list.
A rule file holds the rule, its documentation (en + zh) and its own test cases. See rules/core/.

Loading validates everything first and collects every problem with file, line and column; a pack
with any problem is rejected whole (never half-loaded).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..advice import known_kinds, register_page, validate_page
from ..errors import KnowledgeError, RulePackError
from ..facts.schema import FACT_FIELDS
from ..templating import BoundedEnvironment, template_problem
from ..yamlfile import LineDict, load_yaml
from .conditions import MAX_ALTERNATIVES, Guard, PatternCompiler, suggest

SEVERITIES = ("error", "warning", "info")
LANGUAGES = ("en", "zh")
DOC_SECTIONS = ("what", "why", "fix")
RULE_KEYS = {"id", "title", "severity", "root_cause", "priority", "tags", "params", "docs", "when",
             "emit", "explain", "cases", "advice"}
EMIT_KEYS = {"kind", "subject", "op", "confidence", "evidence", "values"}
CASE_KEYS = {"name", "expect", "facts", "params"}
PACK_KEYS = {"pack", "version", "description", "rules", "authors", "min_advisor_version"}
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_ALIAS = re.compile(r"^[a-z][a-z0-9_]*$")
_KIND = re.compile(r"^[a-z][a-z0-9_]*$")
_FIELD_REF = re.compile(r"^\$([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")

template_env = BoundedEnvironment(autoescape=False)


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

    def compile_when(self, params: dict[str, Any] | None = None) -> list[CompiledAlternative]:
        """One durable_rules ``all`` list (with its guards) per alternative of the rule's ``any``/``in``
        conditions, with ``params`` overriding the defaults."""
        compiler = PatternCompiler({**self.params, **(params or {})})
        alternatives = [CompiledAlternative([], [])]
        for alias, node in self.patterns:
            options = compiler.pattern(node, alias)
            alternatives = [CompiledAlternative(done.all + [{alias: condition}], done.guards + guards)
                            for done in alternatives for condition, guards in options]
        if compiler.problems:
            first = compiler.problems[0]
            raise RulePackError(first.message, path=self.source, line=_line(first.node, first.key))
        if len(alternatives) > MAX_ALTERNATIVES:
            raise RulePackError(f"rule '{self.id}' expands to {len(alternatives)} alternatives (at most "
                                f"{MAX_ALTERNATIVES}): split it or use fewer 'any'/'in' choices",
                                path=self.source, line=self.line)
        return alternatives


@dataclass
class CompiledAlternative:
    all: list[dict[str, Any]]       # durable_rules patterns, one per alias
    guards: list[Guard]             # ordering joins checked on the matched facts


@dataclass
class RulePack:
    name: str
    version: str
    description: str
    source: Path
    rules: list[Rule] = field(default_factory=list)
    advice: dict[str, tuple[dict, str]] = field(default_factory=dict)   # inline pages: kind -> (page, where)


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


def _line(node: Any, key: str | None = None) -> int | None:
    return node.where(key)[0] if isinstance(node, LineDict) else None


class _Checker:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def add(self, message: str, node: Any = None, key: str | None = None) -> None:
        line, column = node.where(key) if isinstance(node, LineDict) else (None, None)
        self.problems.append(Problem(self.path, line, column, message))

    def unknown_keys(self, node: LineDict, allowed: set[str], what: str) -> None:
        for key in node:
            if key not in allowed:
                self.add(f"unknown {what} field '{key}'{suggest(str(key), sorted(allowed))}", node, key)


def load_pack(path: Path) -> RulePack:
    """Load and validate a pack folder or single-file pack; raise PackProblems listing every problem."""
    pack, problems = check_pack(path)
    if problems:
        raise PackProblems(problems)
    assert pack is not None
    for kind, (page, where) in pack.advice.items():
        try:
            register_page(kind, page, where)
        except KnowledgeError as exc:
            raise RulePackError(exc.message, path=where) from None
    return pack


def check_pack(path: Path) -> tuple[RulePack | None, list[Problem]]:
    path = Path(path)
    if not path.exists():
        raise RulePackError("rule pack not found", path=path)
    problems: list[Problem] = []
    if path.is_dir():
        meta_path = path / "pack.yaml"
        if not meta_path.is_file():
            raise RulePackError("a pack folder needs a pack.yaml (pack: NAME, version: X.Y.Z)", path=path)
        meta = _load(meta_path, problems)
        rule_nodes = []
        for rule_path in sorted(p for p in path.rglob("*.yaml") if p != meta_path):
            node = _load(rule_path, problems)
            if node is not None:
                rule_nodes.append((rule_path, node))
    else:
        meta = _load(path, problems)
        rules = meta.get("rules") if isinstance(meta, dict) else None
        rule_nodes = [(path, node) for node in rules] if isinstance(rules, list) else []
        if isinstance(meta, dict) and not isinstance(rules, list):
            problems.append(Problem(path, _line(meta), None, "a single-file pack needs a 'rules:' list"))
    if meta is None:
        return None, problems
    checker = _Checker(path / "pack.yaml" if path.is_dir() else path)
    pack = _pack_meta(meta, path, checker)
    pack.advice = _inline_advice(rule_nodes, checker)
    seen: dict[str, Rule] = {}
    for rule_path, node in rule_nodes:
        rule_checker = _Checker(rule_path)
        rule = _rule(node, rule_path, rule_checker, set(pack.advice))
        if rule is not None:
            rule.pack = pack.name
            if rule.id in seen:
                rule_checker.add(f"duplicate rule id '{rule.id}' (also in {seen[rule.id].source}:"
                                 f"{seen[rule.id].line})", node, "id")
            else:
                seen[rule.id] = rule
                pack.rules.append(rule)
        checker.problems.extend(rule_checker.problems)
    problems.extend(checker.problems)
    if not pack.rules and not problems:
        problems.append(Problem(path, None, None, "the pack has no rules"))
    return pack, problems


def _load(path: Path, problems: list[Problem]) -> Any:
    try:
        return load_yaml(path)
    except RulePackError as exc:
        problems.append(Problem(Path(exc.path or path), exc.line, exc.column, exc.message))
        return None


def _pack_meta(meta: Any, path: Path, checker: _Checker) -> RulePack:
    if not isinstance(meta, LineDict):
        checker.add("pack metadata must be a mapping with 'pack' and 'version'")
        return RulePack(name=path.stem, version="0", description="", source=path)
    checker.unknown_keys(meta, PACK_KEYS, "pack")
    name, version = meta.get("pack"), meta.get("version")
    if not isinstance(name, str) or not _ID.match(name):
        checker.add("'pack' must be a lower-case name like 'core' or 'my-team'", meta, "pack")
    if not isinstance(version, str) or not re.match(r"^\d+(\.\d+){0,2}([.-]?\w+)?$", version):
        checker.add("'version' must be a version string like '1.0.0' (quote it in YAML)", meta, "version")
    needed = meta.get("min_advisor_version")
    if needed is not None:
        if not isinstance(needed, str) or not re.match(r"^\d+(\.\d+)*$", needed):
            checker.add("'min_advisor_version' is a version like '0.2' (quote it in YAML)", meta,
                        "min_advisor_version")
        elif _version_tuple(needed) > _version_tuple(__version__):
            checker.add(f"the pack needs advisor >= {needed}; this is advisor {__version__} "
                        f"(pip install -U advisor)", meta, "min_advisor_version")
    return RulePack(name=str(name), version=str(version), description=str(meta.get("description", "")),
                    source=path)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _texts(node: Any, checker: _Checker, parent: Any, key: str) -> dict[str, str]:
    if isinstance(node, dict) and set(node) - set(LANGUAGES):
        extra = ", ".join(sorted(map(str, set(node) - set(LANGUAGES))))
        checker.add(f"'{key}' has texts for {', '.join(LANGUAGES)} only, not '{extra}' (an unquoted comma in "
                    f"{{en: ..., zh: ...}} splits a text: quote it)", parent, key)
        return {}
    if not isinstance(node, dict) or any(not isinstance(node.get(lang), str) or not node.get(lang).strip()
                                          for lang in LANGUAGES):
        checker.add(f"'{key}' needs non-empty texts for {' and '.join(LANGUAGES)}", parent, key)
        return {}
    return {lang: node[lang] for lang in LANGUAGES}


def _inline_advice(rule_nodes: list[tuple[Path, Any]], checker: _Checker) -> dict[str, tuple[dict, str]]:
    """Advice pages rules carry inline (``advice:``, same sections as knowledge/advice pages), by the
    kind the rule emits; the page's title defaults to the rule's."""
    pages: dict[str, tuple[dict, str]] = {}
    for rule_path, node in rule_nodes:
        if not isinstance(node, LineDict) or "advice" not in node:
            continue
        emit = node.get("emit")
        kind = emit.get("kind") if isinstance(emit, dict) else None
        where = f"{rule_path}:{node.where('advice')[0]}"
        if not isinstance(kind, str):
            checker.problems.append(Problem(rule_path, node.where("advice")[0], None,
                                            "'advice' belongs to a rule that emits a finding kind"))
            continue
        page = node["advice"]
        if isinstance(page, dict) and "title" not in page and isinstance(node.get("title"), dict):
            page = {"title": node["title"], **page}
        try:
            validate_page(page, Path(where))
        except KnowledgeError as exc:
            checker.problems.append(Problem(rule_path, node.where("advice")[0], None,
                                            f"advice: {exc.message}" + (f" ({exc.field})" if exc.field else "")))
            continue
        if kind in pages and pages[kind][0] != page:
            checker.problems.append(Problem(rule_path, node.where("advice")[0], None,
                                            f"advice for kind '{kind}' is also given in {pages[kind][1]}"))
            continue
        pages[kind] = (dict(page), where)
    return pages


def _rule(node: Any, path: Path, checker: _Checker, inline_kinds: set[str]) -> Rule | None:
    if not isinstance(node, LineDict):
        checker.add("a rule must be a mapping")
        return None
    checker.unknown_keys(node, RULE_KEYS, "rule")
    for required in ("id", "title", "severity", "docs", "when", "cases"):
        if required not in node:
            checker.add(f"rule is missing '{required}'", node)
    rule_id = node.get("id")
    if rule_id is not None and (not isinstance(rule_id, str) or not _ID.match(rule_id)):
        checker.add("rule id must be kebab-case, e.g. 'fp16-overflow'", node, "id")
    severity = node.get("severity")
    if severity is not None and severity not in SEVERITIES:
        checker.add(f"severity must be one of {', '.join(SEVERITIES)}{suggest(str(severity), list(SEVERITIES))}",
                    node, "severity")
    title = _texts(node.get("title"), checker, node, "title") if "title" in node else {}
    docs: dict[str, dict[str, str]] = {}
    if isinstance(node.get("docs"), dict):
        for lang in LANGUAGES:
            section = node["docs"].get(lang)
            if not isinstance(section, dict) or any(not isinstance(section.get(s), str) for s in DOC_SECTIONS):
                checker.add(f"docs.{lang} needs '{', '.join(DOC_SECTIONS)}' texts", node["docs"], lang
                            if lang in node["docs"] else None)
            else:
                docs[lang] = {s: section[s] for s in DOC_SECTIONS}
    elif "docs" in node:
        checker.add("'docs' maps en/zh to what/why/fix", node, "docs")
    params = node.get("params") or {}
    if not isinstance(params, dict) or not all(isinstance(v, (int, float, str, bool)) for v in params.values()):
        checker.add("'params' maps names to default values (numbers, strings, booleans)", node, "params")
        params = {}
    patterns = _patterns(node.get("when"), node, checker)
    compiler = PatternCompiler(dict(params))
    for alias, pattern in patterns:
        compiler.pattern(pattern, alias)
    for problem in compiler.problems:
        checker.add(problem.message, problem.node, problem.key)
    aliases = [alias for alias, _ in patterns]
    emit = _emit(node.get("emit"), node, aliases, compiler.aliases, checker, inline_kinds)
    explain = _explain(node.get("explain"), node, compiler.aliases, checker)
    if (emit is None) == (explain is None) and ("emit" in node) == ("explain" in node):
        checker.add("a rule has exactly one of 'emit' (a finding) or 'explain' (cause -> symptom)", node)
    cases = node.get("cases")
    if not isinstance(cases, list) or not cases:
        if "cases" in node:
            checker.add("'cases' needs at least one case that fires and one that stays silent", node, "cases")
        cases = []
    else:
        _check_cases(cases, node, checker)
    tags = node.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        checker.add("'tags' is a list of words, e.g. [fp16, overflow]", node, "tags")
        tags = []
    priority = node.get("priority", 100)
    if not isinstance(priority, int) or isinstance(priority, bool):
        checker.add("'priority' must be an integer (lower fires first)", node, "priority")
        priority = 100
    if checker.problems:
        return None
    return Rule(id=rule_id, title=title, severity=severity, root_cause=bool(node.get("root_cause", False)),
                priority=priority, tags=tags, params=dict(params), docs=docs,
                patterns=patterns, emit=emit, explain=explain, cases=cases, source=path, line=_line(node) or 0)


def _patterns(when: Any, node: LineDict, checker: _Checker) -> list[tuple[str, Any]]:
    if isinstance(when, dict):
        alias = when.get("as", "m")
        return [(alias, when)]
    if isinstance(when, list) and when:
        patterns = []
        for i, pattern in enumerate(when):
            alias = pattern.get("as") if isinstance(pattern, dict) else None
            if not isinstance(alias, str) or not _ALIAS.match(alias):
                checker.add(f"pattern {i + 1} of a multi-fact 'when' needs 'as: <name>' (lower-case)",
                            pattern if isinstance(pattern, LineDict) else node, "as" if alias else None)
                alias = f"p{i}"
            patterns.append((alias, pattern))
        if len({a for a, _ in patterns}) != len(patterns):
            checker.add("pattern names ('as') must be unique within a rule", node, "when")
        return patterns
    if when is not None:
        checker.add("'when' is a pattern (mapping) or a list of named patterns", node, "when")
    return []


def _emit(emit: Any, node: LineDict, aliases: list[str], kinds: dict[str, str],
          checker: _Checker, inline_kinds: set[str]) -> Emit | None:
    if emit is None:
        return None
    if not isinstance(emit, LineDict):
        checker.add("'emit' must be a mapping (kind, subject, confidence, evidence, values)", node, "emit")
        return None
    checker.unknown_keys(emit, EMIT_KEYS, "emit")
    kind = emit.get("kind")
    if not isinstance(kind, str) or not _KIND.match(kind):
        checker.add("'emit.kind' is the finding kind in snake_case, e.g. fp16_overflow", emit, "kind")
    if isinstance(kind, str) and kind not in known_kinds() and kind not in inline_kinds:
        choices = known_kinds() + sorted(inline_kinds)
        checker.add(f"no advice for kind '{kind}': add an 'advice:' page to a rule of this pack, or use a "
                    f"kind from knowledge/advice{suggest(kind, choices)}", emit, "kind")
    subject = emit.get("subject", aliases[0] if len(aliases) == 1 else None)
    if subject is not None and subject not in aliases:
        checker.add(f"'emit.subject' must name a pattern ({', '.join(aliases)}){suggest(str(subject), aliases)}",
                    emit, "subject")
    confidence = emit.get("confidence", 1.0)
    if isinstance(confidence, str) and "{{" in confidence:   # a template: its number (empty: no finding)
        problem = template_problem(template_env, confidence)
        if problem:
            checker.add(f"'emit.confidence': {problem}", emit, "confidence")
    elif isinstance(confidence, str):
        ref = _FIELD_REF.match(confidence)
        if not ref or ref.group(1) not in kinds:
            checker.add("'emit.confidence' is a number in 0..1, '$pattern.field' or a template '{{ ... }}'",
                        emit, "confidence")
    elif not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        checker.add("'emit.confidence' must be between 0 and 1", emit, "confidence")
    op_ref = emit.get("op")
    if op_ref is not None:
        ref = _FIELD_REF.match(str(op_ref))
        if not ref or ref.group(1) not in kinds or ref.group(2) not in FACT_FIELDS[kinds[ref.group(1)]]:
            checker.add("'emit.op' is '$pattern.field' naming the op, e.g. $m.output_op", emit, "op")
    evidence = _texts(emit.get("evidence"), checker, emit, "evidence")
    for lang, text in evidence.items():
        problem = template_problem(template_env, text)
        if problem:
            checker.add(f"evidence.{lang}: {problem}", emit, "evidence")
    values = emit.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        checker.add("'emit.values' is a list of fields ('field' of the subject or 'pattern.field')", emit, "values")
        values = []
    for value in values:
        alias, _, name = value.rpartition(".")
        alias = alias or subject
        if alias not in kinds or name not in FACT_FIELDS[kinds[alias]]:
            fields = list(FACT_FIELDS[kinds[alias]]) if alias in kinds else []
            checker.add(f"'emit.values': unknown field '{value}'{suggest(name, fields)}", emit, "values")
    return Emit(kind=str(kind), subject=subject, op=op_ref, confidence=confidence, evidence=evidence,
                values=values)


def _explain(explain: Any, node: LineDict, kinds: dict[str, str], checker: _Checker) -> dict[str, str] | None:
    if explain is None:
        return None
    if (not isinstance(explain, dict) or set(explain) != {"cause", "symptom"}
            or any(kinds.get(explain[k]) != "finding" for k in ("cause", "symptom"))):
        checker.add("'explain' maps 'cause' and 'symptom' to two 'finding' patterns", node, "explain")
        return None
    return dict(explain)


def _check_cases(cases: list[Any], node: LineDict, checker: _Checker) -> None:
    expects = set()
    for case in cases:
        if not isinstance(case, LineDict):
            checker.add("a case is a mapping (name, expect, facts)", node, "cases")
            continue
        checker.unknown_keys(case, CASE_KEYS, "case")
        if case.get("expect") not in ("fire", "silent"):
            checker.add("case 'expect' is 'fire' or 'silent'", case, "expect")
        expects.add(case.get("expect"))
        if not isinstance(case.get("name"), str):
            checker.add("case needs a 'name'", case)
        facts = case.get("facts")
        if not isinstance(facts, list) or not all(isinstance(f, dict) and "fact" in f for f in facts):
            checker.add("case 'facts' is a list of facts, each with 'fact: network|op|finding'", case, "facts")
    if not {"fire", "silent"} <= expects:
        checker.add("'cases' needs at least one case that fires and one that stays silent", node, "cases")
