"""Op names, evidence and advice come from models and packs: no report may let them become markup."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

import advisor.advice
from advisor.diagnosis import Diagnosis, Finding
from advisor.report import render
from advisor.report.markdown import md_code, md_text
from advisor.report.reporters import environment, templates_dir

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
HTML_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "footer", "section", "article",
             "h1", "h2", "h3", "h4", "p", "div", "span", "strong", "code", "pre", "a", "ul", "li", "dl", "dt", "dd",
             "details", "summary", "table", "thead", "tbody", "tr", "th", "td",
             "svg", "g", "rect", "line", "polyline", "circle", "text", "wbr", "path"}

EVIL_PAGE = {
    "title": {"en": "Evil <b>page</b>", "zh": "恶意 <b>页面</b>"},
    **{lang: {"what": "<b>bold</b> {{ op }} and `<i>code</i>`",
              "why": "Because ``` is not a fence here <u>x</u>",
              "confirm": "Run:\n```\n</code></pre><script>alert(2)</script>\n```\nthen <em>check</em>.",
              "fix": {"any": "\\`<img src=y onerror=alert(3)>` and ``<img src=z>`"},
              "references": ["javascript:alert(4)", "https://example.org/a?b=<c>"]}
       for lang in ("en", "zh")},
}


@pytest.fixture
def evil(advice_pages: Path, root_cause: Diagnosis) -> Diagnosis:
    """The realistic root-cause diagnosis (series, thresholds...) with hostile names everywhere."""
    (advice_pages / "evil.yaml").write_text(yaml.safe_dump(EVIL_PAGE, allow_unicode=True), encoding="utf-8")
    root = Finding(id=f"evil@1{IMG}", rule=f"rule{SCRIPT}", pack="<svg onload=alert(5)>", kind="evil",
                   severity="error", title={"en": f"Title {SCRIPT}", "zh": f"标题 {SCRIPT}"}, op=SCRIPT, index=1,
                   op_type="</td><b>Pow", evidence={"en": f"max at {SCRIPT} | pipe", "zh": f"最大值 {SCRIPT}"},
                   values={"op": SCRIPT})
    symptom = Finding(id="evil@2", rule="rule", pack="core", kind="evil", severity="warning",
                      title={"en": "Symptom"}, op=IMG, index=2, op_type="a|b", evidence={"en": f"from {IMG}"},
                      explained_by=root.id)
    backticks = Finding(id="evil@3", rule="rule", pack="core", kind="evil", severity="warning",
                        title={"en": "Backticks"}, op="a`b|c``<x>", index=3, evidence={"en": "`<img src=q>"})
    diagnosis = root_cause
    diagnosis.root_cause = root
    diagnosis.findings = [root, backticks, symptom]
    diagnosis.inputs = {"comparison": "a<b>.csv", "<role>": "x"}
    diagnosis.warnings = ["<iframe src=x></iframe>"]
    diagnosis.network = {"<k>": "<v>"}
    diagnosis.overrides = {"<o>": "<p>"}
    return diagnosis


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        self.hrefs += [value or "" for name, value in attrs if name == "href"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_shows_hostile_names_only_escaped(evil: Diagnosis, lang: str) -> None:
    html = render(evil, "html", lang)
    collector = TagCollector()
    collector.feed(html)
    assert collector.tags <= HTML_TAGS, collector.tags - HTML_TAGS
    assert not {a for a in collector.attributes if a.startswith("on")}
    assert collector.hrefs == []                      # neither reference is a safe http(s) URL
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<script" not in html and "<img" not in html and "<iframe" not in html


def test_html_links_only_plain_http_references(evil: Diagnosis, advice_pages: Path) -> None:
    page = {**EVIL_PAGE, "en": {**EVIL_PAGE["en"], "references": ["https://example.org/fp16", "ftp://x"]}}
    (advice_pages / "evil.yaml").write_text(yaml.safe_dump(page, allow_unicode=True), encoding="utf-8")
    advisor.advice.clear_cache()
    collector = TagCollector()
    collector.feed(render(evil, "html", "en"))
    assert set(collector.hrefs) == {"https://example.org/fp16"}


def test_html_templates_autoescape() -> None:
    env = environment(templates_dir())
    assert env.from_string("{{ x }}").render(x="<b>") == "<b>"            # not an HTML template
    assert env.get_template("report.html.j2").environment.autoescape("report.html.j2") is True
    assert env.autoescape("report.md.j2") is False


def test_svg_in_html_is_escaped(evil: Diagnosis) -> None:
    html = render(evil, "html", "en")
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert "Title &lt;script&gt;alert(1)&lt;/script&gt;" in svg


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_never_lets_html_through(evil: Diagnosis, lang: str, markdown_html) -> None:
    """As a reader sees it: rendered by a CommonMark parser, only Markdown's own elements, names as text."""
    markdown = render(evil, "md", lang)
    html, foreign = markdown_html(markdown)
    assert not foreign
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<code>" not in markdown                    # code is Markdown code, never HTML of ours


def test_markdown_tables_keep_their_columns(evil: Diagnosis) -> None:
    rows = [line for line in render(evil, "md", "en").splitlines() if line.startswith("|")]
    widths = {len(re.findall(r"(?<!\\)\|", row)) - 1 for row in rows}
    assert widths == {2, 3, 6, 7}       # network, thresholds, root cause, symptom tables: no cell split


def test_md_filters() -> None:
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x") == "`` `x ``"
    assert md_code("a|b", cell=True) == "`a\\|b`"
    assert md_code("<script>") == "`<script>`"                        # a code span shows it literally
    assert md_code("") == "—" and md_code(None) == "—"                  # never an empty code span
    assert md_text("x < y and `a.b` and `a<b`") == "x \\< y and `a.b` and `a<b`"
    assert md_text("C:\\models\\") == "C:\\\\models\\\\"
    assert md_text("an unpaired ` tick") == "an unpaired \\` tick"
    assert md_text("``<b>`") == "\\`\\`\\<b>\\`"
    assert md_text("a`b``<x> and `<i>`") == "a`b``<x> and `\\<i>\\`"   # CommonMark pairing
    assert md_text("line\n```\nfoo()\n```\n") == "line\n```\nfoo()\n```\n"     # fences are kept
    assert md_text("line\n```\n<b>\n```") == "line\n```\n<b>\n```"
    assert md_text("```\n<b>\n```") == "``` <b> ```"                  # after a label: a code span
    assert md_text("a\nb | c", cell=True) == "a b \\| c"


def test_txt_is_plain_text_on_one_line_per_field(evil: Diagnosis) -> None:
    lines = render(evil, "txt", "en").splitlines()
    assert lines[0] == f"Detection Type: Title {SCRIPT}"
    assert all(line == "" or line.split(":")[0] in {"Detection Type", "Operator Index", "Expert Advice"}
               for line in lines)
