"""Rule conditions: the YAML form rule authors write, checked and compiled 1:1 to durable_rules JSON.

A pattern matches one fact::

    fact: op                      # the fact kind (network, op, finding)
    error_enters: true            # field: value                 -> equality
    out_cosine: {lt: 0.99}        # field: {operator: value}     -> $lt, $lte, $gt, $gte, $neq
    kind: {in: [a, b]}            # membership                   -> $or of equalities
    keep_fp32: {exists: true}     # presence                     -> $ex / $nex
    index: {gte: $cause.index}    # a field of an earlier pattern (joins)
    local_drop: {gt: ${min_drop}} # a named parameter of the rule
    any: [{...}, {...}]           # nested groups                -> $or / $and
    all: [{...}, {...}]
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..facts.schema import BOOL, FACT_FIELDS, NUMBER, STRING

OPERATORS = {"eq": "$eq", "ne": "$neq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte",
             "in": None, "exists": None}
GROUPS = {"all": "$and", "any": "$or"}
RESERVED = {"fact", "as"}
_REF = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
_PARAM = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


@dataclass
class ConditionProblem:
    message: str
    node: Any            # the LineDict the problem is in (for its position)
    key: str | None


def suggest(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class PatternCompiler:
    """Checks and compiles the patterns of one rule. Problems are collected, never raised one by
    one, so `advisor rules validate` can list every mistake at once."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.aliases: dict[str, str] = {}       # alias -> fact kind, in pattern order
        self.problems: list[ConditionProblem] = []

    def _problem(self, message: str, node: Any, key: str | None) -> None:
        self.problems.append(ConditionProblem(message, node, key))

    def pattern(self, node: Any, alias: str) -> dict[str, Any] | None:
        if not isinstance(node, dict):
            self._problem("a pattern must be a mapping", node, None)
            return None
        kind = node.get("fact")
        if kind not in FACT_FIELDS:
            message = (f"unknown fact kind '{kind}'{suggest(str(kind), list(FACT_FIELDS))}; "
                       f"known: {', '.join(FACT_FIELDS)}" if kind is not None
                       else "each pattern names its fact kind: 'fact: network|op|finding'")
            self._problem(message, node, "fact")
            return None
        terms = [{"fact": kind}] + self._terms(node, kind, skip_reserved=True)
        self.aliases[alias] = kind
        return {"$and": _groups_last(terms)}

    def _terms(self, node: dict[str, Any], kind: str, skip_reserved: bool = False) -> list[dict[str, Any]]:
        terms = []
        for key, value in node.items():
            if skip_reserved and key in RESERVED:
                continue
            if key in GROUPS:
                if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
                    self._problem(f"'{key}' takes a non-empty list of mappings",
                                                          node, key)
                    continue
                groups = [{"$and": _groups_last(self._terms(item, kind))} for item in value]
                terms.append({GROUPS[key]: groups})
                continue
            term = self._field(node, key, value, kind)
            if term is not None:
                terms.append(term)
        return terms

    def _field(self, node: dict[str, Any], name: str, spec: Any, kind: str) -> dict[str, Any] | None:
        fields = FACT_FIELDS[kind]
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
            return {"$ex" if operand else "$nex": {name: 1}}
        if op == "in":
            if not isinstance(operand, list) or not operand:
                self._problem(f"'{name}: {{in: ...}}' takes a non-empty list", node, name)
                return None
            values = [self._operand(node, name, item, field_type, "in") for item in operand]
            return {"$or": [{name: v} for v in values]}
        value = self._operand(node, name, operand, field_type, op)
        return {name: value} if op == "eq" else {OPERATORS[op]: {name: value}}

    def _operand(self, node: dict[str, Any], name: str, operand: Any, field_type: str, op: str) -> Any:
        if isinstance(operand, str) and (ref := _REF.match(operand)):
            alias, field = ref.groups()
            if alias not in self.aliases:
                known = ", ".join(self.aliases) or "none yet"
                self._problem(
                    f"'{operand}' refers to pattern '{alias}', which is not an earlier pattern "
                    f"(earlier: {known})", node, name)
                return None
            ref_fields = FACT_FIELDS[self.aliases[alias]]
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
            operand = self.params[pname]
        checker: Callable[[Any], bool] = {
            BOOL: lambda v: isinstance(v, bool),
            NUMBER: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            STRING: lambda v: isinstance(v, str),
        }[field_type]
        if not checker(operand):
            self._problem(
                f"'{name}' is a {field_type} field; {operand!r} is not a {field_type}", node, name)
            return None
        if field_type == NUMBER and "e" in repr(float(operand)).lower():
            self._problem(f"'{name}': {operand!r} is outside what durable_rules can compare (it needs "
                          f"numbers between 0.0001 and 1e15 in magnitude, or 0)", node, name)
            return None
        if op in ("lt", "lte", "gt", "gte") and field_type != NUMBER:
            self._problem(f"'{op}' needs a number field; '{name}' is a {field_type}",
                                                  node, name)
            return None
        return operand



def _groups_last(terms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Put $or/$and groups after plain comparisons. durable_rules 2.0.28 drops a join condition
    (a comparison with a field of an earlier pattern) that follows an $or in the same $and; the
    order does not change the meaning, so we always emit plain terms first (tested)."""
    return sorted(terms, key=lambda term: next(iter(term)) in ("$or", "$and"))
