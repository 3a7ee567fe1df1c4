"""A small pure-Python matcher for the compiled rules: the differential oracle of the engine.

``run_reference`` takes what ``runner.run_rules`` takes (rules, facts, parameters) and evaluates the
same compiled conditions (``Rule.compile_when``: the durable_rules ``$and`` patterns and the
ordering-join guards) by brute force: every pattern against every fact, nested loops for the joins,
rounds until no new finding appears. It shares no matching code with the engine (no durable_rules,
no index joins); findings and explanations are built by the same ``Collector`` and fed back as facts
by the same loop (``runner.feed_findings_back``). Tests run both and require the same findings
(tests/engine/test_reference_oracle.py). It is slow on purpose (simple over fast): tests only.

Semantics it pins (those of durable_rules 2.0.28, checked by the tests):
* a pattern holds when every term holds; a missing field fails every comparison but ``$nex``;
* equality: 1 == 1.0, but true is not 1 and "1" is not 1; ordering compares numbers only;
* one fact never stands for two patterns of the same match;
* each match of each alternative fires once, however many rounds follow.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from advisor.engine.conditions import Guard, durable_equal
from advisor.engine.packs import CompiledAlternative, Rule
from advisor.engine.runner import Collector, EngineResult, feed_findings_back
from advisor.errors import EngineError

Fact = dict[str, Any]

_ORDER = {"$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
          "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b}


def run_reference(rules: Iterable[Rule], facts: list[Fact],
                  params: dict[str, dict[str, Any]] | None = None) -> EngineResult:
    """What ``run_rules`` returns, computed without durable_rules."""
    params = params or {}
    collector = Collector(params)
    compiled = [(rule, alternative) for rule in rules if rule.judges is None
                for alternative in rule.compile_when(params.get(rule.id))]
    fired: set[tuple[int, tuple[str, ...]]] = set()
    known: list[Fact] = []

    def fire(batch: list[Fact]) -> None:
        known.extend(batch)
        for number, (rule, alternative) in enumerate(compiled):
            for matched in matches(alternative, known):
                key = (number, tuple(fact["id"] for fact in matched.values()))
                if key not in fired:
                    fired.add(key)
                    collector.fire(rule, matched)

    feed_findings_back(collector, facts, fire)
    return EngineResult(findings=list(collector.findings.values()), explanations=list(collector.explanations),
                        fired=collector.fired)


def matches(alternative: CompiledAlternative, facts: list[Fact]) -> Iterator[dict[str, Fact]]:
    """Every assignment of facts to the alternative's patterns that satisfies it, in fact order."""
    patterns = [(alias, condition) for pattern in alternative.all for alias, condition in pattern.items()]
    # Each pattern's terms that read no other pattern, tried once per fact; then nested loops.
    candidates = [[fact for fact in facts if all(holds(term, fact, {}) for term in _terms(condition, joins=False))]
                  for _, condition in patterns]
    joins = [_terms(condition, joins=True) for _, condition in patterns]

    def extend(depth: int, bound: dict[str, Fact]) -> Iterator[dict[str, Fact]]:
        if depth == len(patterns):
            if all(guard.holds(bound) for guard in alternative.guards):
                yield dict(bound)
            return
        alias = patterns[depth][0]
        used = {fact["id"] for fact in bound.values()}
        for fact in candidates[depth]:
            if fact["id"] not in used and all(holds(term, fact, bound) for term in joins[depth]):
                bound[alias] = fact
                if _guards_so_far(alternative.guards, bound):
                    yield from extend(depth + 1, bound)
                del bound[alias]

    yield from extend(0, {})


def _terms(condition: dict[str, Any], joins: bool) -> list[dict[str, Any]]:
    """The terms of a pattern's ``$and`` that compare with an earlier pattern (``joins``) or not."""
    terms = condition["$and"] if set(condition) == {"$and"} else [condition]
    return [term for term in terms if _reads_other(term) == joins]


def _reads_other(term: dict[str, Any]) -> bool:
    (key, value), = term.items()
    if key in ("$and", "$or"):
        return any(_reads_other(t) for t in value)
    if key in ("$ex", "$nex"):
        return False
    if key.startswith("$"):
        (_, value), = value.items()
    return isinstance(value, dict)


def _guards_so_far(guards: list[Guard], bound: dict[str, Fact]) -> bool:
    """The guards whose both sides are bound already (prunes the nested loops early)."""
    return all(guard.holds(bound) for guard in guards if guard.alias in bound and guard.other_alias in bound)


def holds(condition: dict[str, Any], fact: Fact, bound: dict[str, Fact]) -> bool:
    """One durable_rules condition term on ``fact``; join references read ``bound``."""
    (key, value), = condition.items()
    if key == "$and":
        return all(holds(term, fact, bound) for term in value)
    if key == "$or":
        return any(holds(term, fact, bound) for term in value)
    if key in ("$ex", "$nex"):
        (name, _), = value.items()
        return (fact.get(name) is not None) == (key == "$ex")
    if key == "$neq" or key in _ORDER:
        (name, operand), = value.items()
        left, right = fact.get(name), _operand(operand, bound)
        if left is None or right is None:
            return False
        if key == "$neq":
            return not durable_equal(left, right)
        return _is_number(left) and _is_number(right) and _ORDER[key](left, right)
    if key.startswith("$"):
        raise EngineError(f"the reference matcher does not know the operator '{key}'")
    left, right = fact.get(key), _operand(value, bound)
    return left is not None and right is not None and durable_equal(left, right)


def _operand(value: Any, bound: dict[str, Fact]) -> Any:
    """A literal, or ``{alias: field}``: the field of the fact bound to an earlier pattern."""
    if isinstance(value, dict):
        (alias, name), = value.items()
        return bound[alias].get(name) if alias in bound else None
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
