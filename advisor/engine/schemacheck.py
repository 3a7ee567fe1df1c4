"""Structural checks driven by the published JSON Schemas (rules/schema/*.schema.json): the same
files pack authors point their editors at, read with the ``jsonschema`` library, each error placed
at the line and column our YAML loader recorded for the offending key. Semantic checks (fact fields,
templates, joins) stay hand-written in rulecheck.py and packs.py."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from ..resources import data_dir
from ..yamlfile import LineDict
from .conditions import suggest
from .rulemodel import Problem


@cache
def _validator(name: str) -> Any:
    """A Draft 2020-12 validator for ``<name>.schema.json``, resolving ``$ref`` to its sibling schemas.
    Imported here, on first use: a run whose packs come from the cache never pays for jsonschema."""
    import jsonschema
    from referencing import Registry, Resource

    folder = data_dir("rules") / "schema"
    resources = []
    for path in sorted(folder.glob("*.schema.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        resources.append((path.name, Resource.from_contents(schema)))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    schema = json.loads((folder / f"{name}.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema, registry=registry)


def schema_problems(document: Any, name: str, path: Path, skip: tuple[str, ...] = ()) -> list[Problem]:
    """Every place ``document`` breaks ``<name>.schema.json``, one clear line each, at its file:line:column.
    ``skip``: top-level keys checked elsewhere (e.g. a single-file pack's ``rules``)."""
    problems: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    errors = _validator(name).iter_errors(document)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        where = tuple(error.absolute_path)
        if where[:1] and where[0] in skip or where in seen:
            continue
        seen.add(where)
        line, column, key = _position(document, where, error)
        problems.append(Problem(path, line, column, _message(error, key)))
    return problems


def _position(document: Any, where: tuple[Any, ...], error: Any) -> tuple[int | None, int | None, str | None]:
    """(line, column) of the deepest mapping on the error's path, at the key the error is about."""
    node, parent, key = document, None, None
    for step in where:
        parent, key = node, step
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
    extra = _extra_key(error)
    if extra is not None and isinstance(node, LineDict):
        return (*node.where(extra), extra)
    target = parent if isinstance(parent, LineDict) and isinstance(key, str) else node
    if isinstance(target, LineDict):
        return (*target.where(key if target is parent else None), key if isinstance(key, str) else None)
    return None, None, key if isinstance(key, str) else None


def _extra_key(error: Any) -> str | None:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        return str(extra[0]) if extra else None
    return None


def _message(error: Any, key: str | None) -> str:
    place = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties" and key is not None:
        allowed = sorted(error.schema.get("properties", {}))
        return (f"unknown field '{key}'{' in ' + place if place else ''}{suggest(key, allowed)}"
                f" (allowed: {', '.join(allowed)})")
    text = " ".join(error.message.split())
    if len(text) > 200:
        text = text[:197] + "..."
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    text += f" ({hint})" if hint and error.validator in ("pattern", "type", "enum") else ""
    return f"'{place}': {text}" if place else text
