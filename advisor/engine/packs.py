"""Rule packs: YAML an expert writes without reading our Python.

A pack is a folder with ``pack.yaml`` (name, version, description, shared params, settings) and one ``<rule-id>.yaml``
per rule, possibly in sub-folders; or a single YAML file with ``pack:``, ``version:`` and a ``rules:``
list. A rule file holds the rule, its documentation (en + zh) and its own test cases. See rules/core/
and docs/rule-packs.md.

Loading validates everything first and collects every problem with file, line and column; a pack
with any problem is rejected whole (never half-loaded). A pack is validated against the run's fact
schema and the finding kinds that have advice (built in, or inline in the pack itself: never another
pack's, so validation does not depend on load order). Parsed packs are cached by content (packcache).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import __version__
from ..advice import advice_names_problem, builtin_kinds, page_texts, validate_page
from ..errors import KnowledgeError, RulePackError, UsageError
from ..facts.thresholds import load_thresholds
from ..yamlfile import LineDict, load_yaml
from . import packcache
from .registry import Registry
from .rulecheck import Checker, check_rule
from .rulemodel import (  # noqa: F401 - the pack model, imported from here by the engine and the CLI
    ID,
    LANGUAGES,
    PACK_KEYS,
    SEVERITIES,
    CompiledAlternative,
    Emit,
    PackProblems,
    Problem,
    Rule,
    RulePack,
    Setting,
    line_of,
    pack_files,
    template_env,
)
from .schemacheck import schema_problems

SETTING_KEYS = ("params", "thresholds")


def load_pack(path: Path, registry: Registry | None = None) -> RulePack:
    """Load and validate a pack folder or single-file pack; raise PackProblems listing every problem.
    Its inline advice pages are added to ``registry`` by ``loading.load_packs``, not here."""
    pack, problems = check_pack(path, registry)
    if problems:
        raise PackProblems(problems)
    assert pack is not None
    return pack


def check_pack(path: Path, registry: Registry | None = None) -> tuple[RulePack | None, list[Problem]]:
    """The pack and every problem in it, checked against ``registry``'s fact schema (built-in when None)."""
    path = Path(path)
    if not path.exists():
        raise RulePackError("rule pack not found", path=path)
    if path.is_dir() and not (path / "pack.yaml").is_file():
        raise RulePackError("a pack folder needs a pack.yaml (pack: NAME, version: X.Y.Z)", path=path)
    registry = registry or Registry()
    return packcache.cached(path, registry.schema_digest(), registry.fields, lambda: _read_pack(path, registry))


def pack_command(path: Path) -> str:
    """The command whose runs load the pack at ``path`` (its ``command:``, run when unsaid), read from its
    metadata alone so a pack of another command is never validated for nothing. A metadata file that
    cannot be read says run: loading it then reports what is wrong."""
    try:
        meta = load_yaml(path / "pack.yaml" if path.is_dir() else path)
    except RulePackError:
        return "run"
    command = meta.get("command") if isinstance(meta, dict) else None
    return command if isinstance(command, str) else "run"


def _read_pack(path: Path, registry: Registry) -> tuple[RulePack | None, list[Problem]]:
    problems: list[Problem] = []
    if path.is_dir():
        meta_path, *rule_paths = pack_files(path)
        meta = _load(meta_path, problems)
        rule_nodes = []
        for rule_path in rule_paths:
            node = _load(rule_path, problems)
            if node is not None:
                rule_nodes.append((rule_path, node))
    else:
        meta = _load(path, problems)
        rules = meta.get("rules") if isinstance(meta, dict) else None
        rule_nodes = [(path, node) for node in rules] if isinstance(rules, list) else []
        if isinstance(meta, dict) and not isinstance(rules, list):
            problems.append(Problem(path, line_of(meta), None, "a single-file pack needs a 'rules:' list"))
    if meta is None:
        return None, problems
    checker = Checker(path / "pack.yaml" if path.is_dir() else path)
    pack = _pack_meta(meta, path, checker)
    pack.advice = _inline_advice(rule_nodes, checker)
    kinds = set(builtin_kinds()) | set(pack.advice)
    seen: dict[str, Rule] = {}
    for rule_path, node in rule_nodes:
        rule_checker = Checker(rule_path)
        rule = check_rule(node, rule_path, rule_checker, kinds, registry.fields, pack.shared)
        if rule is not None:
            rule.pack = pack.name
            if rule.id in seen:
                rule_checker.add(f"duplicate rule id '{rule.id}' (also in {seen[rule.id].source}:"
                                 f"{seen[rule.id].line})", node, "id")
            else:
                seen[rule.id] = rule
                pack.rules.append(rule)
        checker.problems.extend(rule_checker.problems)
    _check_shared_used(pack, meta, checker)
    problems.extend(checker.problems)
    if not pack.rules and not pack.params and not pack.thresholds and not problems:
        problems.append(Problem(path, None, None, "the pack has no rules (and no settings)"))
    return pack, problems


def _load(path: Path, problems: list[Problem]) -> Any:
    try:
        return load_yaml(path)
    except RulePackError as exc:
        problems.append(Problem(Path(exc.path or path), exc.line, exc.column, exc.message))
        return None


