"""Build the view model (model.py) from a Diagnosis, once, for every format."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..advice import BACKENDS, LANGUAGES, AdviceBook, preferred_backends, render_advice
from ..diagnosis import CONSISTENT, CONSISTENT_KINDS, Diagnosis, Finding, Series
from ..errors import UsageError
from ..remedy import Remedy
from ..remedy.model import setting_text
from ..templating import many_renders
from .labels import data_label, labels_for, post_labels
from .model import (
    SCHEMA,
    AdviceView,
    FindingGroup,
    FindingView,
    FixView,
    FoldedGroups,
    HintView,
    KeptOpView,
    PackView,
    RemedyFileView,
    RemedyStepView,
    RemedyView,
    ReportView,
    Row,
    SourceOpView,
    SourceView,
    ThresholdRow,
)
from .paths import shown_inputs, shown_path
from .plot import Marker, MarkerRole
from .run_details import key_op_columns, key_op_views, network_rows, override_rows, threshold_grid
from .sharpen import sharpen_hints
from .text import data_uri, fmt_confidence, fmt_value, json_safe
from .verdict import cause_phrase, verdict_texts
from .verification import verification_view

REMEDY_FOLDER = "remedy"
_SYNTAX = {"py": "python", "sh": "sh", "json": "json"}   # file extension -> Markdown fence language


def check_language(lang: str) -> None:
    if lang not in LANGUAGES:
        raise UsageError(f"unknown report language '{lang}': use one of {', '.join(LANGUAGES)}")


def build_view(diagnosis: Diagnosis, lang: str = "en", base: Path | None = None) -> ReportView:
    """``base``: the folder the reports go to; input paths are shown relative to it (or by name), so a
    shared report names no one's home folder."""
    check_language(lang)
    labels = labels_for(lang)
    if diagnosis.post is not None:      # advisor post: its verdicts speak of detections, not of a network
        labels.update(post_labels(lang))
    ranked = _ranked(diagnosis)
    root_id = diagnosis.root_cause.id if diagnosis.root_cause else None
    prefer = preferred_backends(diagnosis.backends, bool(diagnosis.network.get("training")))
    book = AdviceBook(diagnosis.advice_pages)
    with many_renders():   # each finding's advice page
        views = {f.id: _finding_view(f, lang, labels, f.id == root_id, prefer, book) for f in ranked}
    findings = tuple(views[f.id] for f in ranked)
    groups = _groups(ranked, views, labels, root_id)
    full_groups, folded = _fold(groups, labels)
    root = views[root_id] if root_id else None
    remedy = _remedy_view(diagnosis.remedy, views, labels, lang)
    answers_root = next((step.summary for step in remedy.steps if root_id in step.findings), None) if remedy else None
    verdict = verdict_texts(root, groups, diagnosis.network, lang, labels, answers_root)
    version = diagnosis.version or __version__
    thresholds = tuple(_threshold_rows(diagnosis.thresholds, labels))
    series = diagnosis.series
    source = _source_view(diagnosis, labels, base)
    columns = key_op_columns(series.layout, series.metrics) if series is not None else key_op_columns("tensor", ())
    return ReportView(
        language=lang,
        labels=labels,
        version=version,
        schema=SCHEMA,
        generated_by=labels["generated_by"].format(version=version),
        verdict=verdict.verdict,
        severity=verdict.severity,
        severity_label=labels[f"severity.{verdict.severity}"],
        is_consistent=verdict.verdict == CONSISTENT,
        headline=verdict.headline,
        summary=verdict.summary,
        root_cause=root,
        findings=findings,
        groups=groups,
        full_groups=full_groups,
        folded=folded,
        vendor_blocks=verdict.vendor_blocks,
        network=tuple(_rows(diagnosis.network, labels, "network", skip=("id", "fact"))),
        network_summary=tuple(network_rows(diagnosis.network, labels)),
        inputs=tuple(_rows(shown_inputs(diagnosis.inputs, base), labels, "input")),
        packs=tuple(PackView(p.name, p.version, shown_path(p.source, base), p.rules) for p in diagnosis.packs),
        thresholds=thresholds,
        threshold_grid=threshold_grid(thresholds),
        overrides=tuple(_rows(diagnosis.overrides, labels, "override")),
        settings=tuple(override_rows(diagnosis.overrides, labels)),
        key_ops=key_op_views(diagnosis.key_ops, _finding_at(full_groups, folded), labels, columns,
                             source.indexes if source else frozenset()),
        key_op_columns=tuple((c, labels.get(f"key_ops.{c}", c)) for c in columns),
        key_op_main=next((n for n, c in enumerate(columns) if c in ("out_cosine", "norm_rel_diff", "checksums_differ")),
                         0),
        plot_caption=_plot_caption(series, labels),
        sharpen=tuple(HintView(h.id, h.option, h.text[lang]) for h in sharpen_hints(diagnosis)),
        source=source,
        warnings=tuple(diagnosis.warnings),
        series=diagnosis.series,
        markers=_markers(groups),
        neighbourhood=diagnosis.neighbourhood,
        remedy=remedy,
        verification=verification_view(diagnosis.verification, labels, _output_threshold(diagnosis))
        if diagnosis.verification is not None else None,
        post=diagnosis.post,
    )


