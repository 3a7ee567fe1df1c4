"""The remedy in the reports: report.json carries it (schema-valid, with and without one), HTML offers
every file as a download and a preview, Markdown shows the files in fences, txt gives one line per
step, and write_reports puts the files under OUTDIR/remedy/ atomically. Hostile op names stay text."""

from __future__ import annotations

import base64
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
import yaml

import advisor.report.outset
from advisor.diagnosis import Diagnosis, Finding
from advisor.errors import UsageError
from advisor.remedy import remedy_for
from advisor.report import render, write_reports
from advisor.resources import data_dir


def visible(folder: Path) -> list[str]:
    """The names in ``folder`` a user sees with ``ls`` (advisor keeps its report sets in a hidden folder)."""
    return sorted(n for n in os.listdir(folder) if n != ".advisor-reports")

SCRIPT = "</script><script>alert(1)</script>"
HOSTILE_OPS = [f"Conv_{SCRIPT}", "two\nlines", "a`b```c", 'q"uote\'s', "pipe|cell"]
QUANT_PAGE = {"title": {"en": "Quantisation error", "zh": "量化误差"},
              **{lang: {"what": "{{ op }} loses precision when quantised.", "why": "Outliers.",
                        "confirm": "Compare per layer.", "fix": {"any": "Use per-channel weights."},
                        "references": ["advisor"]} for lang in ("en", "zh")}}
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "footer", "section", "article",
                "h1", "h2", "h3", "h4", "p", "div", "span", "strong", "code", "pre", "a", "ul", "li", "dl", "dt",
                "dd", "details", "summary", "table", "thead", "tbody", "tr", "th", "td",
                "svg", "g", "rect", "line", "polyline", "circle", "text", "wbr", "path"}


@pytest.fixture
def remedied(advice_pages: Path, root_cause: Diagnosis) -> Diagnosis:
    """The realistic root-cause diagnosis with an int8 remedy for every backend: settings, then two
    groups of ops, one of them with hostile names."""
    (advice_pages / "quantization_test.yaml").write_text(yaml.safe_dump(QUANT_PAGE, allow_unicode=True),
                                                         encoding="utf-8")
    root = Finding(id="quant@12", rule="quant-rule", pack="test", kind="quantization_test", severity="error",
                   title={"en": "Quantisation error", "zh": "量化误差"}, root_cause=True, op="MatMul_12", index=12,
                   evidence={"en": "per-channel ranges differ 40x", "zh": "各通道范围相差 40 倍"},
                   values={"fix_settings": "weight_quant_granularity=per_channel;activation_quant_algo=asymmetric",
                           "fix_keep": "MatMul_12", "fix_keep_golden": "/enc/attn/MatMul", "fix_precision": "float16"})
    hostile = Finding(id="quant@30", rule="quant-rule", pack="test", kind="quantization_test", severity="warning",
                      title={"en": "Quantisation error", "zh": "量化误差"}, root_cause=True, op=HOSTILE_OPS[0],
                      index=30, evidence={"en": "evidence"}, values={"fix_keep": ",".join(HOSTILE_OPS)})
    root_cause.root_cause = root
    root_cause.findings = [root, hostile, *root_cause.findings[1:]]
    root_cause.remedy, warnings = remedy_for(root, root_cause.findings)
    assert warnings == []
    return root_cause


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def assert_valid(validator, report: dict) -> None:
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_json_carries_the_remedy_and_follows_the_schema(remedied: Diagnosis, validator, lang: str) -> None:
    report = json.loads(render(remedied, "json", lang))
    assert_valid(validator, report)
    remedy = report["remedy"]
    assert remedy["backends"] == ["ascend", "magicmind", "tensorrt", "onnxruntime", "pytorch"]
    assert [s["step"] for s in remedy["steps"]] == [1, 2, 3]
    assert remedy["steps"][0]["settings"] == {"weight_quant_granularity": "per_channel",
                                              "activation_quant_algo": "asymmetric"}
    assert remedy["steps"][0]["keep"] == [] and remedy["steps"][0]["findings"] == ["quant@12"]
    assert remedy["steps"][1]["keep"] == [{"op": "MatMul_12", "golden": ["/enc/attn/MatMul"], "op_type": None,
                                           "precision": "float16", "finding": "quant@12"}]
    last = remedy["steps"][2]
    assert [k["golden"] for k in last["keep"]] == [["/enc/attn/MatMul"], *[[n.strip()] for n in HOSTILE_OPS]]
    assert last["findings"] == ["quant@12", "quant@30"]
    for step, model in zip(remedy["steps"], remedied.remedy.steps, strict=True):
        assert step["files"] == model.files and step["summary"] == model.summary[lang]


