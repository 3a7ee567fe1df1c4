"""``fusion_result.json`` (written by ATC and by torch_npu/GE at graph build) -> ``FusionReport``.

Two layouts: a list of sessions (current) and one session as a bare dict (older CANN). A session is
``{"session_and_graph_id": "0_11", "graph_fusion": {pass: counts}, "ub_fusion": {pass: counts}}``
with counts ``{"match_times": "3", "effect_times": "1"}`` (numbers as strings; newer files add
``repository_hit_times``). A pass *took effect* when ``effect_times`` > 0: it matched and rewrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from advisor.errors import InputFormatError

KINDS = ("graph_fusion", "ub_fusion")
SESSION_KEYS = frozenset({"session_and_graph_id", *KINDS})


@dataclass(frozen=True, slots=True)
class PassCount:
    """One pass in one session: how often its pattern matched and how often it rewrote the graph."""

    session: str
    kind: str          # graph_fusion or ub_fusion
    name: str
    match_times: int
    effect_times: int
    repository_hit_times: int | None = None


@dataclass
class FusionReport:
    """Every pass count of a fusion_result.json, in file order, with totals per pass."""

    counts: list[PassCount]
    sessions: list[str]
    source: Path | None = None
    layout: str = "sessions"   # "sessions" (a list) or "single" (the older bare dict)
    _totals: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        totals: dict[str, list[int]] = {}
        for c in self.counts:
            total = totals.setdefault(c.name, [0, 0])
            total[0] += c.match_times
            total[1] += c.effect_times
        self._totals = {name: (m, e) for name, (m, e) in totals.items()}

    @property
    def passes(self) -> list[str]:
        """Every pass name, first appearance first."""
        return list(self._totals)

    def match_times(self, name: str) -> int:
        return self._totals.get(name, (0, 0))[0]

    def effect_times(self, name: str) -> int:
        """Total rewrites by ``name`` over all sessions and both kinds (0 when absent)."""
        return self._totals.get(name, (0, 0))[1]

    def effective_passes(self) -> dict[str, int]:
        """Passes that took effect -> total effect_times, most effective first."""
        effective = {name: e for name, (_, e) in self._totals.items() if e > 0}
        return dict(sorted(effective.items(), key=lambda kv: (-kv[1], kv[0])))

    def matched_without_effect(self) -> dict[str, int]:
        """Passes whose pattern matched but never rewrote -> total match_times."""
        return {name: m for name, (m, e) in self._totals.items() if m > 0 and e == 0}

    def kinds_of(self, name: str) -> set[str]:
        return {c.kind for c in self.counts if c.name == name}

    def by_session(self, session: str) -> list[PassCount]:
        return [c for c in self.counts if c.session == session]

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd  # here: advisor compare reads the passes and needs no table

        return pd.DataFrame({
            "session": pd.array([c.session for c in self.counts], dtype="string"),
            "kind": pd.array([c.kind for c in self.counts], dtype="string"),
            "pass_name": pd.array([c.name for c in self.counts], dtype="string"),
            "match_times": pd.array([c.match_times for c in self.counts], dtype="int64"),
            "effect_times": pd.array([c.effect_times for c in self.counts], dtype="int64"),
            "repository_hit_times": pd.array([c.repository_hit_times for c in self.counts], dtype="Int64"),
        })


def is_fusion_result(document: Any) -> bool:
    """A list of session dicts, or one session dict (judged by its keys)."""
    if isinstance(document, dict):
        return bool(SESSION_KEYS & document.keys())
    return isinstance(document, list) and all(
        isinstance(s, dict) and SESSION_KEYS & s.keys() for s in document)


def fusion_report(document: Any, path: Path) -> FusionReport:
    """An already loaded fusion_result.json document -> FusionReport."""
    if not is_fusion_result(document):
        found = type(document).__name__
        if isinstance(document, dict):
            found = "an object with keys " + ", ".join(sorted(document)[:6])
        raise InputFormatError(f"not a fusion_result.json: expected a list of sessions with graph_fusion/"
                               f"ub_fusion maps (or one such session object), found {found}", path=path)
    layout = "single" if isinstance(document, dict) else "sessions"
    sessions = [document] if isinstance(document, dict) else document
    counts: list[PassCount] = []
    session_ids: list[str] = []
    for position, session in enumerate(sessions):
        session_id = str(session.get("session_and_graph_id", position))
        session_ids.append(session_id)
        for kind in KINDS:
            counts.extend(_counts(session.get(kind), session_id, kind, path))
    return FusionReport(counts=counts, sessions=session_ids, source=path, layout=layout)


def _counts(passes: Any, session: str, kind: str, path: Path) -> Iterable[PassCount]:
    if passes is None:
        return []
    if not isinstance(passes, dict):
        raise InputFormatError(f"session {session}: {kind} is not a map of pass name to counts", path=path,
                               field=kind)
    out = []
    for name, numbers in passes.items():
        where = f"{kind}.{name}"
        if not isinstance(numbers, dict):
            raise InputFormatError(f"session {session}: pass {name} has no counts object", path=path, field=where)
        out.append(PassCount(session=session, kind=kind, name=name,
                             match_times=_count(numbers, "match_times", session, where, path),
                             effect_times=_count(numbers, "effect_times", session, where, path),
                             repository_hit_times=_count(numbers, "repository_hit_times", session, where, path,
                                                         optional=True)))
    return out


def _count(numbers: dict, key: str, session: str, where: str, path: Path, optional: bool = False) -> Any:
    if key not in numbers:
        if optional:
            return None
        raise InputFormatError(f"session {session}: {key} is missing", path=path, field=where)
    value = numbers[key]
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise InputFormatError(f"session {session}: {key} is {value!r}, not a whole number", path=path,
                               field=where) from None
    if count < 0 or isinstance(value, bool):
        raise InputFormatError(f"session {session}: {key} is {value!r}, not a count", path=path, field=where)
    return count
