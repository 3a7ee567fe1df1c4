"""Rule conditions: the YAML form rule authors write, checked and compiled 1:1 to durable_rules JSON.

A pattern matches one fact::

    fact: op                      # the fact kind (network, op, finding)
    error_enters: true            # field: value                 -> equality
    out_cosine: {lt: 0.99}        # field: {operator: value}     -> $lt, $lte, $gt, $gte, $neq
    kind: {in: [a, b]}            # membership                   -> $or of equalities
    keep_fp32: {exists: true}     # presence                     -> $ex / $nex
    index: {gte: $cause.index}    # a field of an earlier pattern (joins)
    local_drop: {gt: ${min_drop}} # a named parameter of the rule
    any: [{...}, {...}]           # nested groups: at least one / every one holds
    all: [{...}, {...}]

durable_rules 2.0.28 has defects around join references (a comparison with a field of an earlier
pattern), pinned by tests in tests/engine:
* beside an ``$or`` it silently drops alternatives. So we never emit ``$or``: ``any`` and ``in`` are
  expanded here into disjunctive normal form, and a rule with alternatives becomes several durable
  rules that share one action (findings and explanations are deduplicated);
* an ordering join (gt, gte, lt, lte, ne against an earlier field) inside an ``$and`` makes it read
  past a buffer and crash the process later. Those comparisons become ``Guard``s; a rule with any
  has each pattern matched by durable_rules on its own (literal terms only, see ``split_joins``) and
  its patterns joined by index in joins.IndexedJoin, so no cause x symptom pair is ever formed.
Numbers of any magnitude are fine: rulesets are written with positional numbers (runner.encode_json).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..facts.schema import BOOL, FACT_FIELDS, NUMBER, STRING
from ..text import suggest

OPERATORS = {"eq": "$eq", "ne": "$neq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte",
             "in": None, "exists": None}
GROUPS = ("all", "any")
MAX_ALTERNATIVES = 64           # per rule, after every 'any' / 'in' is expanded (counted before expanding)
RESERVED = {"fact", "as"}
_REF = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
_PARAM = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


@dataclass
class ConditionProblem:
    message: str
    node: Any            # the LineDict the problem is in (for its position)
    key: str | None


class PatternCompiler:
    """Checks and compiles the patterns of one rule. Problems are collected, never raised one by
    one, so `advisor rules validate` can list every mistake at once."""

    def __init__(self, params: dict[str, Any],
                 fields: Mapping[str, Mapping[str, tuple[str, str]]] = FACT_FIELDS) -> None:
        self.params = params
        self.fields = fields                    # the run's fact schema (engine.registry.Registry.fields)
        self.aliases: dict[str, str] = {}       # alias -> fact kind, in pattern order
        self.problems: list[ConditionProblem] = []
        self.expanded = 1                       # alternatives of the rule so far (product over its patterns)
        self.used: set[str] = set()             # the parameters the patterns read (``${name}``)

    def _problem(self, message: str, node: Any, key: str | None) -> None:
        self.problems.append(ConditionProblem(message, node, key))

    def pattern(self, node: Any, alias: str) -> list[tuple[dict[str, Any], list[Guard]]]:
        """The pattern as alternatives (disjunctive normal form): for each, the durable_rules
        condition (a plain ``$and``) and the join comparisons left to ``Guard``s (see module doc)."""
        if not isinstance(node, dict):
            self._problem("a pattern must be a mapping", node, None)
            return []
        kind = node.get("fact")
        if kind not in self.fields:
            message = (f"unknown fact kind '{kind}'{suggest(str(kind), list(self.fields))}; "
                       f"known: {', '.join(self.fields)}" if kind is not None
                       else "each pattern names its fact kind: 'fact: network|op|finding'")
            self._problem(message, node, "fact")
            return []
        self.expanded *= _count(node, skip_reserved=True)
        if self.expanded > MAX_ALTERNATIVES:
            self._problem(f"the rule expands to more than {MAX_ALTERNATIVES} alternatives: split it or use fewer "
                          "'any'/'in' choices", node, None)
            self.aliases[alias] = kind
            return []
        compiled = []
        for terms in self._alternatives(node, kind, skip_reserved=True):
            guards = [Guard.of(alias, term) for term in terms if _is_ordering_join(term)]
            kept = [term for term in terms if not _is_ordering_join(term)]
            if sum(_is_join(term) for term in kept) > 1:
                self._problem("a pattern may require equality with at most one field of an earlier pattern "
                              "(durable_rules 2.0.28 misbehaves with more); split the rule with 'any'", node, None)
            compiled.append(({"$and": [{"fact": kind}, *kept]}, guards))
        self.aliases[alias] = kind
        return compiled

    def _alternatives(self, node: dict[str, Any], kind: str, skip_reserved: bool = False) -> list[list[dict]]:
        """Every key of ``node`` must hold; ``any`` / ``in`` multiply the alternatives."""
        alternatives: list[list[dict]] = [[]]
        for key, value in node.items():
            if skip_reserved and key in RESERVED:
                continue
            if key in GROUPS:
                if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
                    self._problem(f"'{key}' takes a non-empty list of mappings", node, key)
                    continue
                parts = [self._alternatives(item, kind) for item in value]
                if key == "any":
                    options = [alt for part in parts for alt in part]
                else:
                    options = [[]]
                    for part in parts:
                        options = [a + b for a in options for b in part]
            else:
                options = self._field(node, key, value, kind)
                if options is None:
                    continue
            alternatives = [a + b for a in alternatives for b in options]
        return alternatives

    def _field(self, node: dict[str, Any], name: str, spec: Any, kind: str) -> list[list[dict]] | None:
        fields = self.fields[kind]
        if name not in fields:
            hint = suggest(name, list(fields) + list(GROUPS))
            self._problem(f"'{kind}' facts have no field '{name}'{hint}", node, name)
            return None
        field_type = fields[name][0]
        if isinstance(spec, dict):
            if len(spec) != 1:
                self._problem(
                    f"'{name}' takes one operator ({', '.join(OPERATORS)}), got {len(spec)}", node, name)
                return None
            (op, operand), = spec.items()
            if op not in OPERATORS:
                self._problem(
                    f"unknown operator '{op}' for '{name}'{suggest(str(op), list(OPERATORS))}", node, name)
                return None
        else:
            op, operand = "eq", spec
        if op == "exists":
            if not isinstance(operand, bool):
                self._problem(f"'{name}: {{exists: ...}}' takes true or false", node, name)
                return None
            return [[{"$ex" if operand else "$nex": {name: 1}}]]
        if op == "in":
            if not isinstance(operand, list) or not operand:
                self._problem(f"'{name}: {{in: ...}}' takes a non-empty list", node, name)
                return None
            values = [self._operand(node, name, item, field_type, "in") for item in operand]
            return [[{name: v}] for v in values]
        value = self._operand(node, name, operand, field_type, op)
        return [[{name: value} if op == "eq" else {OPERATORS[op]: {name: value}}]]

    def _operand(self, node: dict[str, Any], name: str, operand: Any, field_type: str, op: str) -> Any:
        if isinstance(operand, str) and (ref := _REF.match(operand)):
            alias, field = ref.groups()
            if alias not in self.aliases:
                known = ", ".join(self.aliases) or "none yet"
                self._problem(
                    f"'{operand}' refers to pattern '{alias}', which is not an earlier pattern "
                    f"(earlier: {known})", node, name)
                return None
            ref_fields = self.fields[self.aliases[alias]]
            if field not in ref_fields:
                self._problem(
                    f"'{operand}': '{self.aliases[alias]}' facts have no field '{field}'"
                    f"{suggest(field, list(ref_fields))}", node, name)
                return None
            return {alias: field}
        if isinstance(operand, str) and (param := _PARAM.match(operand)):
            pname = param.group(1)
            if pname not in self.params:
                self._problem(
                    f"unknown parameter '{pname}'{suggest(pname, list(self.params))}; declare it under "
                    f"'params'", node, name)
                return None
            self.used.add(pname)
            operand = self.params[pname]
        checker: Callable[[Any], bool] = {
            BOOL: lambda v: isinstance(v, bool),
            NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            STRING: lambda v: isinstance(v, str),
        }[field_type]
        if not checker(operand):
            hint = ""
            if field_type == NUMBER and isinstance(operand, str) and _looks_numeric(operand):
                hint = " (YAML reads a number like 1e20 as text: write 1.0e+20)"
            self._problem(
                f"'{name}' is a {field_type} field; {operand!r} is not a {field_type}{hint}", node, name)
            return None
        if field_type == NUMBER and not math.isfinite(operand):
            self._problem(f"'{name}': {operand!r} is not a finite number", node, name)
            return None
        if op in ("lt", "lte", "gt", "gte") and field_type != NUMBER:
            self._problem(f"'{op}' needs a number field; '{name}' is a {field_type}",
                                                  node, name)
            return None
        return operand


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _count(node: Any, skip_reserved: bool = False) -> int:
    """How many alternatives ``node`` expands to, counted without expanding (saturates just above
    MAX_ALTERNATIVES, so 10^8 alternatives cost as little as 65). Malformed parts count 1; the
    compiler reports them."""
    if not isinstance(node, dict):
        return 1
    total = 1
    for key, value in node.items():
        if skip_reserved and key in RESERVED:
            continue
        if key in GROUPS and isinstance(value, list):
            parts = [_count(item) for item in value]
            options = sum(parts) if key == "any" else _product(parts)
        elif isinstance(value, dict) and len(value) == 1 and isinstance(value.get("in"), list):
            options = len(value["in"])
        else:
            options = 1
        total = _product([total, max(options, 1)])
    return total


def _product(numbers: list[int]) -> int:
    total = 1
    for number in numbers:
        total = min(total * number, MAX_ALTERNATIVES + 1)
    return total


def _is_join(term: dict[str, Any]) -> bool:
    """A term comparing with a field of an earlier pattern: {field: {alias: field}} or {$op: {...}}."""
    (key, value), = term.items()
    if key in ("$ex", "$nex"):      # a presence test: {"$ex": {field: 1}}
        return False
    if key.startswith("$"):
        (_, value), = value.items()
    return isinstance(value, dict)


def _is_ordering_join(term: dict[str, Any]) -> bool:
    """A join comparison other than equality ($gt, $gte, $lt, $lte, $neq with an earlier field)."""
    (key, _), = term.items()
    return key in _GUARD_OPERATORS and _is_join(term)


_GUARD_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b, "$neq": lambda a, b: a != b,
}


def durable_equal(a: Any, b: Any) -> bool:
    """Equality as durable_rules sees it: 1 == 1.0, but true is not 1 and "1" is not 1."""
    return a == b and isinstance(a, bool) == isinstance(b, bool) and isinstance(a, str) == isinstance(b, str)


def split_joins(alias: str, condition: dict[str, Any]) -> tuple[dict[str, Any], list[Guard]]:
    """A compiled pattern (``{"$and": [...]}``) without its equality joins, and those joins as
    ``Guard``s (operator ``$eq``): what durable_rules matches on one fact alone, and what joins it
    to the facts of earlier patterns (see joins.IndexedJoin)."""
    terms = condition["$and"]
    joins = [term for term in terms if _is_join(term)]
    guards = []
    for term in joins:
        (field, reference), = term.items()
        (other_alias, other_field), = reference.items()
        guards.append(Guard(alias, field, "$eq", other_alias, other_field))
    return {"$and": [term for term in terms if not _is_join(term)]}, guards


@dataclass(frozen=True)
class Guard:
    """A join comparison checked in Python on the facts durable_rules matched.

    durable_rules 2.0.28 reads past the end of a buffer when it evaluates an ordering join
    (``index > cause.index``) inside an ``$and`` and the comparison is false (found with
    AddressSanitizer: events.c reduceExpressionSequence); the process dies rulesets later. So
    durable_rules matches the literal terms and equality joins, and these comparisons run here."""

    alias: str
    field: str
    operator: str
    other_alias: str
    other_field: str

    @classmethod
    def of(cls, alias: str, term: dict[str, Any]) -> Guard:
        (operator, comparison), = term.items()
        (field, reference), = comparison.items()
        (other_alias, other_field), = reference.items()
        return cls(alias, field, operator, other_alias, other_field)

    def holds(self, matched: dict[str, dict[str, Any]]) -> bool:
        left = matched.get(self.alias, {}).get(self.field)
        right = matched.get(self.other_alias, {}).get(self.other_field)
        if left is None or right is None:   # like durable_rules: a missing field never matches
            return False
        if self.operator == "$eq":
            return durable_equal(left, right)
        try:
            return _GUARD_OPERATORS[self.operator](left, right)
        except TypeError:
            return False
