"""Which rule packs a run uses, and how the user tuned them.

Packs come from the built-in ``rules/`` folder, from installed Python packages that declare an
``advisor.rule_packs`` entry point, from the project settings (``advisor.toml``) and from ``--rules``.
A pack named by the user that fails validation stops the run; an installed pack that fails is
skipped whole, with a warning naming its distribution, so one broken plugin never blocks the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import KnowledgeError, RulePackError, UsageError
from ..plugins import guarded
from ..resources import data_dir
from ..text import suggest
from .packs import SEVERITIES, Rule, RulePack, load_pack, pack_command
from .registry import Registry

ENTRY_POINT_GROUP = "advisor.rule_packs"


@dataclass
class PackSet:
    packs: list[RulePack]
    warnings: list[str] = field(default_factory=list)
    registry: Registry = field(default_factory=Registry)     # the run's fact schema and advice pages

    @property
    def rules(self) -> list[Rule]:
        return [rule for pack in self.packs for rule in pack.rules]

    def params(self) -> tuple[str, ...]:
        """The packs' ``settings.params`` as RULE.PARAM=VALUE, in load order (a later pack wins)."""
        return tuple(setting.text() for pack in self.packs for setting in pack.params)

    def thresholds(self) -> tuple[str, ...]:
        """The packs' ``settings.thresholds`` as KEY=VALUE, in load order (a later pack wins)."""
        return tuple(setting.text() for pack in self.packs for setting in pack.thresholds)


def builtin_pack_paths(command: str | None = None) -> list[Path]:
    """The built-in pack folders; with ``command``, only those of that command (their ``command:``)."""
    root = data_dir("rules")
    paths = sorted(p for p in root.iterdir() if p.is_dir() and (p / "pack.yaml").is_file())
    return [p for p in paths if command is None or pack_command(p) == command]


def installed_packs() -> list[tuple[str, str, Path | None, str | None]]:
    """(entry point name, distribution "name version", pack path, error) for each installed pack."""
    found = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = f"{entry.dist.name} {entry.dist.version}" if entry.dist else "unknown distribution"
        path, error = guarded(lambda entry=entry: _pack_path(entry.load()))
        found.append((entry.name, dist, path, error))
    return sorted(found, key=lambda item: item[0])


def _pack_path(target: Any) -> Path:
    """An entry point names a module (its folder is the pack), a path, or a callable returning one."""
    if isinstance(target, ModuleType):
        return Path(target.__file__).resolve().parent
    if callable(target):
        target = target()
    if isinstance(target, (str, Path)):
        return Path(target)
    raise TypeError(f"expected a module, a path or a function returning a path, got {type(target).__name__}")


def load_packs(extra: Iterable[Path] = (), builtin: bool = True, installed: bool = True,
               registry: Registry | None = None, command: str = "run") -> PackSet:
    """The run's packs, validated against ``registry`` (a new one when None: the built-in schema), whose
    advice pages they add to. Built-in and installed packs are those of ``command`` (a pack's
    ``command:``, run by default: ``advisor post`` loads the packs that judge detections); the packs the
    user names are loaded whatever their command. Pack settings that name rules are checked once every
    pack is loaded."""
    registry = registry or Registry()
    packs: list[RulePack] = []
    warnings: list[str] = []
    if builtin:
        for path in builtin_pack_paths(command):
            packs.append(_add_pages(load_pack(path, registry), registry))
    if installed:
        for name, dist, path, error in installed_packs():
            try:
                if error:
                    raise RulePackError(error)
                if path is not None and pack_command(path) != command:
                    continue
                packs.append(_add_pages(load_pack(path, registry), registry))
            except RulePackError as exc:
                warnings.append(f"installed rule pack '{name}' ({dist}) skipped: {exc.one_line()}")
    for path in extra:
        packs.append(_add_pages(load_pack(Path(path), registry), registry))
    _check_unique(packs)
    _check_settings(packs)
    return PackSet(packs, warnings, registry)


def _add_pages(pack: RulePack, registry: Registry) -> RulePack:
    """The pack's inline advice pages added to the run's registry (all or none: a clash names both)."""
    for kind, (page, where) in pack.advice.items():
        if kind in registry.advice.inline and registry.advice.inline[kind][0] != page:
            raise RulePackError(f"advice for kind '{kind}' is defined twice, also in "
                                f"{registry.advice.inline[kind][1]}", path=where)
    for kind, (page, where) in pack.advice.items():
        try:
            registry.advice.add(kind, page, where)
        except KnowledgeError as exc:
            raise RulePackError(exc.message, path=where) from None
    return pack


def _check_settings(packs: list[RulePack]) -> None:
    """Each pack's ``settings.params`` must name a loaded rule's parameter, with a value of its type."""
    rules = [rule for pack in packs for rule in pack.rules]
    for pack in packs:
        for setting in pack.params:
            try:
                parse_param_overrides([setting.text()], rules)
            except UsageError as exc:
                message = exc.message.replace(f"--set '{setting.text()}': ", "")
                raise RulePackError(f"settings.params '{setting.key}': {message}", path=setting.path,
                                    line=setting.line) from None


