"""A run with hundreds of findings of one rule: the reports people read stay readable, report.json
keeps every finding. On the training step grown to 20,000 rows (conftest's ``training_20k``) each of
its ~400 overflow onsets is a finding."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from advisor.report.view import FULL_FINDINGS_PER_RULE


@pytest.fixture(scope="module")
def reports(training_20k, tmp_path_factory) -> dict[str, str]:
    from advisor.cli import main
    out = tmp_path_factory.mktemp("out")
    assert main(["run", str(training_20k), "-o", str(out), "--format", "json,md,html"]) == 0
    return {name: (out / f"report.{name}").read_text(encoding="utf-8") for name in ("json", "md", "html")}


def test_past_the_first_few_a_rules_findings_are_rows_of_one_table(reports):
    import json
    findings = json.loads(reports["json"])["findings"]
    active = Counter(f["rule"] for f in findings if not f["explained_by"])
    rule, count = active.most_common(1)[0]
    assert rule == "fp16-overflow" and count > 10 * FULL_FINDINGS_PER_RULE
    md = reports["md"]
    # In full (the advice's headings) the first few only; every other one is a table row with its op.
    full = [f for f in re.findall(r"^### \d+\. (.+?)(?: · .*)?$", md, re.M) if f == "FP16 overflow"]
    assert len(full) == FULL_FINDINGS_PER_RULE
    folded = re.search(rf"^### \d+\. More FP16 overflow findings \({count - FULL_FINDINGS_PER_RULE}\)$", md, re.M)
    assert folded is not None
    table = md[folded.end():].split("\n### ")[0]
    ops = [f["op"] for f in findings if f["rule"] == rule and not f["explained_by"]]
    assert all(f"`{op}`" in md for op in ops)
    assert sum(f"| `{op}` |" in table for op in ops) == count - FULL_FINDINGS_PER_RULE
    # report.json: every finding with its advice, as the contract says.
    assert all(f["advice"]["summary"] for f in findings)


def test_every_finding_keeps_an_anchor_in_the_html(reports):
    import json
    findings = json.loads(reports["json"])["findings"]
    html = reports["html"]
    active = [f for f in findings if not f["explained_by"]]
    assert all(f'id="{f["id"]}"' in html for f in active)
    assert html.count('class="finding folded"') == 1


def test_marks_on_one_pixel_are_drawn_once(reports):
    html = reports["html"]
    marks = re.findall(r'<g class="m-(\w+)" data-index="\d+"><title>([^<]*)</title><circle cx="([\d.]+)" '
                       r'cy="([\d.]+)"', html)
    spots = Counter((role, round(float(x)), round(float(y))) for role, _, x, y in marks)
    # Two plots (wide, narrow), each drawing a spot once.
    assert max(spots.values()) <= 2
    assert any(re.search(r"\(\+\d+\)$", title) for _, title, _, _ in marks)
