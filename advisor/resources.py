"""Where the data that ships with advisor lives, and where advisor keeps what it can work out again.

`rules/`, `knowledge/` and `reports/` sit at the top of the repository so that domain experts find
them; the wheel carries them as `advisor/_data/<name>` (see pyproject.toml). A source checkout
(editable install, tests) uses the top-level folders directly.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """Folder of shipped data: ``rules``, ``knowledge`` or ``reports``."""
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"advisor installation is incomplete: no '{name}' data folder")


def cache_dir(kind: str) -> Path | None:
    """The folder of one kind of cached work (``packs``: parsed rule packs, ``templates``: compiled
    report templates): ``$ADVISOR_CACHE_DIR/<kind>``, else ``$XDG_CACHE_HOME/advisor/<kind>``, else
    ``~/.cache/advisor/<kind>``; None when ``ADVISOR_CACHE_DIR`` is ``off`` (or ``0``, ``none``, empty).
    A cache only ever saves time: what reads or writes one skips a folder it cannot use."""
    chosen = os.environ.get("ADVISOR_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "none") else Path(chosen) / kind
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:   # no home folder to be found (a container's user without one): no cache
            return None
    return Path(base) / "advisor" / kind