def _check_unique(packs: list[RulePack]) -> None:
    """Pack names and rule ids are unique, and apart (``--set NAME.PARAM`` names either)."""
    names: dict[str, RulePack] = {}
    owners: dict[str, Rule] = {}
    for pack in packs:
        if pack.name in names:
            raise RulePackError(f"pack name '{pack.name}' is already used by {names[pack.name].source}",
                                path=pack.source)
        names[pack.name] = pack
        for rule in pack.rules:
            if rule.id in owners:
                other = owners[rule.id]
                raise RulePackError(f"rule id '{rule.id}' is defined twice: here and in {other.source}:{other.line} "
                                    f"(pack '{other.pack}')", path=rule.source, line=rule.line)
            owners[rule.id] = rule
    for pack in packs:
        for rule in pack.rules:
            for alias in rule.aliases:
                if alias in owners:
                    other = owners[alias]
                    what = f"rule '{other.id}'" + ("" if other.id == alias else " (an alias of it)")
                    raise RulePackError(f"alias '{alias}' of rule '{rule.id}' is already {what}, "
                                        f"{other.source}:{other.line}: --disable {alias} would name either",
                                        path=rule.source, line=rule.line)
                owners[alias] = rule
    for rule_id, rule in owners.items():
        if rule_id in names:
            raise RulePackError(f"rule id '{rule_id}' is also the name of pack '{rule_id}' "
                                f"({names[rule_id].source}): --set {rule_id}.PARAM would name either; rename one",
                                path=rule.source, line=rule.line)


def rules_by_name(rules: Iterable[Rule]) -> dict[str, Rule]:
    """Each rule under its id and under its former ids (``aliases``): what the user's settings may name."""
    named: dict[str, Rule] = {}
    for rule in rules:
        named.update((alias, rule) for alias in rule.aliases)
    named.update((rule.id, rule) for rule in rules)          # an id wins over another rule's alias
    return named


def select_rules(rules: list[Rule], disable: Iterable[str] = (),
                 severity: dict[str, str] | None = None) -> list[Rule]:
    """The rules a run fires: without the disabled ones, with severities changed (copies: the
    loaded packs stay as written). A rule is named by its id or a former one (``aliases``); unknown
    names are errors, with the nearest id suggested."""
    by_name = rules_by_name(rules)
    for name in [*disable, *(severity or {})]:
        if name not in by_name:
            raise UsageError(f"no rule '{name}'{suggest(name, [r.id for r in rules])} to disable or re-rate")
    for name, level in (severity or {}).items():
        if level not in SEVERITIES:
            raise UsageError(f"severity for '{name}' must be one of {', '.join(SEVERITIES)}, not '{level}'")
    disabled = {by_name[name].id for name in disable}
    levels = {by_name[name].id: level for name, level in (severity or {}).items()}
    return [dataclasses.replace(rule, severity=levels.get(rule.id, rule.severity))
            for rule in rules if rule.id not in disabled]


def parse_param_overrides(texts: Iterable[str], rules: list[Rule]) -> dict[str, dict[str, Any]]:
    """``--set RULE.PARAM=VALUE`` or ``--set PACK.PARAM=VALUE`` (a pack's shared parameter: every rule
    of the pack that reads it; as RULE.PARAM, that rule's value only) -> {rule id: {param: value}},
    checked against the rules' params."""
    by_id = rules_by_name(rules)
    sharing: dict[str, dict[str, list[Rule]]] = {}          # pack -> shared param -> rules reading it
    for rule in rules:
        for name in rule.shared:
            sharing.setdefault(rule.pack, {}).setdefault(name, []).append(rule)
    overrides: dict[str, dict[str, Any]] = {}
    for text in texts:
        key, sep, raw = text.partition("=")
        owner, dot, name = key.strip().rpartition(".")
        if not sep or not dot:
            raise UsageError(f"--set '{text}': expected RULE.PARAM=VALUE or PACK.PARAM=VALUE, "
                             f"e.g. problem-node.min_confidence=0.7")
        if owner in sharing and owner not in by_id:
            readers = sharing[owner].get(name)
            if not readers:
                known = ", ".join(sharing[owner]) or "none"
                raise UsageError(f"--set '{text}': pack '{owner}' shares no parameter '{name}' (shared: {known})")
            value = _typed(raw.strip(), readers[0].params[name], text)
            for rule in readers:
                overrides.setdefault(rule.id, {})[name] = value
            continue
        if owner not in by_id:
            ids = [rule.id for rule in rules]
            raise UsageError(f"--set '{text}': no rule '{owner}'{suggest(owner, [*ids, *sharing])}")
        rule = by_id[owner]                 # named by its id or a former one
        params = rule.params                # a pack's shared one too: then for this rule only
        if name not in params:
            known = ", ".join(params) or "none"
            raise UsageError(f"--set '{text}': rule '{rule.id}' has no parameter '{name}' (parameters: {known})")
        overrides.setdefault(rule.id, {})[name] = _typed(raw.strip(), params[name], text)
    return overrides


def _typed(raw: str, default: Any, text: str) -> Any:
    if isinstance(default, bool):
        if raw.lower() not in ("true", "false"):
            raise UsageError(f"--set '{text}': expected true or false")
        return raw.lower() == "true"
    if isinstance(default, (int, float)):
        try:
            return int(raw) if isinstance(default, int) and raw.lstrip("-").isdigit() else float(raw)
        except ValueError:
            raise UsageError(f"--set '{text}': '{raw}' is not a number") from None
    return raw
