"""Paths as a shared report shows them: relative to the report's folder when the input is near it,
else by file name. A report mailed to a colleague or attached to an issue then names
``../runs/result.csv`` or ``result.csv``, not ``/home/alice/work/...``."""

from __future__ import annotations

import os
from pathlib import Path

# Diagnosis.inputs roles that hold paths (``format`` does not).
PATH_ROLES = ("comparison", "mapping", "golden_dumps", "target_dumps", "build_config", "simulation", "overflow",
              "graph", "fusion")
MAX_UP = 2                     # a relative path climbs at most this many folders, else the name is shown
PAIR = " vs "                  # two dump.json files compared by statistics: "BENCH vs TARGET"


def shown_path(text: str, base: Path | None) -> str:
    """``text`` relative to ``base`` (the output folder), or its name when that would climb more than
    MAX_UP folders or cross drives; unchanged without a base."""
    if base is None or not text:
        return text
    return PAIR.join(_one(part, base) for part in text.split(PAIR))


def _one(text: str, base: Path) -> str:
    path = Path(text)
    try:
        relative = os.path.relpath(path.absolute(), base.absolute())
    except ValueError:            # another drive (Windows)
        return path.name
    if Path(relative).parts.count("..") > MAX_UP:
        return path.name or text
    return Path(relative).as_posix()


def shown_inputs(inputs: dict[str, str], base: Path | None) -> dict[str, str]:
    """The run's inputs with their paths as :func:`shown_path` shows them."""
    return {role: shown_path(value, base) if role in PATH_ROLES and isinstance(value, str) else value
            for role, value in inputs.items()}
