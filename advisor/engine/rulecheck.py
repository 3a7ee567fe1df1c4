"""Validation of one rule: fields, docs, patterns (through the condition compiler), emit or explain,
evidence templates checked against the fact schema, and the rule's own cases with what they expect.
Every problem is collected with its file, line and column; nothing is raised one by one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import TemplateSyntaxError

from ..templating import render_problem, template_problem
from ..text import suggest
from ..yamlfile import LineDict
from .conditions import PatternCompiler
from .rulemodel import (
    ALIAS,
    DOC_SECTIONS,
    FIELD_REF,
    KIND,
    LANGUAGES,
    Emit,
    Problem,
    Rule,
    case_paths,
    line_of,
    template_env,
)
from .schemacheck import schema_problems

Fields = Mapping[str, Mapping[str, tuple[str, str]]]
CASE_KEYS = {"name", "expect", "facts", "params", "findings", "count", "explains"}
FINDING_KEYS = {"kind", "op", "index"}


class Checker:
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



def texts(node: Any) -> dict[str, str]:
    """The en/zh texts of a title or evidence mapping (the schema checks their shape)."""
    if not isinstance(node, dict) or any(not isinstance(node.get(lang), str) for lang in LANGUAGES):
        return {}
    return {lang: node[lang] for lang in LANGUAGES}


def check_rule(node: Any, path: Path, checker: Checker, kinds: set[str], fields: Fields,
               shared: Mapping[str, Any] | None = None) -> Rule | None:
    """The rule, or None when ``checker`` got problems; ``kinds``: the finding kinds it may emit;
    ``shared``: its pack's parameters (pack.yaml ``params``), which the rule reads without declaring
    them and may not declare again (one value for the pack). The rule's ``params`` hold those it reads.
    Structure comes from rules/schema/rule.schema.json (schemacheck); what follows is semantic."""
    if not isinstance(node, LineDict):
        checker.add("a rule must be a mapping")
        return None
    # 'tags' is one clear sentence whatever is wrong with it (rather than one line per bad item).
    checker.problems.extend(schema_problems(node, "rule", checker.path, skip=("when", "advice", "tags"), label="rule"))
    if "when" not in node:
        checker.add("rule is missing 'when'", node)
    rule_id = node.get("id")
    severity = node.get("severity")
    title = texts(node.get("title"))
    docs: dict[str, dict[str, str]] = {}
    if isinstance(node.get("docs"), dict):
        for lang in LANGUAGES:
            section = node["docs"].get(lang)
            if isinstance(section, dict) and all(isinstance(section.get(s), str) for s in DOC_SECTIONS):
                docs[lang] = {s: section[s] for s in DOC_SECTIONS}
    params = node.get("params") or {}
    if not isinstance(params, dict):
        params = {}
    shared = dict(shared or {})
    for name in params:
        if name in shared:
            checker.add(f"parameter '{name}' is the pack's (pack.yaml 'params'), shared by its rules: use it "
                        f"without declaring it here", params if isinstance(params, LineDict) else node,
                        name if isinstance(params, LineDict) else "params")
    visible = {**shared, **params}
    patterns = _patterns(node.get("when"), node, checker)
    compiler = PatternCompiler(dict(visible), fields)
    for alias, pattern in patterns:
        compiler.pattern(pattern, alias)
    for problem in compiler.problems:
        checker.add(problem.message, problem.node, problem.key)
    aliases = [alias for alias, _ in patterns]
    used = set(compiler.used)
    emit = _emit(node.get("emit"), node, aliases, compiler.aliases, checker, kinds, fields, visible, used)
    explain = _explain(node.get("explain"), node, compiler.aliases, checker)
    if sum(key in node for key in ("emit", "explain", "judges")) != 1:
        checker.add("a rule has exactly one of 'emit' (a finding), 'explain' (cause -> symptom) or 'judges' (a "
                    "row flag)", node)
    _check_tensor_patterns(patterns, node, checker)
    if "judges" in node and node.get("input_cases"):
        checker.add("a judgement rule has no 'input_cases': every input case of every rule is judged by it",
                    node, "input_cases")
    cases = node.get("cases")
    if not isinstance(cases, list) or not cases:
        if "cases" in node:
            checker.add("'cases' needs at least one case that fires and one that stays silent", node, "cases")
        cases = []
    else:
        _check_cases(cases, node, checker)
    input_cases = node.get("input_cases") or []
    for case in input_cases if isinstance(input_cases, list) else []:
        if isinstance(case, LineDict):
            _check_input_case(case, path, "explain" in node, checker)
    tags = node.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        checker.add("'tags' is a list of words, e.g. [fp16, overflow]", node, "tags")
        tags = []
    priority = node.get("priority", 100)
    aliases = node.get("aliases") or []
    if rule_id in aliases:
        checker.add(f"'aliases' lists the rule's own id '{rule_id}': aliases are its former ids", node, "aliases")
    if checker.problems:
        return None
    inherited = sorted(name for name in used if name in shared and name not in params)
    return Rule(id=rule_id, title=title, severity=severity, root_cause=bool(node.get("root_cause", False)),
                priority=priority, tags=list(tags), params={**{n: shared[n] for n in inherited}, **params},
                shared=tuple(inherited), docs=docs,
                patterns=patterns, emit=emit, explain=explain, cases=cases, source=path, line=line_of(node) or 0,
                fields=fields, aliases=tuple(aliases), status=node.get("status", "stable"),
                input_cases=list(input_cases), judges=node.get("judges"))


def _check_tensor_patterns(patterns: list[tuple[str, Any]], node: LineDict, checker: Checker) -> None:
    """``tensor`` facts (one per comparison row) are judged column by column by the judgement rules and never
    asserted: a judgement rule has one ``tensor`` pattern and nothing else, no other rule names them."""
    tensor = [isinstance(pattern, dict) and pattern.get("fact") == "tensor" for _, pattern in patterns]
    if "judges" in node and (len(patterns) != 1 or not all(tensor)):
        checker.add("a judgement rule ('judges') has one pattern, 'fact: tensor', and no other", node, "when")
    elif "judges" not in node and any(tensor):
        checker.add("'tensor' facts are judged by the judgement rules ('judges'), never asserted: no finding or "
                    "explanation can match them (use 'op' facts)", node, "when")


def _patterns(when: Any, node: LineDict, checker: Checker) -> list[tuple[str, Any]]:
    if isinstance(when, dict):
        alias = when.get("as", "m")
        return [(alias, when)]
    if isinstance(when, list) and when:
        patterns = []
        for i, pattern in enumerate(when):
            alias = pattern.get("as") if isinstance(pattern, dict) else None
            if not isinstance(alias, str) or not ALIAS.match(alias):
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


def _emit(emit: Any, node: LineDict, aliases: list[str], patterns: dict[str, str], checker: Checker,
          kinds: set[str], fields: Fields, params: dict[str, Any], used: set[str]) -> Emit | None:
    """``patterns``: alias -> fact kind; ``kinds``: the finding kinds with advice (built-in or the pack's);
    the parameters its templates read are added to ``used``."""
    if emit is None:
        return None
    if not isinstance(emit, LineDict):
        return None                       # the schema says what 'emit' holds
    kind = emit.get("kind")
    if isinstance(kind, str) and KIND.match(kind) and kind not in kinds:
        checker.add(f"no advice for kind '{kind}': add an 'advice:' page to a rule of this pack, or use a "
                    f"kind from knowledge/advice{suggest(kind, sorted(kinds))}", emit, "kind")
    subject = emit.get("subject", aliases[0] if len(aliases) == 1 else None)
    if subject is not None and subject not in aliases:
        checker.add(f"'emit.subject' must name a pattern ({', '.join(aliases)}){suggest(str(subject), aliases)}",
                    emit, "subject")
    confidence = emit.get("confidence", 1.0)
    sample = sample_context(patterns, fields, params)
    if isinstance(confidence, str) and "{{" in confidence:   # a template: its number (empty: no finding)
        problem = (template_problem(template_env, confidence)
                   or template_fields(confidence, patterns, fields, params, used)
                   or render_problem(template_env, confidence, sample))
        if problem:
            checker.add(f"'emit.confidence': {problem}", emit, "confidence")
    elif isinstance(confidence, str):
        ref = FIELD_REF.match(confidence)
        if not ref or ref.group(1) not in patterns:
            checker.add("'emit.confidence' is a number in 0..1, '$pattern.field' or a template '{{ ... }}'",
                        emit, "confidence")
    elif not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        checker.add("'emit.confidence' must be between 0 and 1", emit, "confidence")
    op_ref = emit.get("op")
    if op_ref is not None:
        ref = FIELD_REF.match(str(op_ref))
        if ref and (ref.group(1) not in patterns or ref.group(2) not in fields[patterns[ref.group(1)]]):
            checker.add("'emit.op' is '$pattern.field' naming the op, e.g. $m.output_op", emit, "op")
    evidence = texts(emit.get("evidence"))
    for lang, text in evidence.items():
        problem = (template_problem(template_env, text) or template_fields(text, patterns, fields, params, used)
                   or render_problem(template_env, text, sample))
        if problem:
            where = emit["evidence"]
            checker.add(f"evidence.{lang}: {problem}", where if isinstance(where, LineDict) else emit,
                        lang if isinstance(where, LineDict) else "evidence")
    values = emit.get("values") or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        values = []
    for value in values:
        alias, _, name = value.rpartition(".")
        alias = alias or subject
        if alias not in patterns or name not in fields[patterns[alias]]:
            known = list(fields[patterns[alias]]) if alias in patterns else []
            checker.add(f"'emit.values': unknown field '{value}'{suggest(name, known)}", emit, "values")
    return Emit(kind=str(kind), subject=subject, op=op_ref, confidence=confidence, evidence=evidence,
                values=values)


#: What a sample fact holds in each field, by the field's type: rendering a template once with these
#: finds what fails in every run (the bools are true, so conditional branches are rendered too).
SAMPLE_VALUES = {"number": 2, "string": "sample", "bool": True}


def sample_context(patterns: dict[str, str], fields: Fields, params: dict[str, Any]) -> dict[str, Any]:
    """The context an evidence template renders with, sample facts in place of matched ones."""
    context: dict[str, Any] = {"params": dict(params)}
    for alias, kind in patterns.items():
        known = fields.get(kind, {})
        context[alias] = {"fact": kind, "id": f"{kind}:sample",
                          **{name: SAMPLE_VALUES.get(spec[0], "sample") for name, spec in known.items()}}
    return context


def template_fields(text: str, patterns: dict[str, str], fields: Fields, params: dict[str, Any],
                    used: set[str] | None = None) -> str | None:
    """The first name an evidence template uses that its context will not hold: ``alias.field`` of a
    pattern's fact kind, ``params.name`` of the rule, or a bare name that is neither. Read from Jinja's
    AST, so a typo fails validation instead of rendering "n/a" in every report. The parameters the
    template reads are added to ``used``."""
    try:
        tree = template_env.parse(text)
    except TemplateSyntaxError:
        return None                       # template_problem reports it
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    known = {*patterns, "params", *local, *template_env.globals, "loop"}
    # ``alias.get('field', default)`` reads a field too; the ``get`` itself is the mapping's method.
    methods = {id(call.node): call for call in tree.find_all(nodes.Call) if isinstance(call.node, nodes.Getattr)}
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        base = node.node
        if not isinstance(base, nodes.Name) or base.name in local:
            continue
        if id(node) in methods:
            call = methods[id(node)]
            if node.attr not in ("get", "keys", "items", "values"):
                return f"'{base.name}.{node.attr}(...)': a fact is a mapping; read its fields as {base.name}.FIELD"
            if node.attr != "get" or not call.args or not isinstance(call.args[0], nodes.Const):
                continue
            name = call.args[0].value
        else:
            name = node.attr if isinstance(node, nodes.Getattr) else (
                node.arg.value if isinstance(node.arg, nodes.Const) else None)
        if not isinstance(name, str):
            continue
        if base.name == "params" and name not in params:
            return (f"unknown parameter 'params.{name}' (line {node.lineno} of the template)"
                    f"{suggest(name, list(params))}; the rule's params: {', '.join(params) or 'none'}")
        if base.name == "params" and used is not None:
            used.add(name)
        if base.name in patterns and name not in fields[patterns[base.name]]:
            kind = patterns[base.name]
            return (f"'{kind}' facts have no field '{name}' ('{base.name}.{name}', line {node.lineno} of the "
                    f"template){suggest(name, list(fields[kind]))}")
    for node in tree.find_all(nodes.Name):
        if node.ctx == "load" and node.name not in known:
            return (f"unknown name '{node.name}' (line {node.lineno} of the template)"
                    f"{suggest(node.name, sorted(known))}; a template sees its patterns "
                    f"({', '.join(patterns) or 'none'}) and 'params'")
    return None


def _explain(explain: Any, node: LineDict, kinds: dict[str, str], checker: Checker) -> dict[str, str] | None:
    if explain is None:
        return None
    if (not isinstance(explain, dict) or set(explain) != {"cause", "symptom"}
            or any(kinds.get(explain[k]) != "finding" for k in ("cause", "symptom"))):
        checker.add("'explain' maps 'cause' and 'symptom' to two 'finding' patterns", node, "explain")
        return None
    return dict(explain)


def _check_cases(cases: list[Any], node: LineDict, checker: Checker) -> None:
    expects = set()
    explains = "explain" in node
    for case in cases:
        if not isinstance(case, LineDict):
            continue                      # the schema says what a case holds
        expects.add(case.get("expect"))
        _check_expectations(case, explains, checker)
    if not {"fire", "silent"} <= expects:
        checker.add("'cases' needs at least one case that fires and one that stays silent", node, "cases")


def _check_expectations(case: LineDict, explains: bool, checker: Checker) -> None:
    """What a firing case may also state (docs/rule-packs.md): ``findings`` (each a mapping of kind, op,
    index: the rule's findings, in any order), ``count`` (how many findings or explanations) and, for an
    explain rule, ``explains`` (each {cause: ID, symptom: ID}: of the case's finding facts, or of the
    findings an input case's run gives)."""
    stated = [key for key in ("findings", "count", "explains") if key in case]
    if stated and case.get("expect") != "fire":
        checker.add(f"'{stated[0]}' states what a firing case gives: use it with 'expect: fire'", case, stated[0])
        return
    if "findings" in case and explains:
        checker.add("an explain rule gives explanations, not findings: state them with 'explains'", case,
                    "findings")
    if "explains" in case:
        pairs = case["explains"]
        if not explains:
            checker.add("only an explain rule gives explanations: state an emit rule's with 'findings'", case,
                        "explains")
        elif "facts" in case and isinstance(pairs, list) and all(
                isinstance(p, dict) and set(p) == {"cause", "symptom"} for p in pairs):
            # A fact case names its own facts; an input case's ids are the run's findings (checked when it runs).
            ids = {f.get("id") for f in case.get("facts") or [] if isinstance(f, dict)}
            for pair in pairs:
                for role in ("cause", "symptom"):
                    if pair[role] not in ids:
                        checker.add(f"'explains' names {role} '{pair[role]}', which is no fact of the case"
                                    f"{suggest(str(pair[role]), sorted(map(str, ids)))}",
                                    pair if isinstance(pair, LineDict) else case, role)


def _check_input_case(case: LineDict, path: Path, explains: bool, checker: Checker) -> None:
    """An ``input_cases`` entry names a comparison file, and the run's other inputs, beside the rule
    (the schema checks its shape)."""
    _check_expectations(case, explains, checker)
    for key, name in case_paths(case):
        where = path.parent / name
        if not where.exists():
            what = "folder" if key.startswith("dumps") or key == "overflow" else "file"
            label = what if key == "input" else f"{key} {what}"
            node = case["dumps"] if key.startswith("dumps.") and isinstance(case["dumps"], LineDict) else case
            checker.add(f"input case {label} '{name}' not found next to the rule ({where})", node,
                        key.rpartition(".")[2])
