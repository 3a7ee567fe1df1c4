"""Where the data that ships with advisor lives.

`rules/`, `knowledge/` and `reports/` sit at the top of the repository so that domain experts find
them; the wheel carries them as `advisor/_data/<name>` (see pyproject.toml). A source checkout
(editable install, tests) uses the top-level folders directly.
"""

from __future__ import annotations

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
