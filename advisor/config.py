"""Project settings: ``advisor.toml`` or ``[tool.advisor]`` in ``pyproject.toml``.

Found in the current folder or the nearest parent that has one (like ruff and pytest do), or named
with ``--project-config``. Command-line options add to it (lists) or override it (single values)::

    rules = ["team-rules/"]            # extra rule packs, relative to the settings file
    builtin_rules = true
    disable = ["single-point-deviation"]
    input_nodes = ["images"]
    backends = ["ascend"]              # remedy files for these backends (like --backend; "all" for every one)
    [severity]
    fp16-overflow-masked = "error"
    [thresholds]
    "float16.cosine" = 0.98            # same keys as --threshold
    [params]
    "problem-node.min_confidence" = 0.7
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError
from .inputfiles import MAX_SETTINGS_BYTES, read_input_text
from .nesting import loads_toml
from .remedy import parse_backends
from .text import suggest

KEYS = {"rules", "builtin_rules", "disable", "severity", "thresholds", "params", "input_nodes", "backends"}


@dataclass
class ProjectConfig:
    source: Path | None = None
    rules: list[Path] = field(default_factory=list)
    builtin_rules: bool = True
    disable: list[str] = field(default_factory=list)
    severity: dict[str, str] = field(default_factory=dict)
    thresholds: list[str] = field(default_factory=list)     # "DTYPE.METRIC=VALUE" like --threshold
    params: list[str] = field(default_factory=list)         # "RULE.PARAM=VALUE" like --set
    input_nodes: list[str] = field(default_factory=list)
    backends: tuple[str, ...] = ()                          # like --backend; () = inferred


def find_config(start: Path) -> Path | None:
    for folder in (start.resolve(), *start.resolve().parents):
        if (folder / "advisor.toml").is_file():
            return folder / "advisor.toml"
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "tool" in (data := _read(pyproject)) and "advisor" in data["tool"]:
            return pyproject
    return None


def load_config(path: Path | None = None, start: Path | None = None) -> ProjectConfig:
    """The settings at ``path``, else the nearest ones above ``start`` (default: the current folder)."""
    if path is None:
        path = find_config(start or Path.cwd())
        if path is None:
            return ProjectConfig()
    elif not path.is_file():
        raise UsageError("project settings file not found", path=path)
    data = _read(path)
    table = data.get("tool", {}).get("advisor", {}) if path.name == "pyproject.toml" else data
    section = "[tool.advisor]" if path.name == "pyproject.toml" else "advisor.toml"
    if not isinstance(table, dict):
        raise UsageError(f"{section} must be a table", path=path)
    for key in table:
        if key not in KEYS:
            raise UsageError(f"unknown setting '{key}'{suggest(key, sorted(KEYS))} in {section}", path=path,
                             field=key)
    base = path.parent
    return ProjectConfig(
        source=path,
        rules=[base / p for p in _strings(table, "rules", path)],
        builtin_rules=_bool(table, "builtin_rules", path),
        disable=_strings(table, "disable", path),
        severity={str(k): str(v) for k, v in _table(table, "severity", path).items()},
        thresholds=[f"{k}={v}" for k, v in _table(table, "thresholds", path).items()],
        params=[f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                for k, v in _table(table, "params", path).items()],
        input_nodes=_strings(table, "input_nodes", path),
        backends=_backends(table, path, section),
    )


def _read(path: Path) -> dict[str, Any]:
    text = read_input_text(path, UsageError, max_bytes=MAX_SETTINGS_BYTES, what="settings file")
    return loads_toml(text, path, UsageError)


def _strings(table: dict[str, Any], key: str, path: Path) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"'{key}' must be a list of strings", path=path, field=key)
    return value


def _backends(table: dict[str, Any], path: Path, section: str) -> tuple[str, ...]:
    try:
        return parse_backends(_strings(table, "backends", path), source=f"'backends' in {section}")
    except UsageError as exc:
        raise UsageError(exc.message, path=path, field="backends") from None


def _bool(table: dict[str, Any], key: str, path: Path) -> bool:
    value = table.get(key, True)
    if not isinstance(value, bool):
        raise UsageError(f"'{key}' must be true or false", path=path, field=key)
    return value


def _table(table: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"'{key}' must be a table", path=path, field=key)
    return value
