"""A parsed rule pack (and its problems) as JSON and back: what the pack cache stores, so that loading an
entry only ever builds data (advisor/cachefiles.py says why: a cache must not be able to run code, which
unpickling can).

JSON holds dicts with string keys, lists, strings, numbers, booleans and null; everything else a parsed
pack holds is tagged: ``{"~": tag, ...}``. Objects are rebuilt only as the classes listed in
``CLASSES`` (the pack model's dataclasses), from their declared fields; an unknown tag or class, or a
field that is not the class's, makes the entry unreadable (parsed again), never an object of another
kind. A rule's ``fields`` (the fact schema it was checked against) is not stored: the caller gives it
back, as the key of the entry already covers it.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..yamlfile import LineDict
from .rulemodel import Emit, Problem, Rule, RulePack, Setting

CLASSES = {cls.__name__: cls for cls in (RulePack, Rule, Emit, Setting, Problem)}
SKIPPED = {"fields"}                  # Rule.fields: the run's schema, given back by the caller


class Unreadable(ValueError):
    """An entry that is not what this module writes."""


def dumps(value: Any) -> bytes:
    """``value`` as JSON bytes; TypeError for a value this codec does not know (then nothing is cached)."""
    return json.dumps(_encode(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def loads(data: bytes, fields: Mapping[str, Any]) -> Any:
    """The value :func:`dumps` stored; each Rule gets ``fields``. Unreadable when it is not such a value.
    Tagged objects are rebuilt by json's own parser as it closes each object (``object_hook``), so
    plain lists and strings are never walked in Python again."""
    try:
        return json.loads(data, object_hook=lambda obj: _rebuilt(obj, fields))
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise Unreadable(str(exc)) from None


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, LineDict):
        return {"~": "L", "i": [[_encode(k), _encode(v)] for k, v in value.items()], "p": list(value.position),
                "k": {k: list(v) for k, v in getattr(value, "key_positions", {}).items()}}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k != "~" for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {"~": "d", "i": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"~": "t", "i": [_encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"~": "s", "i": [_encode(v) for v in value]}
    if isinstance(value, Path):
        return {"~": "p", "v": str(value)}
    if isinstance(value, datetime.datetime):
        return {"~": "dt", "v": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"~": "da", "v": value.isoformat()}
    if isinstance(value, bytes):
        return {"~": "b", "v": base64.b64encode(value).decode("ascii")}
    if dataclasses.is_dataclass(value) and CLASSES.get(type(value).__name__) is type(value):
        return {"~": "c", "c": type(value).__name__,
                "f": {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                      if f.name not in SKIPPED}}
    raise TypeError(f"the pack cache does not store {type(value).__name__}")


def _rebuilt(value: dict[str, Any], fields: Mapping[str, Any]) -> Any:
    """One JSON object, its members already rebuilt: a plain dict, or the tagged value it stands for."""
    tag = value.get("~")
    if tag is None:
        return value
    if tag == "L":
        mapping = LineDict((k, v) for k, v in value["i"])
        mapping.position = tuple(value["p"])
        mapping.key_positions = {str(k): tuple(v) for k, v in value["k"].items()}
        return mapping
    if tag == "d":
        return {k: v for k, v in value["i"]}
    if tag == "t":
        return tuple(value["i"])
    if tag == "s":
        return set(value["i"])
    if tag in ("p", "dt", "da", "b"):
        text = str(value["v"])
        return {"p": Path, "dt": datetime.datetime.fromisoformat, "da": datetime.date.fromisoformat,
                "b": base64.b64decode}[tag](text)
    if tag == "c":
        cls = CLASSES[value["c"]]
        known = {f.name for f in dataclasses.fields(cls) if f.init} - SKIPPED
        if not isinstance(value["f"], dict) or not set(value["f"]) <= known:
            raise ValueError(f"unknown fields of {cls.__name__}")
        made = cls(**value["f"])
        if isinstance(made, Rule):
            made.fields = fields
        return made
    raise ValueError(f"unknown tag {tag!r}")

