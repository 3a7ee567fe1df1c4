"""What the report says first: the verdict, its headline, the summary sentence and the vendor txt blocks.

Three states, read from the findings alone (as ``Diagnosis.verdict``: the terminal, every format and
the batch history say the same). A root cause: lead with it. No root cause and a rule found the
network consistent (a ``consistent`` finding): say so plainly. Neither (no rule covered the case, e.g.
with a reduced rule set or a ``network-consistent`` whose parameters the run does not meet): say
*that*, never "consistent".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..diagnosis import CONSISTENT, CONSISTENT_KINDS, UNEXPLAINED
from ..text import oneline
from .model import FindingGroup, FindingView, VendorBlock
from .text import fmt_value, join_sentences


@dataclass(frozen=True)
class VerdictTexts:
    verdict: str
    severity: str          # error | warning | info | ok
    headline: str
    summary: str
    vendor_blocks: tuple[VendorBlock, ...]


def cause_phrase(view: FindingView, labels: Mapping[str, str]) -> str:
    """"FP16 overflow at LayerNorm_3/Pow (op 12)", or the title alone for a network-level finding."""
    if not view.location:
        return view.title
    return labels["headline.cause"].format(title=view.title, location=view.location)


def verdict_texts(root: FindingView | None, groups: tuple[FindingGroup, ...], network: Mapping[str, Any],
                  lang: str, labels: Mapping[str, str], remedy_step: str | None = None) -> VerdictTexts:
    """``remedy_step``: the summary of the remedy step that answers the root cause, when there is one:
    the next step then points there instead of repeating the fix the remedy spells out."""
    if root is not None:
        return VerdictTexts(root.kind, root.severity, cause_phrase(root, labels),
                            _cause_summary(root, groups, lang, labels, remedy_step), _cause_blocks(root, groups))
    causes = [g.cause for g in groups]
    consistent = next((c for c in causes if c.kind in CONSISTENT_KINDS), None)
    if consistent is None:
        return _unexplained(causes, network, lang, labels)
    notes = [c for c in causes if c.kind not in CONSISTENT_KINDS]
    # With ops allowed to deviate (network-consistent's max_deviating_ops), "no op crosses" is not true:
    # the finding's evidence says how many do.
    sentences = ([] if network.get("deviating_ops") else [labels["summary.consistent"]]) + [consistent.evidence]
    if notes:
        sentences.append(labels["summary.notes"].format(n=len(notes)))
    first = _block(consistent)
    return VerdictTexts(CONSISTENT, "ok", labels["headline.consistent"], join_sentences(sentences, lang),
                        (first, *_serious_blocks(notes)))


def _block(view: FindingView) -> VendorBlock:
    return VendorBlock(oneline(view.title), view.index_text, oneline(view.advice.summary))


def _serious_blocks(views: list[FindingView]) -> tuple[VendorBlock, ...]:
    """Active warnings and errors are never hidden behind the verdict block."""
    return tuple(_block(v) for v in views if v.severity in ("error", "warning"))


def _cause_summary(root: FindingView, groups: tuple[FindingGroup, ...], lang: str,
                   labels: Mapping[str, str], remedy_step: str | None) -> str:
    """The cause, how much it explains, and what to do next. The evidence is not repeated here: the
    root cause's finding, right below the verdict in every format, gives it."""
    # An info-level root cause (a single-point deviation the output recovers from) is a note, not a fault.
    key = "summary.note" if root.severity == "info" else "summary.cause"
    if not root.location:
        key += "_no_location"
    sentences = [labels[key].format(title=root.title, location=root.location)]
    propagated = sum(len(g.symptoms) for g in groups if g.cause.id == root.id)
    if propagated:
        key = "summary.propagation_one" if propagated == 1 else "summary.propagation_many"
        sentences.append(labels[key].format(n=propagated))
    if remedy_step:
        sentences.append(labels["summary.next_remedy"].format(step=remedy_step.rstrip(".。")))
    else:
        sentences.append(labels["summary.next"].format(advice=root.advice.summary))
    return join_sentences(sentences, lang)


def _cause_blocks(root: FindingView, groups: tuple[FindingGroup, ...]) -> tuple[VendorBlock, ...]:
    """Root cause first, then every other active finding."""
    return tuple(_block(v) for v in [root] + [g.cause for g in groups if g.cause.id != root.id])


def _unexplained(causes: list[FindingView], network: Mapping[str, Any], lang: str,
                 labels: Mapping[str, str]) -> VerdictTexts:
    index, op = network.get("first_deviating_index"), network.get("first_deviating_op")
    sentences = []
    if network.get("deviating_ops") and (index is not None or op):
        location = labels["location.full" if op and index is not None else
                          ("location.op" if op else "location.index")].format(op=op, index=index)
        sentences.append(labels["summary.unexplained_ops"].format(n=network["deviating_ops"], location=location))
    if network.get("output_cosine") is not None:
        sentences.append(labels["summary.unexplained_output"].format(cosine=fmt_value(network["output_cosine"])))
    sentences.append(labels["unexplained.advice"])
    first = VendorBlock(labels["unexplained.title"], "NA" if index is None else str(index),
                        labels["unexplained.advice"])
    return VerdictTexts(UNEXPLAINED, "warning", labels["headline.unexplained"], join_sentences(sentences, lang),
                        (first, *_serious_blocks(causes)))
