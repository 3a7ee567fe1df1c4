"""Run each rule's own test cases: a rule is not done until a case shows it firing on a true case
and staying silent on a clean one."""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.builder import clean_fact
from .packs import Rule, RulePack
from .runner import run_rules


@dataclass
class CaseResult:
    rule: str
    case: str
    expected: str           # "fire" or "silent"
    fired: bool
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.fired == (self.expected == "fire")


def run_case(rule: Rule, case: dict) -> CaseResult:
    facts = [clean_fact(dict(fact)) for fact in case["facts"]]
    try:
        result = run_rules([rule], facts, {rule.id: dict(case.get("params") or {})})
    except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with the reason
        return CaseResult(rule.id, case["name"], case["expect"], False, error=str(exc))
    return CaseResult(rule.id, case["name"], case["expect"], result.fired.get(rule.id, 0) > 0)


def run_pack_cases(pack: RulePack) -> list[CaseResult]:
    return [run_case(rule, case) for rule in pack.rules for case in rule.cases]
