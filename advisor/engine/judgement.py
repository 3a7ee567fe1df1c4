"""The judgement rules (``judges:`` in a rule, rules/core/judgement): what decides, for every comparison row,
whether the tensor deviates, and whether an op with identical inputs moved its output beyond its own
rounding.

The facts stage measures (advisor/facts/rows.py publishes each row's ``tensor`` fields: its metrics over
the limits of its dtype, its conditioning, what is non-finite); these rules judge. A rule's ``when`` is
compiled exactly as the engine compiles any rule, the run's parameters applied (``--set
tensor-deviates.allowance=2``), and evaluated column by column over the whole table: a million rows are
never asserted one by one. Every field a judgement names is a column the facts stage gives, so the
evaluation is exact (the op pre-filter of opfilter.py may keep too much; this may not).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import RulePackError, UsageError
from ..facts.thresholds import Thresholds
from .loading import load_packs
from .opfilter import holds
from .rulemodel import Rule

# The row flags the facts stage asks for, each decided by exactly one rule of the run.
JUDGED = ("deviates", "beyond_own_rounding")


@dataclass(frozen=True)
class Judgement:
    """The run's judgement rules, compiled: per flag, the rule's alternatives (each an ``$and`` list of
    terms on ``tensor`` fields). Called with the rows' columns, it gives each flag's mask."""

    alternatives: Mapping[str, tuple[list[dict[str, Any]], ...]]
    rules: Mapping[str, str]          # flag -> id of the rule that decides it
    allowances: Mapping[str, float]   # flag -> the share of the limits its rule allows (param allowance, else 1)

    def thresholds(self, thresholds: Thresholds) -> Thresholds:
        """The limits as this judgement holds tensors to them: what the report's plot draws."""
        return thresholds.allowing(self.allowances.get("deviates", 1.0),
                                   self.allowances.get("beyond_own_rounding", 1.0))

    def __call__(self, columns: Mapping[str, Any], length: int) -> dict[str, np.ndarray]:
        judged = {}
        for flag, alternatives in self.alternatives.items():
            mask = np.zeros(length, dtype=bool)
            for terms in alternatives:
                mask |= holds(terms, columns, length)
            judged[flag] = mask
        return judged


def judgement(rules: Iterable[Rule], params: Mapping[str, Mapping[str, Any]] | None = None,
              loaded: Iterable[Rule] = (), required: Iterable[str] = JUDGED,
              fallback: bool = False) -> Judgement:
    """The judgement of the run's (enabled) ``rules`` with its ``params``: each of the ``required`` flags
    needs its rule. ``loaded``: every rule the packs gave, to name the rule a run disabled. ``fallback``
    (a run without the built-in packs, ``--no-builtin-rules``): the built-in judgement rules judge each flag
    no loaded rule judges (a team pack judges its own findings, not what a deviation is)."""
    params = params or {}
    loaded = list(loaded)
    rules = [*rules, *(rule for rule in (builtin_judges() if fallback else ())
                       if not any(other.judges == rule.judges for other in loaded))]
    alternatives: dict[str, tuple[list[dict[str, Any]], ...]] = {}
    deciding: dict[str, Rule] = {}
    for rule in rules:
        if rule.judges is None:
            continue
        if rule.judges in deciding:
            other = deciding[rule.judges]
            raise RulePackError(f"rule '{rule.id}' judges '{rule.judges}', which rule '{other.id}' ({other.source}) "
                                f"decides already: one rule per flag (change it with --set, or disable one)",
                                path=rule.source, line=rule.line)
        deciding[rule.judges] = rule
        alternatives[rule.judges] = tuple(
            next(iter(alternative.all[0].values()))["$and"]
            for alternative in rule.compile_when(dict(params.get(rule.id) or {})))
    for flag in required:
        if flag not in deciding:
            named = [rule.id for rule in loaded if rule.judges == flag]
            raise UsageError(f"no rule of the run judges '{flag}'" + (
                f": rule '{named[0]}' decides it and cannot be disabled (change it with --set {named[0]}.NAME=VALUE)"
                if named else " (the built-in rules/core/judgement is missing)"))
    allowances = {flag: _allowance({**rule.params, **(params.get(rule.id) or {})}) for flag, rule in deciding.items()}
    return Judgement(alternatives, {flag: rule.id for flag, rule in deciding.items()}, allowances)


def _allowance(params: Mapping[str, Any]) -> float:
    """A judgement rule's ``allowance`` parameter; 1.0 (the limits as they are) for a rule without one."""
    value = params.get("allowance", 1.0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 1.0


@lru_cache(maxsize=1)
def builtin_judges() -> tuple[Rule, ...]:
    """The built-in judgement rules (rules/core/judgement)."""
    return tuple(rule for rule in load_packs(installed=False).rules if rule.judges is not None)


@lru_cache(maxsize=1)
def builtin_judgement() -> Judgement:
    """The built-in judgement with its default parameters (what ``advisor run`` uses without --set)."""
    rules = builtin_judges()
    return judgement(rules, loaded=rules)
