"""Which ops the rules could match, decided over the whole ops table at once.

Any op of a comparison may matter to some rule (a team rule on every Softmax whose output cosine is
under 0.999), but asserting every op of a million-row comparison into durable_rules costs about
1.6 s per 1k facts. So each rule's conditions on ``op`` facts, compiled exactly as the engine
compiles them (``Rule.compile_when``, the run's parameters applied), are evaluated here column by
column with numpy: an op becomes a fact when some rule could match it. What a column cannot decide
(a comparison with a field of another fact, a field the table does not hold) counts as "may
match": the filter only ever keeps too much, never too little, and durable_rules does the matching.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .rulemodel import Rule

COMPARISONS = {"$lt": np.less, "$lte": np.less_equal, "$gt": np.greater, "$gte": np.greater_equal}


def op_candidates(rules: Iterable[Rule], params: Mapping[str, Mapping[str, Any]],
                  columns: Mapping[str, Any], length: int) -> np.ndarray:
    """Which ops each rule may match: a (rules, ``length``) mask, one row per rule with an ``op``
    pattern, True where some alternative of that pattern may hold (the rows let the op-fact cap
    share its places among the rules: facts/select.py). ``columns`` maps an op-fact field to its
    values in op order (a pandas Series or an array; NA where the fact would not carry the field)
    or to one value shared by every op."""
    rows = []
    for rule in rules:
        mask = np.zeros(length, dtype=bool)
        asks = False
        for alternative in rule.compile_when(dict(params.get(rule.id) or {})):
            for pattern in alternative.all:
                for condition in pattern.values():
                    terms = condition.get("$and", ())
                    if {"fact": "op"} not in terms or mask.all():
                        continue
                    asks = True
                    mask |= holds(terms, columns, length)
        if asks:
            rows.append(mask)
    return np.array(rows, dtype=bool).reshape(len(rows), length)


def holds(terms: list[dict[str, Any]], columns: Mapping[str, Any], length: int) -> np.ndarray:
    """Where one compiled pattern's ``terms`` (an ``$and`` list) hold over ``columns``. A term on a field
    the columns do not hold, or joined to another fact, is taken to hold (decided by the engine)."""
    held = np.ones(length, dtype=bool)
    for term in terms:
        (key, value), = term.items()
        if key == "fact":
            continue
        if key in ("$ex", "$nex"):
            (field, _), = value.items()
            if field not in columns:
                continue
            present = _present(columns[field], length)
            held &= present if key == "$ex" else ~present
        elif key in COMPARISONS:
            (field, operand), = value.items()
            if field in columns and not isinstance(operand, dict):   # a join: decided by the engine
                held &= _compare(columns[field], operand, COMPARISONS[key], length)
        elif key == "$neq":
            (field, operand), = value.items()
            if field in columns and not isinstance(operand, dict):
                held &= _present(columns[field], length) & ~_equal(columns[field], operand, length)
        elif not isinstance(value, dict) and key in columns:
            held &= _equal(columns[key], value, length)
        if not held.any():
            break
    return held


def _series(column: Any) -> pd.Series | None:
    """A column as a Series; None for one value shared by every op."""
    if isinstance(column, pd.Series):
        return column.reset_index(drop=True)
    if isinstance(column, np.ndarray):
        return pd.Series(column)
    return None


def _shared(column: Any, holds: bool, length: int) -> np.ndarray:
    return np.full(length, bool(holds) and not pd.isna(column), dtype=bool)


def _present(column: Any, length: int) -> np.ndarray:
    series = _series(column)
    return _shared(column, True, length) if series is None else series.notna().to_numpy(dtype=bool)


def _equal(column: Any, value: Any, length: int) -> np.ndarray:
    """Equal where present. A flag also equals 1 (Python's ``True == 1``): at worst an op too many."""
    series = _series(column)
    if series is None:
        return _shared(column, not pd.isna(column) and column == value, length)
    return series.eq(value).fillna(False).to_numpy(dtype=bool)


def _compare(column: Any, operand: float, compare: Any, length: int) -> np.ndarray:
    series = _series(column)
    if series is None:
        return _shared(column, isinstance(column, (int, float)) and bool(compare(float(column), operand)), length)
    numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        return compare(numbers, float(operand))
