"""Fact providers: Python plugins that add new kinds of facts (a probe of one's own) for rules to match.

An installed package declares, in its pyproject.toml::

    [project.entry-points."advisor.fact_providers"]
    layer_stats = "my_probe:provider"

``provider`` is an object (or a module) with
* ``kind``: the fact kind rules name (``fact: layer_stats``), new and lower-case;
* ``fields``: {field: (type, description)} with type ``bool``, ``number`` or ``string``;
* ``facts(table, network) -> list[dict]``: the facts for one comparison (``table`` is the
  ComparisonTable, ``network`` the network fact). Each fact needs a unique ``id``; ``fact`` is set
  to ``kind``. Keep them few: aggregate with pandas, as the built-in builders do.
A provider that fails to load is skipped with a warning naming its distribution; one that breaks
while building facts, or returns undeclared fields, stops the run with an error naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Any

from ..errors import EngineError
from ..ingest.table import ComparisonTable
from .builder import clean_fact
from .schema import BOOL, FACT_FIELDS, NUMBER, STRING

ENTRY_POINT_GROUP = "advisor.fact_providers"
_registered: dict[str, str] = {}       # kind -> provider name, for the fields added to FACT_FIELDS


@dataclass
class LoadedProvider:
    name: str
    dist: str
    provider: Any

    @property
    def kind(self) -> str:
        return self.provider.kind


def load_providers() -> tuple[list[LoadedProvider], list[str]]:
    providers: list[LoadedProvider] = []
    warnings: list[str] = []
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = f"{entry.dist.name} {entry.dist.version}" if entry.dist else "unknown distribution"
        try:
            provider = entry.load()
            _register(entry.name, provider)
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, never fatal
            warnings.append(f"fact provider '{entry.name}' ({dist}) skipped: {type(exc).__name__}: {exc}")
            continue
        providers.append(LoadedProvider(entry.name, dist, provider))
    return providers, warnings


def _register(name: str, provider: Any) -> None:
    kind, fields = getattr(provider, "kind", None), getattr(provider, "fields", None)
    if not isinstance(kind, str) or not kind.isidentifier() or kind != kind.lower():
        raise TypeError("needs a lower-case 'kind'")
    if not isinstance(fields, dict) or not all(
            isinstance(v, tuple) and len(v) == 2 and v[0] in (BOOL, NUMBER, STRING) for v in fields.values()):
        raise TypeError("'fields' maps names to (bool|number|string, description)")
    if not callable(getattr(provider, "facts", None)):
        raise TypeError("needs a facts(table, network) function")
    if kind in FACT_FIELDS and _registered.get(kind) != name:
        raise TypeError(f"fact kind '{kind}' already exists")
    FACT_FIELDS[kind] = {"id": (STRING, "fact id"), "fact": (STRING, f"always '{kind}'"), **fields}
    _registered[kind] = name


def provided_facts(providers: list[LoadedProvider], table: ComparisonTable,
                   network: dict[str, Any]) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    for loaded in providers:
        allowed = FACT_FIELDS[loaded.kind]
        try:
            produced = list(loaded.provider.facts(table, dict(network)))
        except Exception as exc:  # noqa: BLE001 - named, then stops the run
            raise EngineError(f"fact provider '{loaded.name}' ({loaded.dist}) failed: "
                              f"{type(exc).__name__}: {exc}") from None
        for raw in produced:
            fact = clean_fact({**raw, "fact": loaded.kind})
            unknown = set(fact) - set(allowed)
            if unknown or "id" not in fact:
                problem = f"undeclared fields {sorted(unknown)}" if unknown else "a fact without 'id'"
                raise EngineError(f"fact provider '{loaded.name}' ({loaded.dist}) returned {problem}")
            fact["id"] = f"{loaded.kind}:{fact['id']}"
            facts.append(fact)
    return facts
