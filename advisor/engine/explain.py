"""Explanations kept as groups, not as pairs: "every cause of this set explains every symptom of that
set" (or every one on the right side of an ordering), in space linear in the findings.

An explain rule whose symptom is joined to its cause by nothing (``forward-explains-backward``: every
forward root cause explains every backward one) or by one ordering comparison
(``index: {gt: $cause.index}``) explains the product of its causes and symptoms, or half of it. With
a root cause per layer of a large model that is millions of pairs (649k at 100k rows). So the engine
matches each pattern alone (the candidates of :class:`ExplainJoin`) and hands ranking one
:class:`ExplanationGroup` per rule alternative; ranking asks each group for the first cause, in rank
order, that is active and explains a symptom (:class:`GroupRanking`), which needs no pair either.
The pairs a group stands for are the ones the rule would have matched: a fact never explains itself,
a missing or non-numeric key never compares (as ``Guard.holds``).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .conditions import Guard

Fact = dict[str, Any]
# Guard operator -> the relation "cause key REL symptom key" it states, seen from either side.
_FLIP = {"$lt": "$gt", "$lte": "$gte", "$gt": "$lt", "$gte": "$lte"}
RELATIONS: dict[str, Callable[[Any, Any], bool]] = {
    "$lt": operator.lt, "$lte": operator.le, "$gt": operator.gt, "$gte": operator.ge}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and value == value


@dataclass
class ExplanationGroup:
    """Every cause explains every symptom (``relation`` None), or those whose keys satisfy ``cause_key
    relation symptom_key``; never a fact itself. Keys are numbers (the facts without one are left out)."""

    rule: str
    causes: list[tuple[str, Any]]          # (finding id, key), in the order they were matched
    symptoms: list[tuple[str, Any]]
    relation: str | None = None
    _sorted: list[Any] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._sorted = sorted(key for _, key in self.causes) if self.relation else []

    def explains(self, cause_key: Any, symptom_key: Any) -> bool:
        return self.relation is None or RELATIONS[self.relation](cause_key, symptom_key)

    def count_for(self, symptom_key: Any) -> int:
        """How many causes explain a symptom with this key (itself included, if it is a cause)."""
        keys = self._sorted
        if self.relation is None:
            return len(self.causes)
        if self.relation == "$lt":
            return bisect.bisect_left(keys, symptom_key)
        if self.relation == "$lte":
            return bisect.bisect_right(keys, symptom_key)
        if self.relation == "$gt":
            return len(keys) - bisect.bisect_right(keys, symptom_key)
        return len(keys) - bisect.bisect_left(keys, symptom_key)

    def explained(self) -> Iterator[tuple[str, int]]:
        """Each symptom with the number of causes that explain it (itself left out)."""
        own = dict(self.causes)
        for symptom, key in self.symptoms:
            count = self.count_for(key)
            if symptom in own and self.explains(own[symptom], key):
                count -= 1
            yield symptom, count

    def count(self) -> int:
        return sum(count for _, count in self.explained())

    def pairs(self) -> Iterator[tuple[str, str, str]]:
        """Every (cause, symptom, rule) the group stands for: for tests and small results only."""
        for symptom, key in self.symptoms:
            for cause, cause_key in self.causes:
                if cause != symptom and self.explains(cause_key, key):
                    yield cause, symptom, self.rule


class ExplainJoin:
    """The candidates of a two-pattern explain rule's cause and symptom, gathered over the rounds;
    the rule's matches are the group they make (:meth:`group`), never listed pair by pair."""

    def __init__(self, cause: str, symptom: str, guard: Guard | None) -> None:
        self.cause, self.symptom = cause, symptom
        self.relation: str | None = None
        self.fields = {cause: "", symptom: ""}
        if guard is not None:
            self.fields = {guard.alias: guard.field, guard.other_alias: guard.other_field}
            # "symptom.index > cause.index" is "cause.index < symptom.index"
            self.relation = guard.operator if guard.alias == cause else _FLIP[guard.operator]
        self.found: dict[str, dict[str, Any]] = {cause: {}, symptom: {}}

    @staticmethod
    def fits(aliases: list[str], explain: dict[str, str], guards: list[Guard]) -> Guard | None | bool:
        """The one guard to group by (None: no guard), or False when this join cannot be a group."""
        if sorted(aliases) != sorted((explain["cause"], explain["symptom"])) or len(aliases) != 2 or len(guards) > 1:
            return False
        if not guards:
            return None
        guard = guards[0]
        return guard if guard.operator in _FLIP and {guard.alias, guard.other_alias} == set(aliases) else False

    def add(self, alias: str, fact: Fact) -> None:
        name = self.fields[alias]
        key = fact.get(name) if name else 0
        if _number(key):
            self.found[alias].setdefault(fact["id"], key)

    def matches(self) -> Iterator[dict[str, Fact]]:
        return iter(())     # the matches are the group

    def group(self, rule: str) -> ExplanationGroup:
        return ExplanationGroup(rule, list(self.found[self.cause].items()), list(self.found[self.symptom].items()),
                                self.relation)