def _source_view(diagnosis: Diagnosis, labels: Mapping[str, str], base: Path | None) -> SourceView | None:
    """The comparison's rows behind the ops the page shows, one expandable block per op."""
    rows = diagnosis.source_rows
    if rows is None or not rows.by_op:
        return None
    names = {f.index: f.op for f in diagnosis.findings if f.index is not None}
    names.update({op.index: op.op for op in diagnosis.key_ops})
    ops = []
    for index, lines in sorted(rows.by_op.items()):
        numbers = [n for n, _ in lines]
        span = str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}–{numbers[-1]}"
        title = labels["source.op"].format(location=_location(names.get(index), index, labels), lines=span)
        ops.append(SourceOpView(index, f"src-op-{index}", title, tuple(lines)))
    return SourceView(shown_path(rows.file, base), rows.header, tuple(ops))


def _plot_caption(series: Series | None, labels: Mapping[str, str]) -> str:
    """What a plot without cosine shows: the statistics' relative errors, or the checksums' count and
    the first call whose checksums differ."""
    if series is None or series.layout == "tensor":
        return ""
    if series.layout == "statistics":
        return labels["plot.caption_statistics"]
    compared, differ = series.checksums or (0, 0)
    first = next((p for p in sorted(series.points, key=lambda p: p.index)
                  if (p.values.get("checksums_differ") or 0) > 0), None)
    if first is None:
        return labels["plot.caption_checksum_none"].format(compared=compared)
    return labels["plot.caption_checksum"].format(differ=differ, compared=compared,
                                                  first=_location(first.op, first.index, labels))


def _output_threshold(diagnosis: Diagnosis) -> float:
    """The cosine threshold the network output is judged by (its compute dtype's; a run that compared
    tensors always has the table's ``default``)."""
    table = diagnosis.thresholds
    dtype = str(diagnosis.network.get("compute_dtype") or diagnosis.network.get("dtype") or "default")
    return float((table[dtype] if dtype in table else table["default"])["cosine"])


def _ranked(diagnosis: Diagnosis) -> list[Finding]:
    """Findings in rank order with the root cause first, even if the engine left it out of the list."""
    findings = list(diagnosis.findings)
    root = diagnosis.root_cause
    if root is not None and all(f.id != root.id for f in findings):
        findings.insert(0, root)
    return findings


def _location(op: str | None, index: int | None, labels: Mapping[str, str]) -> str:
    if op and index is not None:
        return labels["location.full"].format(op=op, index=index)
    if op:
        return labels["location.op"].format(op=op)
    if index is not None:
        return labels["location.index"].format(index=index)
    return ""


_BACKEND_KEYS = {lang: {names[lang]: key for key, names in BACKENDS.items()} for lang in LANGUAGES}   # label -> key


