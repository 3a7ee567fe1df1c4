""""What would sharpen this": the inputs a run did not have that would change or refine its diagnosis.

Without ``--dumps`` a channel swap reads as a generic "input mismatch"; without ``--graph`` where error
enters is judged on the op before it in execution order; statistics and checksums only suggest what a
tensor-mode dump measures. The hints, their conditions and their words are data
(``knowledge/sharpen.yaml``); this module only picks those that apply to a diagnosis. The reports show
them under the verdict and ``advisor run`` prints them after the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from ..advice import LANGUAGES
from ..diagnosis import CONSISTENT, Diagnosis
from ..errors import KnowledgeError
from ..resources import data_dir
from ..yamlfile import load_yaml


@dataclass(frozen=True)
class Hint:
    """One input that would sharpen the diagnosis: its id, the exact option and what it would tell."""

    id: str
    option: str
    text: dict[str, str]


@cache
def _hints() -> tuple[tuple[Hint, dict[str, Any]], ...]:
    path = data_dir("knowledge") / "sharpen.yaml"
    raw = load_yaml(path, KnowledgeError)
    entries = raw.get("hints") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise KnowledgeError("the sharpen list maps 'hints' to a list of entries", path=path)
    out = []
    for entry in entries:
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("id", "option", *LANGUAGES)):
            raise KnowledgeError(f"each hint needs id, option, {' and '.join(LANGUAGES)} as text", path=path)
        when = {key: tuple(str(v) for v in entry.get(key, ())) for key in ("missing", "verdicts", "formats")}
        out.append((Hint(entry["id"], entry["option"], {lang: " ".join(entry[lang].split()) for lang in LANGUAGES}),
                    when))
    return tuple(out)


def sharpen_hints(diagnosis: Diagnosis) -> list[Hint]:
    """The hints that apply: the run lacks their input, its format and verdict are ones they refine. One
    hint per option (the first listed)."""
    verdict = diagnosis.verdict            # read from the findings, as every report states it
    given = {role for role, value in diagnosis.inputs.items() if value}
    fmt = str(diagnosis.inputs.get("format") or "")
    chosen: dict[str, Hint] = {}
    for hint, when in _hints():
        if set(when["missing"]) & given:
            continue
        if when["verdicts"] and verdict not in when["verdicts"]:
            continue
        if not when["verdicts"] and verdict == CONSISTENT:
            continue
        if when["formats"] and not any(fnmatchcase(fmt, pattern) for pattern in when["formats"]):
            continue
        chosen.setdefault(hint.option, hint)
    return list(chosen.values())
