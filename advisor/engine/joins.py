"""Joins of rule patterns that durable_rules cannot do well, done by index instead of by pairs.

A rule whose patterns are related by an ordering comparison (``index: {gt: $cause.index}``) cannot
hand that comparison to durable_rules 2.0.28 (it reads past a buffer, see conditions.Guard). Left
to durable_rules without it, every cause x symptom pair is formed and fires an action, and Python
throws most away: 400 notable ops meant 40,800 firings. Instead, durable_rules matches each
pattern of such a rule on its own (its literal terms: one firing per matching fact) and
:class:`IndexedJoin` joins the candidates here:

* an equality with an earlier pattern's field looks candidates up in a dict;
* an ordering comparison finds them by bisection in the candidates sorted by that field;
* any further comparison is checked on what the lookup returned.

So the work grows with the facts plus the matches, never with the product of the patterns. Facts
arrive in rounds (findings are asserted after the facts they came from); each round joins only the
combinations with at least one new fact (semi-naive evaluation), so nothing fires twice. As in
durable_rules, one fact never stands for two patterns of the same match.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .conditions import Guard

Fact = dict[str, Any]
_ORDERING = ("$gt", "$gte", "$lt", "$lte")


@dataclass
class _Lookup:
    """How candidates for one pattern are found, given the facts bound to earlier patterns."""

    guard: Guard | None             # the comparison used to look up (None: every candidate)
    rest: list[Guard]               # checked on each looked-up candidate

    def index(self, pool: list[Fact]) -> tuple:
        guard = self.guard
        if guard is None:
            return ("scan", pool)
        if guard.operator == "$eq":
            table: dict[Any, list[Fact]] = {}
            for fact in pool:
                value = fact.get(guard.field)
                if value is not None:
                    table.setdefault(value_key(value), []).append(fact)
            return ("eq", table)
        values = [fact.get(guard.field) for fact in pool]
        if any(value is not None and not _number(value) for value in values):
            return ("scan", pool)       # a string field ordered: rare; checked one by one
        order = sorted((n for n, value in enumerate(values) if value is not None), key=lambda n: values[n])
        return ("sorted", [values[n] for n in order], [pool[n] for n in order])

    def candidates(self, index: tuple, bound: dict[str, Fact]) -> list[Fact]:
        guard = self.guard
        if index[0] == "scan":
            if guard is None:
                return index[1]
            return [fact for fact in index[1] if guard.holds({**bound, guard.alias: fact})]
        assert guard is not None
        right = bound[guard.other_alias].get(guard.other_field)
        if index[0] == "eq":
            return index[1].get(value_key(right), []) if right is not None else []
        if not _number(right):
            return []
        _, keys, facts = index
        if guard.operator == "$gt":
            return facts[bisect.bisect_right(keys, right):]
        if guard.operator == "$gte":
            return facts[bisect.bisect_left(keys, right):]
        if guard.operator == "$lt":
            return facts[:bisect.bisect_left(keys, right)]
        return facts[:bisect.bisect_right(keys, right)]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float))


def value_key(value: Any) -> Any:
    # Like durable_rules and Guard.holds: 1 == 1.0, and a string never equals a number.
    return ("n", float(value)) if _number(value) and not isinstance(value, bool) else (type(value).__name__, value)


class IndexedJoin:
    """The matches of one rule alternative, from the facts durable_rules found for each pattern."""

    def __init__(self, aliases: list[str], guards: list[Guard]) -> None:
        self.aliases = aliases
        self.old: dict[str, list[Fact]] = {alias: [] for alias in aliases}
        self.new: dict[str, list[Fact]] = {alias: [] for alias in aliases}
        self.lookups = [self._plan(alias, [g for g in guards if g.alias == alias]) for alias in aliases]

    @staticmethod
    def _plan(alias: str, guards: list[Guard]) -> _Lookup:
        for preferred in (("$eq",), _ORDERING):
            for guard in guards:
                if guard.operator in preferred:
                    return _Lookup(guard, [g for g in guards if g is not guard])
        return _Lookup(None, guards)

    def add(self, alias: str, fact: Fact) -> None:
        self.new[alias].append(fact)

    def matches(self) -> Iterator[dict[str, Fact]]:
        """Every match with at least one fact added since the last call; then the new become old."""
        passes = []
        for i, alias in enumerate(self.aliases):
            if not self.new[alias]:
                continue
            pools = [self.old[a] for a in self.aliases[:i]] + [self.new[alias]] + \
                    [self.old[a] + self.new[a] for a in self.aliases[i + 1:]]
            if all(pools):
                passes.append(pools)
        for alias in self.aliases:
            self.old[alias].extend(self.new[alias])
            self.new[alias] = []
        for pools in passes:
            yield from self._join(pools)

    def _join(self, pools: list[list[Fact]]) -> Iterator[dict[str, Fact]]:
        indexes = [lookup.index(pool) for lookup, pool in zip(self.lookups, pools, strict=True)]
        bound: dict[str, Fact] = {}
        used: set[str] = set()

        def extend(depth: int) -> Iterator[dict[str, Fact]]:
            if depth == len(self.aliases):
                yield dict(bound)
                return
            alias, lookup = self.aliases[depth], self.lookups[depth]
            for fact in lookup.candidates(indexes[depth], bound):
                if fact["id"] in used:
                    continue
                bound[alias] = fact
                if all(guard.holds(bound) for guard in lookup.rest):
                    used.add(fact["id"])
                    yield from extend(depth + 1)
                    used.discard(fact["id"])
                del bound[alias]

        yield from extend(0)


class Prefilter:
    """Which facts some pattern may match: a necessary condition, so facts no rule can match never
    reach durable_rules (whose fact store has fixed-size hash indexes: every stored fact makes the
    next ones slower).

    Each pattern requires its fact kind and nearly always fields equal to literals
    (``error_enters: true``); a fact passes when some pattern of its kind requires no literal, or when
    it holds every literal of some pattern (found through the pattern's first literal, one dict
    lookup per field). durable_rules then does the actual matching on what passes."""

    def __init__(self) -> None:
        self.everything = False
        self.open: set[Any] = set()     # kinds with a pattern requiring no literal
        # kind -> field -> value -> the literals (field, value key) of each pattern whose first is that
        self.required: dict[Any, dict[str, dict[Any, list[list[tuple[str, Any]]]]]] = {}

    def add(self, condition: dict[str, Any]) -> None:
        terms = condition.get("$and") if set(condition) == {"$and"} else None
        kinds = [term["fact"] for term in terms or () if set(term) == {"fact"} and not isinstance(term["fact"], dict)]
        if not kinds:
            self.everything = True
            return
        literal = [(field, value_key(value)) for term in terms for field, value in term.items()
                   if field != "fact" and not field.startswith("$") and not isinstance(value, dict)]
        kind = value_key(kinds[0])
        if not literal:
            self.open.add(kind)
        else:
            field, value = literal[0]
            self.required.setdefault(kind, {}).setdefault(field, {}).setdefault(value, []).append(literal)

    def may_match(self, fact: Fact) -> bool:
        kind = fact.get("fact")
        if kind is None or self.everything:
            return True
        kind = value_key(kind)
        if kind in self.open:
            return True
        for field, by_value in self.required.get(kind, {}).items():
            value = fact.get(field)
            for literal in by_value.get(value_key(value), ()) if value is not None else ():
                if all(fact.get(name) is not None and value_key(fact[name]) == key for name, key in literal):
                    return True
        return False