def _finding_view(finding: Finding, lang: str, labels: Mapping[str, str], is_root: bool,
                  prefer: Sequence[str] = (), book: AdviceBook | None = None) -> FindingView:
    advice = render_advice(finding, lang, prefer, book)
    backend_keys = _BACKEND_KEYS[lang]
    return FindingView(
        id=finding.id,
        rule=finding.rule,
        pack=finding.pack,
        kind=finding.kind,
        severity=finding.severity,
        severity_label=labels.get(f"severity.{finding.severity}", finding.severity),
        tone="ok" if finding.kind in CONSISTENT_KINDS else finding.severity,
        title=finding.title.get(lang) or finding.title.get("en") or advice.title,
        op=finding.op,
        index=finding.index,
        index_text="NA" if finding.index is None else str(finding.index),
        op_type=finding.op_type,
        location=_location(finding.op, finding.index, labels),
        confidence=json_safe(float(finding.confidence)),
        confidence_text=fmt_confidence(finding.confidence),
        evidence=finding.evidence.get(lang) or finding.evidence.get("en", ""),
        values=json_safe(finding.values),
        advice=AdviceView(
            title=advice.title,
            summary=advice.summary,
            what=advice.what,
            why=advice.why,
            confirm=advice.confirm,
            fixes=tuple(FixView(backend_keys.get(label, label), label, text) for label, text in advice.fixes),
            references=tuple(advice.references),
        ),
        source_lines=tuple(finding.source_lines),
        explained_by=finding.explained_by,
        is_root_cause=is_root,
    )


def _active_cause(finding: Finding, by_id: Mapping[str, Finding], root_id: str | None) -> Finding:
    """The finding at the top of ``finding``'s explained_by chain (itself when unexplained, when the
    explaining id is unknown, or when the chain loops); the root cause is never explained away."""
    seen = {finding.id}
    current = finding
    while current.id != root_id and current.explained_by in by_id:
        current = by_id[current.explained_by]  # type: ignore[index]
        if current.id in seen:
            return finding
        seen.add(current.id)
    return current


def _groups(ranked: list[Finding], views: Mapping[str, FindingView], labels: Mapping[str, str],
            root_id: str | None) -> tuple[FindingGroup, ...]:
    by_id = {f.id: f for f in ranked}
    symptoms: dict[str, list[FindingView]] = {}
    causes: list[str] = []
    for finding in ranked:
        cause = _active_cause(finding, by_id, root_id)
        if cause is finding:
            causes.append(finding.id)
        else:
            symptoms.setdefault(cause.id, []).append(views[finding.id])
    return tuple(
        FindingGroup(views[c], tuple(symptoms.get(c, ())),
                     labels["propagation_of"].format(cause=cause_phrase(views[c], labels)))
        for c in causes
    )


# Active findings of one rule shown in full (evidence and advice); past them, one table row each.
FULL_FINDINGS_PER_RULE = 10


def _fold(groups: tuple[FindingGroup, ...],
          labels: Mapping[str, str]) -> tuple[tuple[FindingGroup, ...], tuple[FoldedGroups, ...]]:
    """(shown in full, folded): the first FULL_FINDINGS_PER_RULE active findings of each rule (and
    the root cause) in full, in rank order; each rule's others in one table after them."""
    full: list[FindingGroup] = []
    first: dict[str, FindingView] = {}        # rule -> its first finding shown in full
    shown: dict[str, int] = {}
    rest: dict[str, list[FindingGroup]] = {}
    for group in groups:
        rule = group.cause.rule
        if shown.get(rule, 0) < FULL_FINDINGS_PER_RULE or group.cause.is_root_cause:
            full.append(group)
            shown[rule] = shown.get(rule, 0) + 1
            first.setdefault(rule, group.cause)
        else:
            rest.setdefault(rule, []).append(group)
    folded = tuple(FoldedGroups(rule, labels["findings.more"].format(title=more[0].cause.title, count=len(more)),
                                labels["findings.more_note"].format(first=first[rule].location or first[rule].title),
                                tuple(more))
                   for rule, more in rest.items())
    return tuple(full), folded


