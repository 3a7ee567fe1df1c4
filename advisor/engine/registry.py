"""What one run knows: the fact schema (built-in kinds plus those installed fact providers add) and
the advice pages (built-in plus those its rule packs carry inline).

Loading providers and packs fills a ``Registry`` made for the run; validation, the engine and the
report read that object and nothing module-level, so two runs in one process (the jobs of a batch,
the tests) never see each other's packs or providers, and whether a pack validates never depends
on what was loaded before it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..advice import AdviceBook
from ..facts.schema import BOOL, FACT_FIELDS, NUMBER, STRING

FieldTable = Mapping[str, Mapping[str, tuple[str, str]]]     # fact kind -> field -> (type, description)
FIELD_TYPES = (BOOL, NUMBER, STRING)


@dataclass
class Registry:
    fields: dict[str, dict[str, tuple[str, str]]] = field(
        default_factory=lambda: {kind: dict(table) for kind, table in FACT_FIELDS.items()})
    advice: AdviceBook = field(default_factory=AdviceBook)
    providers: dict[str, str] = field(default_factory=dict)   # fact kind a provider added -> provider name

    def add_fact_kind(self, kind: str, fields: Mapping[str, tuple[str, str]], owner: str) -> None:
        """A fact provider's kind and fields (TypeError, said as the provider's fault, when it clashes)."""
        if not isinstance(kind, str) or not kind.isidentifier() or kind != kind.lower():
            raise TypeError("needs a lower-case 'kind'")
        if not isinstance(fields, Mapping) or not all(
                isinstance(v, tuple) and len(v) == 2 and v[0] in FIELD_TYPES for v in fields.values()):
            raise TypeError("'fields' maps names to (bool|number|string, description)")
        if kind in self.fields and self.providers.get(kind) != owner:
            raise TypeError(f"fact kind '{kind}' already exists")
        self.fields[kind] = {"id": (STRING, "fact id"), "fact": (STRING, f"always '{kind}'"), **fields}
        self.providers[kind] = owner

    def schema_digest(self) -> str:
        """A digest of the fact schema: a pack validated against one schema is cached under it."""
        return schema_digest(self.fields)


def schema_digest(fields: FieldTable) -> str:
    text = json.dumps({k: {f: list(v) for f, v in t.items()} for k, t in fields.items()}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def describe(fields: FieldTable, kind: str | None = None) -> list[tuple[str, str, str, str]]:
    """(kind, field, type, description) rows of the schema, or of one kind."""
    kinds = [kind] if kind is not None else list(fields)
    return [(k, name, spec[0], spec[1]) for k in kinds for name, spec in fields[k].items()]

