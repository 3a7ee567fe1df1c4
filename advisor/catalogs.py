"""Op catalogs from ``knowledge/ops/``: which op types matter for which diagnosis."""

from __future__ import annotations

import re
from functools import cache

from .errors import KnowledgeError
from .resources import data_dir
from .yamlfile import load_yaml

_TYPE_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9]*?)(?:_\d+)?$")


@cache
def load_catalog(name: str) -> dict[str, str]:
    """Catalog ``name`` as {lower-case op type: reason}."""
    path = data_dir("knowledge") / "ops" / f"{name}.yaml"
    raw = load_yaml(path, KnowledgeError)
    ops = raw.get("ops") if isinstance(raw, dict) else None
    if not isinstance(ops, dict):
        raise KnowledgeError("an op catalog maps 'ops' to {OpType: reason}", path=path)
    return {str(op).lower(): str(reason) for op, reason in ops.items()}


def op_type_of_name(name: str) -> str:
    """Best guess of an op's type from an exported name such as ``Pow_12`` or ``layer1/ReduceMean``."""
    leaf = name.rsplit("/", 1)[-1]
    match = _TYPE_PREFIX.match(leaf)
    return match.group(1) if match else leaf
