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
from .packs import SEVERITIES, Rule, RulePack, load_pack
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


def builtin_pack_paths() -> list[Path]:
    root = data_dir("rules")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "pack.yaml").is_file())


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
               registry: Registry | None = None) -> PackSet:
    """The run's packs, validated against ``registry`` (a new one when None: the built-in schema), whose
    advice pages they add to. Pack settings that name rules are checked once every pack is loaded."""
    registry = registry or Registry()
    packs: list[RulePack] = []
    warnings: list[str] = []
    if builtin:
        for path in builtin_pack_paths():
            packs.append(_add_pages(load_pack(path, registry), registry))
    if installed:
        for name, dist, path, error in installed_packs():
            try:
                if error:
                    raise RulePackError(error)
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
    for rule_id, rule in owners.items():
        if rule_id in names:
            raise RulePackError(f"rule id '{rule_id}' is also the name of pack '{rule_id}' "
                                f"({names[rule_id].source}): --set {rule_id}.PARAM would name either; rename one",
                                path=rule.source, line=rule.line)


def select_rules(rules: list[Rule], disable: Iterable[str] = (),
                 severity: dict[str, str] | None = None) -> list[Rule]:
    """The rules a run fires: without the disabled ones, with severities changed (copies: the
    loaded packs stay as written). Unknown ids are errors, with the nearest id suggested."""
    by_id = {rule.id: rule for rule in rules}
    for rule_id in [*disable, *(severity or {})]:
        if rule_id not in by_id:
            raise UsageError(f"no rule '{rule_id}'{suggest(rule_id, list(by_id))} to disable or re-rate")
    for rule_id, level in (severity or {}).items():
        if level not in SEVERITIES:
            raise UsageError(f"severity for '{rule_id}' must be one of {', '.join(SEVERITIES)}, not '{level}'")
    disabled = set(disable)
    return [dataclasses.replace(rule, severity=(severity or {}).get(rule.id, rule.severity))
            for rule in rules if rule.id not in disabled]


def parse_param_overrides(texts: Iterable[str], rules: list[Rule]) -> dict[str, dict[str, Any]]:
    """``--set RULE.PARAM=VALUE`` or ``--set PACK.PARAM=VALUE`` (a pack's shared parameter: every rule
    of the pack that reads it; as RULE.PARAM, that rule's value only) -> {rule id: {param: value}},
    checked against the rules' params."""
    by_id = {rule.id: rule for rule in rules}
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
            raise UsageError(f"--set '{text}': no rule '{owner}'{suggest(owner, [*by_id, *sharing])}")
        params = by_id[owner].params        # a pack's shared one too: then for this rule only
        if name not in params:
            known = ", ".join(params) or "none"
            raise UsageError(f"--set '{text}': rule '{owner}' has no parameter '{name}' (parameters: {known})")
        overrides.setdefault(owner, {})[name] = _typed(raw.strip(), params[name], text)
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
