"""The nightly index reads like the reports: a regression lists one line per new problem, titled as a
reader knows it, not raw rule ids, and the findings a root cause explains as its propagation are counted
under it, never listed as more "new" regressions. Names break at / . _ and the tables are cards on phones
(tests/report/test_report_browser.py looks at them in a real browser)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from .conftest import CLEAN, OVERFLOW, Workspace


class _Regressions(HTMLParser):
    """The text of every <li> under the Regressions section."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.item, self.items = False, None, []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "section":
            self.inside = ("class", "regressions") in attrs
        if self.inside and tag == "li":
            self.item = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self.item is not None:
            self.items.append("".join(self.item).strip())
            self.item = None
        if tag == "section":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.item is not None:
            self.item.append(data)


def test_a_regression_lists_its_events_not_its_propagation(workspace: Workspace) -> None:
    manifest = workspace.manifest({"bert": CLEAN})
    assert workspace.batch(manifest).code == 0
    workspace.put("bert", OVERFLOW)
    assert workspace.batch(manifest).code == 0
    shown = workspace.history_json("show", "latest", "--job", "bert")
    findings = shown["jobs"][0]["findings"] if "jobs" in shown else shown["findings"]
    explained = sum(1 for f in findings if f["explained"])
    assert explained >= 2, "the overflow scenario explains several findings as its propagation"

    page = (workspace.out / "index.html").read_text(encoding="utf-8")
    parser = _Regressions()
    parser.feed(page)
    new = [item for item in parser.items if item.startswith("new:")]
    events = sum(1 for f in findings if not f["explained"] and f["kind"] != "consistent")
    assert len(new) == events < events + explained
    assert any(item.startswith("new: FP16 overflow at ") for item in new)
    assert not any(re.search(r"new: [a-z0-9]+(-[a-z0-9]+)+:", item) for item in new), new   # no raw rule ids
    assert f"{explained} new findings explained as propagation" in " ".join(parser.items)


def test_job_names_break_at_separators_and_the_jobs_table_becomes_cards(workspace: Workspace) -> None:
    manifest = workspace.manifest({"team_a/bert.large_fp16": CLEAN})
    assert workspace.batch(manifest).code == 0
    page = (workspace.out / "index.html").read_text(encoding="utf-8")
    assert "team_<wbr>a/<wbr>bert.<wbr>large_<wbr>fp16" in page
    assert '<table class="jobs cards">' in page and 'data-label="Output cosine"' in page
