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
from ..text import suggest
from ..yamlfile import LineDict
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


LANGUAGE_KEYS = {"en", "zh"}
SKIPPED = {"oneOf"}          # said better by a semantic check (exactly one of emit / explain)
SAID_ELSEWHERE = {(("cases",), "minItems")}     # "needs one case that fires and one that stays silent"


def schema_problems(document: Any, name: str, path: Path, skip: tuple[str, ...] = (),
                    label: str | None = None) -> list[Problem]:
    """Every place ``document`` breaks ``<name>.schema.json``, one clear line each, at its file:line:column.
    ``skip``: top-level keys checked elsewhere (a rule's ``when`` by the condition compiler, its
    ``advice`` like the knowledge pages); ``label``: what the document is, for messages ("rule")."""
    problems: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    errors = _validator(name).iter_errors(document)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        where = tuple(error.absolute_path)
        if (where[:1] and where[0] in skip) or error.validator in SKIPPED or (where, error.validator) in seen \
                or (where, error.validator) in SAID_ELSEWHERE:
            continue
        seen.add((where, error.validator))
        line, column, key = _position(document, where, error)
        problems.append(Problem(path, line, column, _message(error, key, label or name)))
    return problems


def _position(document: Any, where: tuple[Any, ...], error: Any) -> tuple[int | None, int | None, str | None]:
    """(line, column) of the deepest mapping on the error's path, at the key the error is about (an item
    of a YAML list has no position of its own: its list's key stands for it)."""
    node, parent, key = document, None, None
    anchor: tuple[LineDict, str] | None = None
    for step in where:
        if isinstance(node, LineDict) and isinstance(step, str):
            anchor = (node, step)
        parent, key = node, step
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
    extra = _extra_key(error)
    if extra is not None and isinstance(node, LineDict):
        return (*node.where(extra), extra)
    if error.validator == "required" and isinstance(node, LineDict):
        return (*node.where(None), None)
    target = parent if isinstance(parent, LineDict) and isinstance(key, str) else node
    if isinstance(target, LineDict):
        return (*target.where(key if target is parent else None), key if isinstance(key, str) else None)
    if anchor is not None:
        return (*anchor[0].where(anchor[1]), anchor[1])
    return None, None, key if isinstance(key, str) else None


def _extra_key(error: Any) -> str | None:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        return str(extra[0]) if extra else None
    return None


def _what(path: tuple[Any, ...], label: str) -> str:
    """What the object at ``path`` is called: the document's label, 'case' for cases[2], 'emit'..."""
    if not path:
        return label
    if isinstance(path[-1], int) and len(path) > 1:
        return str(path[-2]).removesuffix("s")
    return ".".join(str(p) for p in path)


def _message(error: Any, key: str | None, label: str) -> str:
    path = tuple(error.absolute_path)
    place = ".".join(str(p) for p in path) or label
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("description")
    if error.validator == "additionalProperties" and key is not None:
        allowed = sorted(schema.get("properties", {}))
        if set(allowed) == LANGUAGE_KEYS:
            return (f"'{place}' has texts for en, zh only, not '{key}' (an unquoted comma in {{en: ..., zh: ...}} "
                    f"splits a text: quote it)")
        return f"unknown {_what(path, label)} field '{key}'{suggest(key, allowed)}"
    if error.validator == "required":
        missing = next((r for r in error.validator_value if r not in error.instance), "?")
        return f"{_what(path, label) if len(path) <= 2 else place} is missing '{missing}'"
    if error.validator == "enum":
        choices = [str(c) for c in error.validator_value]
        return f"{place} must be one of {', '.join(choices)}{suggest(str(error.instance), choices)}"
    if error.validator in ("pattern", "type"):
        expected = hint or (f"a {error.validator_value}" if error.validator == "type" else
                            f"text matching {error.validator_value}")
        return f"{place} must be {expected} (got {error.instance!r})"
    if error.validator in ("minimum", "maximum"):
        bound = "at least" if error.validator == "minimum" else "at most"
        return f"{place} must be {bound} {error.validator_value} (got {error.instance!r})"
    if error.validator == "minItems":
        return f"{place} needs at least {error.validator_value} item(s)"
    if error.validator == "minLength":
        return f"{place} must not be empty"
    text = " ".join(error.message.split())
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{place}: {text}"
