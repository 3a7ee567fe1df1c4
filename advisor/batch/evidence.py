"""The evidence lying beside a comparison result, found by convention: the model graph, the two runs'
dump folders and the build config that ``advisor run --graph --dumps --config`` would be given.

A nightly pipeline that writes ``runs/resnet50/result_<timestamp>.csv`` usually leaves the model and
the dumps in the same folder; ``advisor batch --scan`` picks them up so the index shows the verdicts
``advisor run`` gives with them (a generic "input mismatch" becomes "RGB/BGR swapped" with the dumps).
Documented names, first match wins, in the result's own folder (README "Nightly watch"):

===========  ===================================================================
graph        ``model.onnx``, else the one ``*.onnx``, else ``ge_proto_*_Build.txt``
golden       the folder ``golden`` (the reference run's dumps)
target       the folder ``target``, else ``npu`` (the target run's dumps)
config       ``build.json``, ``build.yaml``, ``build.yml``
===========  ===================================================================

``--evidence ROLE=GLOB`` (repeatable) or ``evidence: {ROLE: GLOB or [GLOB, ...]}`` in a manifest replace
a role's names (an empty GLOB turns the role off). A glob that matches several files is ambiguous and
matches none: the job then runs without that input rather than with a guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

ROLES = ("graph", "golden", "target", "config")
DEFAULT_PATTERNS: dict[str, tuple[str, ...]] = {
    "graph": ("model.onnx", "*.onnx", "ge_proto_*_Build.txt"),
    "golden": ("golden",),
    "target": ("target", "npu"),
    "config": ("build.json", "build.yaml", "build.yml"),
}
_FOLDER_ROLES = ("golden", "target")


@dataclass(frozen=True)
class Evidence:
    """What was found beside one result (None: nothing, or nothing unambiguous)."""

    graph: Path | None = None
    dumps: tuple[Path, Path] | None = None
    config: Path | None = None


def parse_patterns(items: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``ROLE=GLOB`` texts (``--evidence``) -> role -> globs, the later ones of a role added to it."""
    out: dict[str, list[str]] = {}
    for item in items:
        role, sep, glob = item.partition("=")
        role = role.strip()
        if not sep or role not in ROLES:
            raise UsageError(f"--evidence takes ROLE=GLOB with ROLE one of {', '.join(ROLES)}, not '{item}'")
        out.setdefault(role, [])
        if glob.strip():
            out[role].append(glob.strip())
    return {role: tuple(globs) for role, globs in out.items()}


def patterns(overrides: Mapping[str, Sequence[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """The documented names with ``overrides`` replacing a role's."""
    merged = dict(DEFAULT_PATTERNS)
    merged.update({role: tuple(globs) for role, globs in (overrides or {}).items()})
    return merged


def find_evidence(folder: Path, names: Mapping[str, Sequence[str]]) -> Evidence:
    """The evidence in ``folder`` by ``names`` (role -> globs, first unambiguous match wins); dumps only
    when both folders are there."""
    found = {role: _first(folder, names.get(role, ()), folder_wanted=role in _FOLDER_ROLES) for role in ROLES}
    dumps = (found["golden"], found["target"]) if found["golden"] and found["target"] else None
    return Evidence(graph=found["graph"], dumps=dumps, config=found["config"])


def _first(folder: Path, globs: Sequence[str], *, folder_wanted: bool) -> Path | None:
    for glob in globs:
        hits = sorted(p for p in folder.glob(glob) if (p.is_dir() if folder_wanted else p.is_file()))
        if len(hits) == 1:
            return hits[0].absolute()
    return None