def _pack_meta(meta: Any, path: Path, checker: Checker) -> RulePack:
    """The pack's metadata, checked against rules/schema/pack.schema.json (structure: fields, name and
    version patterns, settings shapes), then by hand for what a schema cannot say."""
    if not isinstance(meta, LineDict):
        checker.add("pack metadata must be a mapping with 'pack' and 'version'")
        return RulePack(name=path.stem, version="0", description="", source=path)
    structural = schema_problems(meta, "pack", checker.path, skip=("rules",))
    checker.problems.extend(structural)
    name, version = meta.get("pack"), meta.get("version")
    needed = meta.get("min_advisor_version")
    if isinstance(needed, str) and re.match(r"^\d+(\.\d+)*$", needed) \
            and _version_tuple(needed) > _version_tuple(__version__):
        checker.add(f"the pack needs advisor >= {needed}; this is advisor {__version__} "
                    f"(pip install -U advisor)", meta, "min_advisor_version")
    pack = RulePack(name=str(name), version=str(version), description=str(meta.get("description", "")),
                    source=path)
    if isinstance(meta.get("command"), str) and not structural:
        pack.command = meta["command"]
    if isinstance(meta.get("params"), dict) and not structural:
        pack.shared = dict(meta["params"])
    settings = meta.get("settings")
    if isinstance(settings, LineDict) and not structural:      # read once its shape is right
        pack.params, pack.thresholds = _settings(settings, checker)
    return pack


def _settings(settings: LineDict, checker: Checker) -> tuple[list[Setting], list[Setting]]:
    """``settings: {params: {RULE.PARAM: value}, thresholds: {[DTYPE.]METRIC or SECTION.KNOB: value}}``,
    shaped as the schema says. Thresholds are checked here; params name rules of any pack, so
    loading.load_packs checks them."""
    found: dict[str, list[Setting]] = {}
    for key in SETTING_KEYS:
        table = settings.get(key) or LineDict()
        found[key] = [Setting(str(name), value, checker.path, table.where(name)[0] if isinstance(table, LineDict)
                              else None) for name, value in table.items()]
    for setting in found["thresholds"]:
        try:
            load_thresholds([setting.text()])
        except (UsageError, KnowledgeError) as exc:
            message = exc.message.replace(f"--threshold '{setting.text()}': ", "")
            checker.problems.append(Problem(setting.path, setting.line, None,
                                            f"settings.thresholds '{setting.key}': {message}"))
    return found["params"], found["thresholds"]


def _check_shared_used(pack: RulePack, meta: Any, checker: Checker) -> None:
    """A pack parameter no rule reads is a typo or a leftover. Said only when every rule loaded (a
    rule with problems is not in the pack, so what it reads is unknown)."""
    if not pack.shared or checker.problems:
        return
    read = {name for rule in pack.rules for name in rule.shared}
    table = meta.get("params")
    for name in pack.shared:
        if name not in read:
            checker.add(f"pack parameter '{name}' is read by none of the pack's rules (as ${{{name}}} or "
                        f"params.{name})", table if isinstance(table, LineDict) else meta, name)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def _inline_advice(rule_nodes: list[tuple[Path, Any]], checker: Checker) -> dict[str, tuple[dict, str]]:
    """Advice pages rules carry inline (``advice:``, same sections as knowledge/advice pages), by the
    kind the rule emits; the page's title defaults to the rule's."""
    pages: dict[str, tuple[dict, str]] = {}
    builtin = set(builtin_kinds())
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
        if kind in builtin:
            checker.problems.append(Problem(rule_path, node.where("advice")[0], None,
                                            f"kind '{kind}' already has a built-in advice page; emit it without "
                                            f"inline advice, or choose another kind"))
            continue
        page = node["advice"]
        if isinstance(page, dict) and "title" not in page and isinstance(node.get("title"), dict):
            page = {"title": node["title"], **page}
        try:
            validate_page(page, Path(where), render=True)
            _check_advice_values(page, emitted_values(emit))
        except KnowledgeError as exc:
            line = _line_of_field(node["advice"], exc.field) or node.where("advice")[0]
            checker.problems.append(Problem(rule_path, line, None,
                                            f"advice: {exc.message}" + (f" ({exc.field})" if exc.field else "")))
            continue
        if kind in pages and pages[kind][0] != page:
            checker.problems.append(Problem(rule_path, node.where("advice")[0], None,
                                            f"advice for kind '{kind}' is also given in {pages[kind][1]}"))
            continue
        pages[kind] = (dict(page), where)
    return pages


def emitted_values(emit: Any) -> set[str]:
    """The names a rule's findings carry in ``values`` (its ``emit.values``: ``field`` or ``alias.field``;
    a name given twice is kept as ``alias_field`` too, as the engine does)."""
    specs = emit.get("values") if isinstance(emit, dict) else None
    names: set[str] = set()
    for spec in specs if isinstance(specs, list) else []:
        alias, _, name = str(spec).rpartition(".")
        names.update({name, f"{alias}_{name}"} if alias else {name})
    return names


def _check_advice_values(page: dict[str, Any], values: set[str]) -> None:
    """Every ``values.NAME`` an inline advice page reads is one the rule emits."""
    for lang in LANGUAGES:
        for section, text in page_texts(page[lang]):
            problem = advice_names_problem(text, values)
            if problem:
                raise KnowledgeError(problem, field=f"{lang}.{section}")


def _line_of_field(node: Any, dotted: str | None) -> int | None:
    """The line of ``en.fix.any`` inside an advice mapping read with lines (None when unknown)."""
    line = None
    for key in (dotted or "").split("."):
        if not isinstance(node, LineDict) or key not in node:
            break
        line = node.where(key)[0]
        node = node[key]
    return line
