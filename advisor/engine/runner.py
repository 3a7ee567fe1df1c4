"""Compile rule packs to one durable_rules ruleset per run, assert facts, collect findings.

durable_rules facts this module is built around:
* a fact no rule matches raises MessageNotHandledException and loses the batch's actions, so every
  ruleset gets a catch-all rule;
* identical facts raise MessageObservedException, so every fact carries a unique ``id``;
* exceptions inside actions are swallowed onto the state, so our action wrapper catches them itself
  and the run fails with the rule's id;
* rulesets live in a process-global engine: each run gets a unique ruleset name and deletes it after;
* its C parser segfaults or hangs on numbers in exponent notation, so facts and rulesets alike are
  written with positional numbers (encode_json);
* ordering joins cannot go to durable_rules (conditions.Guard), and without them it would pair every
  fact of one pattern with every fact of the other; and its joins cost quadratically anyway: each
  beta node keeps the facts of a pattern in a fixed 512-bucket table and walks a bucket on every
  insertion (with 67k findings, a quarter of durable_rules' time). So durable_rules matches each
  pattern alone (a rule of one pattern whole; each distinct pattern of the others once, as a
  candidate) and the patterns of a rule are joined by index here (joins.IndexedJoin, explain.py);
* no durable rule relating two facts, facts are asserted in states of FACTS_PER_STATE facts each:
  its fact store is a 512-bucket table too (durable_host.SynchronousHost.assert_facts).
Findings are asserted back as ``finding`` facts until nothing new appears, so rules can reason over
findings (a root cause explains its downstream symptoms).
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import durable_rules_engine
from jinja2 import Template

from ..cjk import tidy
from ..diagnosis import Finding
from ..errors import EngineError
from ..facts.builder import clean_fact
from ..templating import fields_read, many_renders, render_bounded, render_joined
from .conditions import split_joins
from .durable_host import SynchronousHost, encode_json
from .explain import ExplainJoin, ExplanationGroup
from .joins import IndexedJoin, Prefilter
from .packs import Rule, template_env

MAX_ROUNDS = 10
CATCH_ALL = "__catch_all__"
CANDIDATE = "__candidates__"
# Every fact must match some rule's pattern, or durable_rules raises MessageNotHandledException and
# drops the batch's actions. This rule's first pattern matches every fact; its second never does, so
# it handles every fact without ever firing (an action per fact would cost more than the matching).
CATCH_ALL_RULE = {"all": [{"m": {"$ex": {"fact": 1}}}, {"never": {"$ex": {"__never__": 1}}}],
                  "pri": 1_000_000, "run": lambda c: None}
_run_ids = itertools.count()
# Facts per durable_rules state: the store's insertion cost grows with the facts stored, and each
# state has its own store, but a state has its cost too. Of 512, 2048 and 8192 facts a state, 2048
# was the fastest and smallest on a 1M-row comparison's 114k facts (issue 33).
FACTS_PER_STATE = 2048

#: fact kinds whose ``index`` is the op index a finding about them carries
OP_INDEXED = ("op", "finding", "layer", "overflow_record", "replay", "fix_check", "alternative_check", "residual",
              "calibration")


@dataclass
class EngineResult:
    findings: list[Finding]
    explanations: list[tuple[str, str, str]] = field(default_factory=list)  # (cause id, symptom id, rule)
    fired: dict[str, int] = field(default_factory=dict)                      # rule id -> times
    groups: list[ExplanationGroup] = field(default_factory=list)            # explanations as sets (explain.py)

    def every_explanation(self) -> list[tuple[str, str, str]]:
        """``explanations`` and the pairs of ``groups``, listed: for tests and small results only."""
        return [*self.explanations, *(pair for group in self.groups for pair in group.pairs())]


@functools.lru_cache(maxsize=1024)
def _fields_read(text: str) -> tuple[tuple[str, str], ...] | None:
    return fields_read(template_env, text)


_ABSENT = object()


def _typed(fact: Any, field: str) -> tuple[type, Any]:
    """A field's value with its type: 1, 1.0 and True render differently but are one dict key."""
    value = fact.get(field, _ABSENT) if isinstance(fact, dict) else _ABSENT
    return type(value), value


@functools.lru_cache(maxsize=4096)
def _template(text: str) -> Template:
    """An evidence template, compiled once per text (once per rule), not once per finding."""
    return template_env.from_string(text)


