"""Compile rule packs to one durable_rules ruleset per run, assert facts, collect findings.

durable_rules facts this module is built around (see DESIGN.md):
* a fact no rule matches raises MessageNotHandledException and loses the batch's actions, so every
  ruleset gets a catch-all rule;
* identical facts raise MessageObservedException, so every fact carries a unique ``id``;
* exceptions inside actions are swallowed onto the state, so our action wrapper catches them itself
  and the run fails with the rule's id;
* rulesets live in a process-global engine: each run gets a unique ruleset name and deletes it after.
Findings are asserted back as ``finding`` facts until nothing new appears, so rules can reason over
findings (a root cause explains its downstream symptoms).
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import durable_rules_engine
import numpy as np
from durable import engine as durable_engine
from jinja2 import Undefined

from ..cjk import tidy
from ..diagnosis import Finding
from ..errors import EngineError
from ..facts.builder import clean_fact
from ..templating import render_bounded
from .conditions import Guard
from .packs import Rule, template_env

MAX_ROUNDS = 10
CATCH_ALL = "__catch_all__"
_run_ids = itertools.count()

#: fact kinds whose ``index`` is the op index a finding about them carries
OP_INDEXED = ("op", "finding", "layer")


class _SynchronousHost(durable_engine.Host):
    """A durable_rules Host fitted to batch analysis.

    * No timer threads: the stock Host starts two that poll every ruleset forever. We assert facts
      synchronously (actions run inside assert_facts) and use no timers, so nothing runs behind
      our back and nothing outlives the run.
    * Our own JSON for facts: durable_rules 2.0.28's C parser crashes (segfault) or hangs on numbers
      in exponent notation, which Python's json writes for any float below 1e-4 or above 1e16
      (1e-05, 1e+20). We write every number positionally instead (see encode_facts).
    """

    def _run(self) -> None:
        return None

    def assert_facts(self, ruleset_name: str, facts: list[dict[str, Any]], complete: Any = None) -> Any:
        rules = self.get_ruleset(ruleset_name)
        text = encode_facts(facts)

        def assert_encoded(_: Any) -> Any:
            return rules._handle_result(durable_rules_engine.assert_facts(rules._handle, text), facts)

        return self._handle_function(rules, assert_encoded, facts, complete)


# Facts carry numbers within +-FACT_NUMBER_LIMIT (infinities are clamped to it) and no finer than
# 1e-20: both ends stay far from anything a rule compares, and keep the positional text short.
FACT_NUMBER_LIMIT = 1e18
_FACT_TINY = 1e-20


def _json_number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        raise ValueError("NaN cannot be a fact value (leave the field out instead)")
    value = max(min(value, FACT_NUMBER_LIMIT), -FACT_NUMBER_LIMIT)
    if abs(value) < _FACT_TINY:
        return "0.0"
    return np.format_float_positional(value, unique=True, trim="0")


def encode_facts(facts: list[dict[str, Any]]) -> str:
    """JSON for a list of flat facts, with positional numbers only (never 1e-05)."""
    parts = []
    for fact in facts:
        fields = []
        for key, value in fact.items():
            if isinstance(value, bool) or value is None or isinstance(value, str):
                text = json.dumps(value, ensure_ascii=False)
            elif isinstance(value, (int, float)):
                text = _json_number(value)
            else:
                raise TypeError(f"fact field '{key}' holds {type(value).__name__}; facts are flat")
            fields.append(f"{json.dumps(str(key), ensure_ascii=False)}: {text}")
        parts.append("{" + ", ".join(fields) + "}")
    return "[" + ", ".join(parts) + "]"


@dataclass
class EngineResult:
    findings: list[Finding]
    explanations: list[tuple[str, str, str]] = field(default_factory=list)  # (cause id, symptom id, rule)
    fired: dict[str, int] = field(default_factory=dict)                      # rule id -> times


def _num(value: Any, digits: int = 6) -> str:
    """Jinja filter for evidence: numbers with ``digits`` significant digits, 'n/a' when missing."""
    if value is None or isinstance(value, Undefined):
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and (math.isinf(value) or abs(value) >= 1e300):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


template_env.filters["num"] = _num


class _Collector:
    """Builds findings from rule actions; never lets an exception escape into durable_rules."""

    def __init__(self, params: dict[str, dict[str, Any]]) -> None:
        self.params = params
        self.findings: dict[str, Finding] = {}
        self.new: list[Finding] = []
        self.explanations: list[tuple[str, str, str]] = []
        self.errors: list[str] = []
        self.fired: dict[str, int] = {}
        # The facts as we built them, by id: evidence is rendered from these, not from the engine's
        # copies, which went through JSON (infinities clamped, see encode_facts).
        self.originals: dict[str, dict[str, Any]] = {}
        self.subjects: dict[str, dict[str, Any]] = {}     # finding id -> the fact it is about

    def action_for(self, rule: Rule, guards: list[Guard]) -> Callable[[Any], None]:
        def action(closure: Any) -> None:
            try:
                matched = {alias: self.originals.get(closure._m[alias]["id"], dict(closure._m[alias]))
                           for alias, _ in rule.patterns}
                if not all(guard.holds(matched) for guard in guards):
                    return
                if rule.explain:
                    self.fired[rule.id] = self.fired.get(rule.id, 0) + 1
                    cause, symptom = matched[rule.explain["cause"]], matched[rule.explain["symptom"]]
                    explanation = (cause["id"], symptom["id"], rule.id)
                    if explanation not in self.explanations:
                        self.explanations.append(explanation)
                elif self._emit(rule, matched) is not False:   # False: its confidence template said no
                    self.fired[rule.id] = self.fired.get(rule.id, 0) + 1
            except Exception as exc:  # noqa: BLE001 - reported with the rule id, see module doc
                self.errors.append(f"rule '{rule.id}' ({rule.source}): {type(exc).__name__}: {exc}")
        return action

    def _emit(self, rule: Rule, matched: dict[str, dict[str, Any]]) -> bool | None:
        emit = rule.emit
        assert emit is not None
        subject = matched.get(emit.subject, {}) if emit.subject else {}
        index = subject.get("index") if subject.get("fact") in OP_INDEXED else None
        finding_id = f"{rule.id}@{index if index is not None else subject.get('id', 'network')}"
        if finding_id in self.findings:
            return
        context = {**matched, "params": {**rule.params, **self.params.get(rule.id, {})}}
        evidence = {lang: tidy(render_bounded(template_env.from_string(text), context).strip(), lang)
                    for lang, text in emit.evidence.items()}
        values: dict[str, Any] = {}
        for spec in emit.values:
            alias, _, name = spec.rpartition(".")
            fact = matched.get(alias or emit.subject or "", {})
            if name in fact:
                values[name if name not in values else f"{alias}_{name}"] = fact[name]
        confidence = emit.confidence
        if isinstance(confidence, str) and "{{" in confidence:
            # A confidence template (rule parameters in ``params``); rendering nothing means the rule's
            # own threshold (e.g. problem-node's min_confidence) is not met: no finding.
            text = render_bounded(template_env.from_string(confidence), context).strip()
            if not text:
                return False
            confidence = float(text)
        elif isinstance(confidence, str):
            confidence = float(self._field(confidence, matched, default=0.5))
        lines = [int(subject["source_line"])] if "source_line" in subject else (
            [int(subject["output_line"])] if "output_line" in subject else [])
        finding = Finding(
            id=finding_id, rule=rule.id, pack=rule.pack, kind=emit.kind, severity=rule.severity,
            title=dict(rule.title), op=self._field(emit.op, matched) if emit.op else subject.get("op"), index=index,
            op_type=subject.get("op_type"), confidence=round(min(max(float(confidence), 0.0), 1.0), 3),
            evidence=evidence, values=values, source_lines=lines, root_cause=rule.root_cause)
        self.findings[finding_id] = finding
        self.subjects[finding_id] = subject
        self.new.append(finding)

    @staticmethod
    def _field(reference: str, matched: dict[str, dict[str, Any]], default: Any = None) -> Any:
        """Value of a "$alias.field" reference among the matched facts."""
        alias, _, name = reference[1:].partition(".")
        return matched.get(alias, {}).get(name, default)

    def take_new(self) -> list[Finding]:
        new, self.new = self.new, []
        return new


def finding_fact(finding: Finding, subject: dict[str, Any] | None = None) -> dict[str, Any]:
    """A finding as a fact; ``subject`` is the op fact it is about, whose ``inputs_agree`` tells
    rules whether the op inherited its error (and so can be explained by an earlier cause)."""
    return clean_fact({
        "id": finding.id, "fact": "finding", "rule": finding.rule, "pack": finding.pack, "kind": finding.kind,
        "severity": finding.severity, "root_cause": finding.root_cause, "op": finding.op,
        "op_type": finding.op_type, "index": finding.index, "confidence": finding.confidence,
        "inputs_agree": (subject or {}).get("inputs_agree"),
        "direction": (subject or {}).get("direction"),
    })


def run_rules(rules: Iterable[Rule], facts: list[dict[str, Any]],
              params: dict[str, dict[str, Any]] | None = None) -> EngineResult:
    """Fire ``rules`` over ``facts`` (and over the findings they produce) in a fresh ruleset."""
    params = params or {}
    collector = _Collector(params)
    definition: dict[str, Any] = {}
    for rule in rules:
        for n, alternative in enumerate(rule.compile_when(params.get(rule.id))):
            definition[rule.id if n == 0 else f"{rule.id}#{n}"] = {
                "all": alternative.all, "pri": rule.priority, "run": collector.action_for(rule, alternative.guards)}
    definition[CATCH_ALL] = {"all": [{"m": {"$ex": {"fact": 1}}}], "pri": 1_000_000, "run": lambda c: None}
    name = f"advisor_{os.getpid()}_{next(_run_ids)}"
    host = _SynchronousHost({name: definition})
    try:
        batch = list(facts)
        for _ in range(MAX_ROUNDS):
            collector.originals.update((fact["id"], fact) for fact in batch)
            if batch:
                host.assert_facts(name, batch)
            if collector.errors:
                raise EngineError(collector.errors[0])
            new = collector.take_new()
            if not new:
                break
            batch = [finding_fact(f, collector.subjects.get(f.id)) for f in new]
        else:
            raise EngineError(f"rules kept producing new findings after {MAX_ROUNDS} rounds: "
                              "a rule over findings probably matches its own output")
    finally:
        # Free the C-side ruleset: long-lived processes (batch workers, tests) run many rulesets.
        durable_rules_engine.delete_ruleset(host.get_ruleset(name)._handle)
    return EngineResult(findings=list(collector.findings.values()), explanations=collector.explanations,
                        fired=collector.fired)

