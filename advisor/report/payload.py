"""The JSON report: the machine contract, published as reports/report.schema.json.

Built from the view model like every other format. Values are already JSON-safe (NaN and infinities
are null), and ``json.dumps(allow_nan=False)`` makes sure of it: the output is strict JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..post.exhibit import PostExhibit
from .model import FindingView, RemedyView, ReportView
from .text import json_safe


def _finding(view: FindingView) -> dict[str, Any]:
    advice = view.advice
    return {
        "id": view.id,
        "rule": view.rule,
        "pack": view.pack,
        "kind": view.kind,
        "severity": view.severity,
        "title": view.title,
        "op": view.op,
        "index": view.index,
        "op_type": view.op_type,
        "confidence": view.confidence,
        "evidence": view.evidence,
        "values": view.values,
        "advice": {
            "summary": advice.summary,
            "what": advice.what,
            "why": advice.why,
            "confirm": advice.confirm,
            "fixes": [{"backend": fix.backend, "text": fix.text} for fix in advice.fixes],
            "references": list(advice.references),
        },
        "source_lines": list(view.source_lines),
        "explained_by": view.explained_by,
    }


def _root_cause(view: FindingView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    return {"id": view.id, "kind": view.kind, "op": view.op, "index": view.index, "rule": view.rule,
            "severity": view.severity, "confidence": view.confidence}


def _remedy(view: RemedyView | None) -> dict[str, Any] | None:
    """Steps with their settings, kept ops and every backend's files (the benchmark applies them from
    here: steps[i].settings and steps[i].keep[j].golden are part of the contract)."""
    if view is None:
        return None
    steps = []
    for step in view.steps:
        files: dict[str, dict[str, str]] = {}
        for file in step.files:
            files.setdefault(file.backend, {})[file.name] = file.text
        steps.append({
            "step": step.step,
            "settings": {row.key: row.value for row in step.settings},
            "keep": [{"op": op.op, "golden": list(op.golden), "op_type": op.op_type, "precision": op.precision,
                      "finding": op.finding} for op in step.keep],
            "findings": list(step.findings),
            "summary": step.summary,
            "files": files,
        })
    return {"backends": list(view.backends), "steps": steps}


def report_payload(view: ReportView) -> dict[str, Any]:
    thresholds: dict[str, dict[str, float | None]] = {}
    for row in view.thresholds:
        thresholds.setdefault(row.dtype, {})[row.metric] = row.value
    return {
        "schema": view.schema,
        "version": view.version,
        "language": view.language,
        "verdict": view.verdict,
        "severity": view.severity,
        "headline": view.headline,
        "summary": view.summary,
        "root_cause": _root_cause(view.root_cause),
        "findings": [_finding(f) for f in view.findings],
        "network": {row.key: row.value for row in view.network},
        "inputs": {row.key: row.value for row in view.inputs},
        "packs": [{"name": p.name, "version": p.version, "source": p.source, "rules": p.rules}
                  for p in view.packs],
        "thresholds": thresholds,
        "overrides": {row.key: row.value for row in view.overrides},
        "warnings": list(view.warnings),
        "sharpen": [{"id": h.id, "option": h.option, "why": h.text} for h in view.sharpen],
        "remedy": _remedy(view.remedy),
        "verification": view.verification.payload if view.verification is not None else None,
        **({"post": _post(view.post)} if view.post is not None else {}),
    }


def _post(exhibit: PostExhibit) -> dict[str, Any]:
    """advisor post: the image drawn, its boxes, the mappings tried and the class tables."""
    data = json_safe(asdict(exhibit))
    data["categories"] = {str(k): v for k, v in exhibit.categories.items()}
    return data


def render_json(view: ReportView) -> str:
    """The payload indented, except that each element of a list of objects (a finding, a key op...)
    is one line: Python indents with its pure-Python encoder, 3x slower than the C one on the 6,700
    findings of a 1M-row comparison, and a line per finding reads and diffs as well.
    The pieces are joined once: on 33k findings (158 MB of JSON) joining each list, then each
    field, then the whole held four copies at once."""
    pieces = ["{\n"]
    for key, value in report_payload(view).items():
        if len(pieces) > 1:
            pieces.append(",\n")
        pieces.append(f"  {json.dumps(key, ensure_ascii=False)}: ")
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            pieces.append("[\n")
            for n, item in enumerate(value):
                pieces += (",\n    " if n else "    ", _compact(item))
            pieces.append("\n  ]")
        else:
            pieces.append(json.dumps(value, ensure_ascii=False, allow_nan=False, indent=2).replace("\n", "\n  "))
    pieces.append("\n}\n")
    return "".join(pieces)


# One encoder for every element (json.dumps with options makes one per call); the payload is built
# fresh from the view, so it holds no cycle to look for.
_COMPACT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "), check_circular=False)


def _compact(value: Any) -> str:
    return _COMPACT.encode(value)