class Collector:
    """Builds findings and explanations from the matches of rules; never lets an exception escape
    into durable_rules. The test-only reference matcher (tests/engine/reference.py) feeds the same collector."""

    def __init__(self, params: dict[str, dict[str, Any]]) -> None:
        self.params = params
        self.findings: dict[str, Finding] = {}
        self.new: list[Finding] = []
        self.explanations: dict[tuple[str, str, str], None] = {}    # an ordered set
        self.errors: list[str] = []
        self.fired: dict[str, int] = {}
        # The facts as we built them, by id: evidence is rendered from these, not from the engine's
        # copies, which went through JSON (infinities clamped, see encode_facts).
        self.originals: dict[str, dict[str, Any]] = {}
        self.subjects: dict[str, dict[str, Any]] = {}     # finding id -> the fact it is about
        self.confidences: dict[tuple, str] = {}           # (template, fields it reads) -> rendered

    def original(self, fact: Any) -> dict[str, Any]:
        return self.originals.get(fact["id"]) or dict(fact)

    def fire(self, rule: Rule, matched: dict[str, dict[str, Any]]) -> None:
        """One match of ``rule``: a finding, or an explanation."""
        try:
            if rule.explain:
                self.fired[rule.id] = self.fired.get(rule.id, 0) + 1
                cause, symptom = matched[rule.explain["cause"]], matched[rule.explain["symptom"]]
                self.explanations[(cause["id"], symptom["id"], rule.id)] = None
            elif self._emit(rule, matched) is not False:   # False: its confidence template said no
                self.fired[rule.id] = self.fired.get(rule.id, 0) + 1
        except Exception as exc:  # noqa: BLE001 - reported with the rule id, see module doc
            self.errors.append(f"rule '{rule.id}' ({rule.source}): {type(exc).__name__}: {exc}")

    def action_for(self, rule: Rule) -> Callable[[Any], None]:
        """The durable_rules action of a rule it matches whole."""
        def action(closure: Any) -> None:
            try:
                matched = {alias: self.original(closure._m[alias]) for alias, _ in rule.patterns}
            except Exception as exc:  # noqa: BLE001 - see module doc
                self.errors.append(f"rule '{rule.id}' ({rule.source}): {type(exc).__name__}: {exc}")
                return
            self.fire(rule, matched)
        return action

    def candidates_for(self, joins: list[tuple[IndexedJoin, str]]) -> Callable[[Any], None]:
        """The durable_rules action of a pattern of rules joined here (the same pattern of several
        rules or alternatives is matched once): the fact is a candidate of each."""
        def action(closure: Any) -> None:
            fact = self.original(closure._m["m"])
            for join, alias in joins:
                join.add(alias, fact)
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
        # the languages' texts in one render; each alone when that cannot be (templating.render_joined)
        texts = render_joined(template_env, tuple(emit.evidence.values()), context) or \
            [render_bounded(_template(text), context) for text in emit.evidence.values()]
        evidence = {lang: tidy(text.strip(), lang) for lang, text in zip(emit.evidence, texts, strict=True)}
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
            text = self._confidence(confidence, context)
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

    def _confidence(self, text: str, context: dict[str, Any]) -> str:
        """A confidence template rendered, once per distinct value of the fields it reads: a rule's
        findings mostly share them (which way inputs_agree was read, no cosine in a statistics dump)."""
        reads = _fields_read(text)
        key = None if reads is None else (text, *(_typed(context.get(name), field) for name, field in reads))
        try:
            known = self.confidences.get(key) if key is not None else None
        except TypeError:       # a value that cannot be a key (a list)
            key = known = None
        if known is None:
            known = render_bounded(_template(text), context).strip()
            if key is not None:
                self.confidences[key] = known
        return known

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


def feed_findings_back(collector: Collector, facts: list[dict[str, Any]],
                       fire: Callable[[list[dict[str, Any]]], None]) -> None:
    """Fire ``facts`` (``fire`` matches a batch of facts and hands each match to ``collector``), then
    each round's new findings as ``finding`` facts, until a round adds none: rules reason over findings
    (a root cause explains its symptoms). The engine and the reference matcher share this loop."""
    batch = list(facts)
    for _ in range(MAX_ROUNDS):
        repeated = _repeated_id(batch, collector.originals)
        if repeated is not None:
            raise EngineError(f"two facts share the id '{repeated}': every fact needs one of its own")
        collector.originals.update((fact["id"], fact) for fact in batch)
        fire(batch)
        if collector.errors:
            raise EngineError(collector.errors[0])
        new = collector.take_new()
        if not new:
            return
        batch = [finding_fact(f, collector.subjects.get(f.id)) for f in new]
    raise EngineError(f"rules kept producing new findings after {MAX_ROUNDS} rounds: "
                      "a rule over findings probably matches its own output")


