"""Bounds for every structured-text reader (YAML, JSON, TOML): a small file must not mean large work.

* ``MAX_DEPTH`` levels of nesting at most. Python's parsers and everything that walks their result
  recurse, so a few KB of ``[[[[...`` used to end in a RecursionError (exit 3) from ~250 YAML or ~1000
  JSON levels; real packs, manifests, configs and graphs nest fewer than 20 levels.
* ``MAX_EXPANDED`` size units at most once YAML aliases are expanded (see :mod:`advisor.yamlfile`):
  an alias bomb (billion laughs) loads cheaply as shared references and explodes when a consumer
  copies, dumps or walks it.

Each reader raises its caller's error class naming the file, so the CLI prints one line and exits 2.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from .errors import AdvisorError

MAX_DEPTH = 100
MAX_EXPANDED = 1_000_000


def too_deep(path: str | Path, error: type[AdvisorError], line: int | None = None) -> AdvisorError:
    return error(f"nested more than {MAX_DEPTH} levels deep: not a file advisor reads", path=path, line=line)


def check_depth(value: Any, path: str | Path, error: type[AdvisorError], depth: int = 1,
                line: int | None = None) -> Any:
    """``value`` (parsed JSON/TOML: dicts and lists) if it nests at most MAX_DEPTH levels, counted
    from the document's top: ``value`` is at level ``depth`` (a member read alone, advisor/jsonstream.py)."""
    stack = [(value, depth)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise too_deep(path, error, line)
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


def loads_json(text: str, path: str | Path, error: type[AdvisorError]) -> Any:
    """Parse JSON text read from ``path``: invalid JSON names the line and column, deep nesting is refused."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise too_deep(path, error) from None
    return check_depth(value, path, error)


def loads_toml(text: str, path: str | Path, error: type[AdvisorError]) -> dict[str, Any]:
    """Parse TOML text read from ``path``, with the same bounds."""
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"invalid TOML: {exc}", path=path) from None
    except RecursionError:
        raise too_deep(path, error) from None
    return check_depth(value, path, error)