def test_json_without_a_remedy_says_null(root_cause: Diagnosis, validator) -> None:
    report = json.loads(render(root_cause, "json", "en"))
    assert report["remedy"] is None
    assert_valid(validator, report)


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.downloads: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        values = dict(attrs)
        if tag == "a" and "download" in values:
            self.downloads[values["download"] or ""] = values.get("href") or ""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_html_offers_every_file_as_a_download_and_keeps_names_as_text(remedied: Diagnosis, lang: str) -> None:
    html = render(remedied, "html", lang)
    page = Page()
    page.feed(html)
    assert page.tags <= ALLOWED_TAGS and not {a for a in page.attributes if a.startswith("on")}
    assert "<script" not in html
    expected = {f"step{s.step}-{backend}-{name}": text for s in remedied.remedy.steps
                for backend, files in s.files.items() for name, text in files.items()}
    assert set(page.downloads) == set(expected)
    for name, href in page.downloads.items():
        prefix = "data:text/plain;charset=utf-8;base64,"
        assert href.startswith(prefix)
        assert base64.b64decode(href[len(prefix):]).decode("utf-8") == expected[name]
    heading = "修复方案" if lang == "zh" else "Remedy"
    assert f"<h2>{heading}</h2>" in html
    assert html.index('id="quant@12"') < html.index('id="remedy"') < html.index('class="run"')
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_markdown_shows_each_file_literally(remedied: Diagnosis, lang: str, markdown_html) -> None:
    markdown = render(remedied, "md", lang)
    assert not markdown_html(markdown)[1]
    for step in remedied.remedy.steps:
        for files in step.files.values():
            for text in files.values():
                if text:
                    fence = re.search(r"\n(`{3,})[a-z]*\n" + re.escape(text), markdown)
                    assert fence and len(fence.group(1)) > max(map(len, re.findall("`+", text)), default=0)
    finding = "量化误差" if lang == "zh" else "Quantisation error"       # the kept op's finding, by its title
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and line.endswith(f"| {finding} |")]
    assert len(rows) == 1 + 1 + len(HOSTILE_OPS)             # the kept ops of steps 2 and 3
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 6 for row in rows)     # no name splits a cell


def test_txt_has_one_line_per_step(remedied: Diagnosis) -> None:
    lines = render(remedied, "txt", "en").splitlines()
    remedy_lines = [line for line in lines if line.startswith("Remedy step")]
    assert [line.split(":")[0] for line in remedy_lines] == ["Remedy step 1", "Remedy step 2", "Remedy step 3"]
    assert lines[-3:] == remedy_lines
    assert render(remedied, "txt", "zh").splitlines()[-1].startswith("修复第 3 步：")


def test_files_are_written_under_remedy_with_a_readme(remedied: Diagnosis, tmp_path: Path,
                                                      markdown_html) -> None:
    paths = write_reports(remedied, tmp_path, formats=("json",), lang="zh")
    assert paths[0] == tmp_path / "report.json" and paths[1] == tmp_path / "remedy" / "README.md"
    written = {p.relative_to(tmp_path).as_posix() for p in [tmp_path / "report.json", *(tmp_path / "remedy").rglob("*")]
               if p.is_file()}
    expected = {f"remedy/step{s.step}/{backend}/{name}" for s in remedied.remedy.steps
                for backend, files in s.files.items() for name in files}
    assert written == {"report.json", "remedy/README.md"} | expected
    for step in remedied.remedy.steps:
        for backend, files in step.files.items():
            for name, text in files.items():
                assert (tmp_path / "remedy" / f"step{step.step}" / backend / name).read_text(encoding="utf-8") == text
    readme = (tmp_path / "remedy" / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# 修复方案") and "## 第 3 步" in readme and "`step1/ascend/amct_quant.cfg`" in readme
    assert not markdown_html(readme)[1]


def test_a_failing_write_leaves_nothing_half_written(remedied: Diagnosis, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "report.json").write_text("previous report", encoding="utf-8")
    real_open = os.open
    calls = []

    def open_fails_late(path, flags, mode=0o777, **kwargs):
        if flags & os.O_CREAT and not Path(path).name.startswith(".") and Path(path).name != "lock":
            calls.append(path)                   # a report or remedy file being written
            if len(calls) == 3:                  # among the remedy files, after the report was staged
                raise OSError(28, "No space left on device")
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(advisor.report.outset.os, "open", open_fails_late)
    with pytest.raises(UsageError, match="No space left on device"):
        write_reports(remedied, tmp_path, formats=("json",))
    assert visible(tmp_path) == ["report.json"]                   # no remedy folder, no temporary file
    assert (tmp_path / "report.json").read_text(encoding="utf-8") == "previous report"


def test_no_remedy_writes_nothing_under_remedy_and_removes_nothing(root_cause: Diagnosis, tmp_path: Path) -> None:
    write_reports(root_cause, tmp_path, formats=("txt",))
    assert visible(tmp_path) == ["report.txt"]
    earlier = tmp_path / "remedy" / "step1" / "ascend" / "keep_dtype.cfg"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("Pow_4\n", encoding="utf-8")
    write_reports(root_cause, tmp_path, formats=("txt",))
    assert earlier.read_text(encoding="utf-8") == "Pow_4\n"