def _repeated_id(batch: list[dict[str, Any]], known: dict[str, Any]) -> str | None:
    """The first id of ``batch`` that an earlier fact (of the batch or of an earlier round) has too.
    durable_rules would only notice among the facts of one state (SynchronousHost.assert_facts)."""
    seen: set[Any] = set()
    for fact in batch:
        if fact["id"] in seen or fact["id"] in known:
            return str(fact["id"])
        seen.add(fact["id"])
    return None


def run_rules(rules: Iterable[Rule], facts: list[dict[str, Any]],
              params: dict[str, dict[str, Any]] | None = None) -> EngineResult:
    """Fire ``rules`` over ``facts`` (and over the findings they produce) in a fresh ruleset."""
    params = params or {}
    collector = Collector(params)
    definition: dict[str, Any] = {}
    joins: list[tuple[Rule, IndexedJoin]] = []
    candidates: dict[str, list[tuple[IndexedJoin, str]]] = {}     # one durable rule per distinct pattern
    prefilter = Prefilter()
    for rule in rules:
        if rule.judges is not None:   # judges every comparison row column by column (engine/judgement.py)
            continue
        action = collector.action_for(rule)
        for n, alternative in enumerate(rule.compile_when(params.get(rule.id))):
            name = rule.id if n == 0 else f"{rule.id}#{n}"
            if len(alternative.all) == 1:       # one pattern: durable_rules matches the rule whole
                (condition,) = alternative.all[0].values()
                definition[name] = {"all": alternative.all, "pri": rule.priority, "run": action}
                prefilter.add(condition)
                continue
            # A join of patterns: each pattern alone in durable_rules, the join here (module doc).
            patterns = [split_joins(alias, condition) for pattern in alternative.all
                        for alias, condition in pattern.items()]
            aliases = [alias for pattern in alternative.all for alias in pattern]
            guards = alternative.guards + [g for _, guards in patterns for g in guards]
            grouped = ExplainJoin.fits(aliases, rule.explain, guards) if rule.explain else False
            join = IndexedJoin(aliases, guards) if grouped is False else \
                ExplainJoin(rule.explain["cause"], rule.explain["symptom"], grouped)
            joins.append((rule, join))
            for alias, (condition, _) in zip(aliases, patterns, strict=True):
                prefilter.add(condition)
                text = encode_json(condition)
                if text not in candidates:
                    candidates[text] = []
                    definition[f"{CANDIDATE}{len(candidates)}"] = {
                        "all": [{"m": condition}], "pri": 0, "run": collector.candidates_for(candidates[text])}
                candidates[text].append((join, alias))
    definition[CATCH_ALL] = CATCH_ALL_RULE
    name = f"advisor_{os.getpid()}_{next(_run_ids)}"
    host = SynchronousHost({name: definition})

    def fire(batch: list[dict[str, Any]]) -> None:
        batch = [fact for fact in batch if prefilter.may_match(fact)]
        if batch:
            host.assert_facts(name, batch, per_state=FACTS_PER_STATE)
        for rule, join in joins:
            for matched in join.matches():
                collector.fire(rule, matched)

    try:
        with many_renders():   # each finding's evidence and confidence texts
            feed_findings_back(collector, facts, fire)
    finally:
        # Free the C-side ruleset: long-lived processes (batch workers, tests) run many rulesets.
        durable_rules_engine.delete_ruleset(host.get_ruleset(name)._handle)
    groups = [join.group(rule.id) for rule, join in joins if isinstance(join, ExplainJoin)]
    for group in groups:
        if count := group.count():
            collector.fired[group.rule] = collector.fired.get(group.rule, 0) + count
    return EngineResult(findings=list(collector.findings.values()), explanations=list(collector.explanations),
                        fired=collector.fired, groups=[g for g in groups if g.causes and g.symptoms])