class GroupRanking:
    """For ranking (ranking.rank_findings): per symptom, the earliest-activated cause of each of its
    groups that explains it. Findings are activated in rank order, so within a group the earliest
    activated cause that explains a symptom is the leading one; for an ordering it is found by
    bisection in the running minimum (or maximum) of the activated causes' keys."""

    def __init__(self, groups: list[ExplanationGroup], known: set[str]) -> None:
        self.given = groups
        # causes that are no finding explain nothing (as ranking ignores such pairs)
        kept = [ExplanationGroup(g.rule, [(c, k) for c, k in g.causes if c in known], g.symptoms, g.relation)
                for g in groups]
        self.groups = [g for g in kept if g.causes and g.symptoms]
        self.of_symptom: dict[str, list[tuple[int, Any]]] = {}
        self.of_cause: dict[str, list[tuple[int, Any]]] = {}
        self.expected: list[list[tuple[str, Any]]] = [[] for _ in self.groups]
        for number, group in enumerate(self.groups):
            for cause, key in group.causes:
                self.of_cause.setdefault(cause, []).append((number, key))
            for symptom, key in group.symptoms:
                self.of_symptom.setdefault(symptom, []).append((number, key))
        self.active: list[list[str]] = [[] for _ in self.groups]     # per group: activated causes
        self.running: list[list[Any]] = [[] for _ in self.groups]    # and their keys' running min / max

    def explained(self) -> set[str]:
        """The symptoms some cause other than themselves explains (a finding or not)."""
        return {symptom for group in self.given for symptom, count in group.explained() if count > 0}

    def expect(self, expected: set[str]) -> None:
        """Which causes are expectations (see ranking): they may explain a symptom ranked before them."""
        self.expected = [[(c, k) for c, k in group.causes if c in expected] for group in self.groups]

    def activate(self, finding: str) -> None:
        for number, key in self.of_cause.get(finding, ()):
            running = self.running[number]
            relation = self.groups[number].relation
            if running and relation in ("$lt", "$lte"):
                key = min(key, running[-1])
            elif running and relation in ("$gt", "$gte"):
                key = max(key, running[-1])
            self.active[number].append(finding)
            running.append(key)

    def leading(self, symptom: str) -> list[str]:
        """Per group of ``symptom``, the earliest-activated cause that explains it."""
        found = []
        for number, key in self.of_symptom.get(symptom, ()):
            active, running = self.active[number], self.running[number]
            relation = self.groups[number].relation
            if not active:
                continue
            if relation is None:
                at = 0
            else:   # running is non-increasing (lt, lte) or non-decreasing (gt, gte)
                at = _first_true(len(running), lambda i: RELATIONS[relation](running[i], key))   # noqa: B023
            if at < len(active):
                found.append(active[at])
        return found

    def fallback(self, symptom: str) -> list[str]:
        """The expected causes (:meth:`expect`) of each group of ``symptom`` that explain it."""
        found = []
        for number, key in self.of_symptom.get(symptom, ()):
            group = self.groups[number]
            found += [c for c, k in self.expected[number] if c != symptom and group.explains(k, key)]
        return found


def _first_true(size: int, test: Callable[[int], bool]) -> int:
    """The first i in range(size) where ``test`` holds, for a test false then true (monotone)."""
    low, high = 0, size
    while low < high:
        middle = (low + high) // 2
        if test(middle):
            high = middle
        else:
            low = middle + 1
    return low
