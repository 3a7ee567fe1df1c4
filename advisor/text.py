"""Small text helpers every layer uses: the "did you mean" hint of an error message and a value
squeezed onto one line. Nothing here knows about comparisons, rules or reports."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def suggest(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'cosine'?)`` when one of ``choices`` is close to ``name``, else ``""``:
    appended to a message that names an unknown key, field, rule or job."""
    import difflib  # only when a message needs a hint: errors.py imports this module at startup

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def oneline(value: Any) -> str:
    """``value`` as text on one line: every run of whitespace (newlines too) becomes one space."""
    return " ".join(str(value).split())