def _rows(data: Mapping[str, Any], labels: Mapping[str, str], group: str,
          skip: tuple[str, ...] = ()) -> list[Row]:
    return [Row(str(key), data_label(labels, group, str(key)), json_safe(value), fmt_value(value))
            for key, value in data.items() if key not in skip]


def _threshold_rows(thresholds: Mapping[str, Mapping[str, float]],
                    labels: Mapping[str, str]) -> list[ThresholdRow]:
    return [ThresholdRow(str(dtype), str(metric), data_label(labels, "metric", str(metric)),
                         json_safe(value), fmt_value(value))
            for dtype, metrics in thresholds.items() for metric, value in metrics.items()]


def _finding_at(full_groups: tuple[FindingGroup, ...], folded: tuple[FoldedGroups, ...]) -> dict[int, str]:
    """Op index -> the id of the first finding shown for it (causes before their symptoms); a folded
    group shows its cause's row only, which stands for its symptoms too."""
    found: dict[int, str] = {}
    shown = [(group, False) for group in full_groups] + [(group, True) for more in folded for group in more.groups]
    for group, as_row in shown:
        for view in (group.cause, *group.symptoms):
            if view.index is not None:
                found.setdefault(view.index, group.cause.id if as_row else view.id)
    return found


def _markers(groups: tuple[FindingGroup, ...]) -> tuple[Marker, ...]:
    marked: list[tuple[FindingView, MarkerRole]] = []
    for group in groups:
        marked.append((group.cause, "root" if group.cause.is_root_cause else "finding"))
        marked.extend((symptom, "symptom") for symptom in group.symptoms)
    return tuple(Marker(index=view.index, role=role,
                        label=f"{view.title} — {view.location}" if view.location else view.title)
                 for view, role in marked if view.index is not None)


def _remedy_view(remedy: Remedy | None, views: Mapping[str, FindingView], labels: Mapping[str, str],
                 lang: str) -> RemedyView | None:
    if remedy is None:
        return None
    steps = []
    answered: set[str] = set()
    for step in remedy.steps:
        folder = f"{REMEDY_FOLDER}/step{step.step}"
        files = tuple(RemedyFileView(backend, BACKENDS[backend][lang], name, f"{folder}/{backend}/{name}",
                                     f"step{step.step}-{backend}-{name}", _SYNTAX.get(name.rpartition(".")[2], "text"),
                                     text, data_uri(text))
                      for backend in remedy.backends for name, text in step.files.get(backend, {}).items())
        added = [views[f] for f in step.findings if f not in answered and f in views]
        answered.update(step.findings)
        steps.append(RemedyStepView(
            step=step.step,
            title=labels["remedy.step"].format(n=step.step),
            summary=step.summary.get(lang) or step.summary.get("en", ""),
            settings=tuple(Row(knob, data_label(labels, "knob", knob), json_safe(value), setting_text(value))
                           for knob, value in step.settings.items()),
            keep=tuple(KeptOpView(op.op, op.golden, op.op_type, op.precision, op.finding,
                                  views[op.finding].title if op.finding in views else op.finding)
                       for op in step.keep),
            findings=step.findings,
            reasons=tuple(_reason(view, labels) for view in added),
            folder=folder,
            files=files,
        ))
    return RemedyView(backends=remedy.backends, backend_labels=tuple(BACKENDS[b][lang] for b in remedy.backends),
                      steps=tuple(steps), folder=REMEDY_FOLDER, readme=f"{REMEDY_FOLDER}/README.md")


def _reason(view: FindingView, labels: Mapping[str, str]) -> str:
    """Why a step is there: the finding it answers, where, and its evidence."""
    where = f" — {view.location}" if view.location else ""
    return f"{view.title}{where}{labels['colon']} {view.evidence}" if view.evidence else f"{view.title}{where}"
