"""Which rule packs a run uses: the built-in packs under rules/, plus the user's."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import RulePackError, UsageError
from ..resources import data_dir
from .conditions import suggest
from .packs import Rule, RulePack, load_pack


def builtin_pack_paths() -> list[Path]:
    root = data_dir("rules")
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "pack.yaml").is_file())


def load_packs(extra: Iterable[Path] = (), builtin: bool = True) -> list[RulePack]:
    paths = (builtin_pack_paths() if builtin else []) + [Path(p) for p in extra]
    packs = [load_pack(path) for path in paths]
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
    return packs


def parse_param_overrides(texts: Iterable[str], rules: list[Rule]) -> dict[str, dict[str, Any]]:
    """``--set RULE.PARAM=VALUE`` -> {rule id: {param: value}}, checked against the rules' params."""
    by_id = {rule.id: rule for rule in rules}
    overrides: dict[str, dict[str, Any]] = {}
    for text in texts:
        key, sep, raw = text.partition("=")
        rule_id, dot, name = key.strip().rpartition(".")
        if not sep or not dot:
            raise UsageError(f"--set '{text}': expected RULE.PARAM=VALUE, e.g. problem-node.min_confidence=0.7")
        if rule_id not in by_id:
            raise UsageError(f"--set '{text}': no rule '{rule_id}'{suggest(rule_id, list(by_id))}")
        params = by_id[rule_id].params
        if name not in params:
            known = ", ".join(params) or "none"
            raise UsageError(f"--set '{text}': rule '{rule_id}' has no parameter '{name}' (parameters: {known})")
        overrides.setdefault(rule_id, {})[name] = _typed(raw.strip(), params[name], text)
    return overrides


def _typed(raw: str, default: Any, text: str) -> Any:
    if isinstance(default, bool):
        if raw.lower() not in ("true", "false"):
            raise UsageError(f"--set '{text}': expected true or false")
        return raw.lower() == "true"
    if isinstance(default, (int, float)):
        try:
            return type(default)(raw) if isinstance(default, int) and raw.lstrip("-").isdigit() else float(raw)
        except ValueError:
            raise UsageError(f"--set '{text}': '{raw}' is not a number") from None
    return raw
