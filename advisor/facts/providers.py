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
from typing import TYPE_CHECKING, Any

from ..errors import EngineError
from ..ingest.table import ComparisonTable
from ..plugins import guarded
from .builder import clean_fact

if TYPE_CHECKING:
    from ..engine.registry import Registry

ENTRY_POINT_GROUP = "advisor.fact_providers"


@dataclass
class LoadedProvider:
    name: str
    dist: str
    provider: Any

    @property
    def kind(self) -> str:
        return self.provider.kind


def load_providers(registry: Registry) -> tuple[list[LoadedProvider], list[str]]:
    """The installed providers, their fact kinds added to the run's ``registry``; (providers, warnings)."""
    providers: list[LoadedProvider] = []
    warnings: list[str] = []
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = f"{entry.dist.name} {entry.dist.version}" if entry.dist else "unknown distribution"
        provider, error = guarded(entry.load)
        if error is None:
            _, error = guarded(lambda provider=provider, entry=entry: _register(registry, entry.name, provider))
        if error is not None:
            warnings.append(f"fact provider '{entry.name}' ({dist}) skipped: {error}")
            continue
        providers.append(LoadedProvider(entry.name, dist, provider))
    return providers, warnings


def _register(registry: Registry, name: str, provider: Any) -> None:
    if not callable(getattr(provider, "facts", None)):
        raise TypeError("needs a facts(table, network) function")
    registry.add_fact_kind(getattr(provider, "kind", None), getattr(provider, "fields", None), name)


def provided_facts(providers: list[LoadedProvider], table: ComparisonTable, network: dict[str, Any],
                   registry: Registry) -> list[dict[str, Any]]:
    facts: list[dict[str, Any]] = []
    for loaded in providers:
        allowed = registry.fields[loaded.kind]
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
