"""durable_rules, fitted to batch analysis: one ruleset per run, facts asserted synchronously, every
number written positionally (the C parser's traps are listed in runner.py's module doc)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import durable_rules_engine
import numpy as np
from durable import engine as durable_engine


class PositionalRuleset(durable_engine.Ruleset):
    """A stock Ruleset whose definition is written with positional numbers (see encode_json)."""

    def __init__(self, name: str, host: durable_engine.Host, definition: dict[str, Any]) -> None:
        self._actions = {rule: durable_engine.Promise(spec["run"]) for rule, spec in definition.items()}
        self._name = name
        self._host = host
        self._definition = {rule: {k: v for k, v in spec.items() if k != "run"} for rule, spec in definition.items()}
        self._handle = durable_rules_engine.create_ruleset(name, encode_json(self._definition))
        self._functions = {rule: spec["run"] for rule, spec in definition.items()}
        self.fields = fields_read(self._definition)

    def _flush_actions(self, state: dict[str, Any], result_container: dict[str, Any], state_offset: int,
                       complete: Callable[[Any, Any], None]) -> None:
        """Run the actions of one assertion, one match after the other, as the stock Ruleset does but
        without what only its asynchronous actions need (a lease clock read twice per match, a
        completion promise, the state written back after each match: update_state parses it and
        looks it up among the stored facts, ~5% of a large run's matching, to learn it is
        unchanged): our actions only read the match and never change the state, and a large
        comparison makes tens of thousands of matches. An exception an action lets escape ends the
        assertion with it (the stock loop stores it on the state, where nobody reads it)."""
        while "message" in result_container:
            action_name, message = next(iter(result_container.pop("message").items()))
            try:
                self._functions[action_name](_Match(message))
                new_result = durable_rules_engine.complete_and_start_action(self._handle, state_offset)
            except BaseException as error:
                durable_rules_engine.abandon_action(self._handle, state_offset)
                complete(error, None)
                return
            if new_result:
                result_container["message"] = json.loads(new_result)
            else:
                complete(None, state)


class _Match:
    """What an action is handed: the matched facts by alias (``_m``, as durable_rules' Closure has them)."""

    __slots__ = ("_m",)

    def __init__(self, message: dict[str, Any]) -> None:
        self._m = message


class SynchronousHost(durable_engine.Host):
    """A durable_rules Host fitted to batch analysis.

    * No timer threads: the stock Host starts two that poll every ruleset forever. We assert facts
      synchronously (actions run inside assert_facts) and use no timers, so nothing runs behind
      our back and nothing outlives the run.
    * Our own JSON for facts and rulesets: durable_rules 2.0.28's C parser crashes (segfault) or
      hangs on numbers in exponent notation, which Python's json writes for any float below 1e-4 or
      above 1e16 (1e-05, 1e+20). We write every number positionally instead (see encode_json).
    """

    def __init__(self, ruleset_definitions: dict[str, Any]) -> None:
        self._states = itertools.count(1)      # state ids of assert_facts(per_state=...); "0" is the default
        super().__init__(ruleset_definitions)

    def _run(self) -> None:
        return None

    def register_rulesets(self, ruleset_definitions: dict[str, Any]) -> None:
        for name, definition in ruleset_definitions.items():
            ruleset = PositionalRuleset(name, self, definition)
            self._ruleset_directory[name] = ruleset
            self._ruleset_list.append(ruleset)

    def assert_facts(self, ruleset_name: str, facts: list[dict[str, Any]], complete: Any = None,
                     per_state: int | None = None) -> Any:
        """Assert ``facts`` with only the fields some condition reads (``PositionalRuleset.fields``):
        the rest never reaches the C parser and store, and actions read the facts as we built them
        (runner.Collector.original). With ``per_state``, each run of that many facts goes to a
        state of its own (a ``sid``): for rulesets none of whose rules relates two facts, since
        facts in different states never meet. durable_rules' fact store is a fixed 512-bucket
        hash table walked on every insertion, so one state of 100k facts costs quadratically."""
        rules = self.get_ruleset(ruleset_name)
        read = rules.fields
        lean = [{name: value for name, value in fact.items() if name in read} for fact in facts]
        size, result = per_state or len(lean) or 1, None
        for start in range(0, len(lean), size):
            group = lean[start:start + size]
            if per_state:
                sid = str(next(self._states))
                group = [{**fact, "sid": sid} for fact in group]
            text = encode_facts(group)

            def assert_encoded(_: Any, text: str = text, group: list = group) -> Any:
                return rules._handle_result(durable_rules_engine.assert_facts(rules._handle, text), group)

            result = self._handle_function(rules, assert_encoded, group, complete)
        return result


def fields_read(definition: dict[str, Any]) -> frozenset[str]:
    """Every fact field a condition of the ruleset ``definition`` reads (an equality, a comparison, a
    presence test, either side of a join), with ``id`` and ``sid``, which durable_rules reads itself."""
    fields = {"id", "sid"}

    def visit(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key.startswith("$"):         # {"$and": [...]}, {"$lt": {field: operand}}, {"$ex": {field: 1}}
                    visit(value)
                else:
                    fields.add(key)
                    if isinstance(value, dict):     # a join: {field: {alias: other field}}
                        fields.update(str(other) for other in value.values())

    for spec in definition.values():
        for pattern in spec["all"]:
            visit(list(pattern.values()))
    return frozenset(fields)


# Infinities are written as the largest finite double (durable_rules has no infinity): they compare
# above every finite number a rule can hold. Every other number is written exactly.
_LARGEST = float(np.finfo(np.float64).max)


def _json_number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        raise ValueError("NaN cannot be a fact value (leave the field out instead)")
    text = repr(value)
    if "e" not in text and "n" not in text:     # the common case, and the fast one
        return text
    value = max(min(value, _LARGEST), -_LARGEST)
    return np.format_float_positional(value, unique=True, trim="0")


def encode_json(value: Any) -> str:
    """JSON with positional numbers only (never 1e-05): for facts and rulesets."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return _json_number(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(key), ensure_ascii=False)}: {encode_json(item)}"
                               for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(encode_json(item) for item in value) + "]"
    raise TypeError(f"{type(value).__name__} cannot be written as JSON")


def encode_facts(facts: list[dict[str, Any]]) -> str:
    """JSON for a list of flat facts, with positional numbers only (never 1e-05)."""
    return "[" + ", ".join(_encode_fact(fact) for fact in facts) + "]"


_PLAIN = (str, int, bool, type(None))


def _encode_fact(fact: dict[str, Any]) -> str:
    # Python's json writes floats as repr does: positionally from 1e-4 up to 1e16, so a fact whose
    # floats all lie there (nearly every fact) goes through the C encoder as it is.
    for value in fact.values():
        kind = type(value)
        if kind is float:
            if not (1e-4 <= abs(value) < 1e16) and value != 0:
                break
        elif kind not in _PLAIN:
            break
    else:
        return json.dumps(fact, ensure_ascii=False)
    fields = []
    for key, value in fact.items():
        if isinstance(value, bool) or value is None or isinstance(value, str):
            text = json.dumps(value, ensure_ascii=False)
        elif isinstance(value, (int, float)):
            text = _json_number(value)
        else:
            raise TypeError(f"fact field '{key}' holds {type(value).__name__}; facts are flat")
        fields.append(f"{json.dumps(str(key), ensure_ascii=False)}: {text}")
    return "{" + ", ".join(fields) + "}"
