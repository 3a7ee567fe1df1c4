"""The HTML report as a user sees it, in a real browser: Debian's Chromium driven by Playwright.

Reports of committed scenarios (tests/data/scenarios, examples/), in English and Chinese, at a phone's
width and a desktop's. Needs ``apt-get install chromium`` and ``pip install ".[browser]"``; skips with
the reason when either is missing. benchmarks/report_pages.py launches the browser (offline flags,
empty profile) and lists the scenarios.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.report_pages import (
    CASES,
    MEDIUM,
    NARROW,
    POST_CASES,
    WIDE,
    chromium,
    chromium_path,
    write_calibration_case,
    write_case,
    write_index,
    write_post_case,
)

playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed: "
                                     'pip install ".[browser]" (the browser test needs it)')
if chromium_path() is None:
    pytest.skip("Chromium is not installed: apt-get install chromium (the browser test needs it)",
                allow_module_level=True)

VIEWPORTS = {"narrow": NARROW, "medium": MEDIUM, "wide": WIDE}
BROWSER_CASES = [case for case in CASES if case.name in ("fp16_overflow", "problem_node_graph", "clean_fp16",
                                                         "crepe_example", "problem_node_verified",
                                                         "msprobe_statistics", "msprobe_md5",
                                                         "msprobe_many_findings")]

# Elements whose right edge passes the viewport, ignoring those inside a box that scrolls or clips
# (a <pre> of a remedy file scrolls on its own) and the inside of SVGs (they scale as a whole).
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = el => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (["auto", "scroll", "hidden", "clip"].includes(style.overflowX)) return true;
      if (p.tagName.toLowerCase() === "details" && !p.open) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("svg") && el.tagName.toLowerCase() !== "svg") continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if ((box.right > width + 1 || box.left < -1) && !clipped(el)) {
      out.push(`${el.tagName.toLowerCase()}.${el.className} [${Math.round(box.left)}, ${Math.round(box.right)}]: `
               + (el.textContent || "").trim().slice(0, 60));
    }
  }
  return out;
}"""

# Run details: every table (network, inputs, packs, thresholds, settings) lies inside the viewport, no
# two overlap, and no cell's content spills into the next cell.
RUN_DETAILS = """() => {
  const width = document.documentElement.clientWidth;
  const tables = [...document.querySelectorAll("section.run table")];
  const boxes = tables.map(t => t.getBoundingClientRect());
  const problems = [];
  boxes.forEach((a, i) => {
    if (a.left < -1 || a.right > width + 1) problems.push(`table ${i} outside the viewport: ${a.left}-${a.right}`);
    boxes.forEach((b, j) => {
      if (j <= i) return;
      const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (x > 1 && y > 1) problems.push(`tables ${i} and ${j} overlap by ${Math.round(x)}x${Math.round(y)} px`);
    });
  });
  for (const cell of document.querySelectorAll("section.run th, section.run td")) {
    if (cell.scrollWidth > cell.clientWidth + 1) {
      problems.push(`cell spills (${cell.scrollWidth} > ${cell.clientWidth}): ${cell.textContent.trim().slice(0, 60)}`);
    }
    for (const child of cell.children) {
      const c = child.getBoundingClientRect(), p = cell.getBoundingClientRect();
      if (c.right > p.right + 1) problems.push(`value runs past its cell: ${child.textContent.trim().slice(0, 60)}`);
    }
  }
  return {problems, tables: tables.length};
}"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, dict]]:
    """(case, lang) -> the HTML report and its report.json, written once for the module."""
    out: dict[tuple[str, str], tuple[Path, dict]] = {}
    root = tmp_path_factory.mktemp("browser-reports")
    for case in BROWSER_CASES:
        for lang in ("en", "zh"):
            html = write_case(case, root / f"{case.name}.{lang}", lang)
            out[(case.name, lang)] = (html, json.loads((html.parent / "report.json").read_text(encoding="utf-8")))
    return out


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """lang -> the index page of a two-night batch with a regression (reports in that language)."""
    root = tmp_path_factory.mktemp("browser-index")
    return {lang: write_index(root / lang, lang) for lang in ("en", "zh")}


# The box of the first visible element matching a selector (the page draws the plot twice, one hidden).
VISIBLE_BOX = """selector => {
  for (const el of document.querySelectorAll(selector)) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 || box.height > 0) return {left: box.left, right: box.right, top: box.top};
  }
  return null;
}"""


@pytest.fixture(scope="module")
def post_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], tuple[Path, dict]]:
    """(post scenario, lang) -> its advisor post HTML report and report.json, written once for the module."""
    root = tmp_path_factory.mktemp("browser-post-reports")
    out: dict[tuple[str, str], tuple[Path, dict]] = {}
    for case in POST_CASES:
        for lang in ("en", "zh"):
            html = write_post_case(case, root / f"{case}.{lang}", lang)
            out[(case, lang)] = (html, json.loads((html.parent / "report.json").read_text(encoding="utf-8")))
    return out


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as playwright, chromium(playwright) as context:
        yield context


def _open(browser, page_file: Path, viewport: tuple[int, int]):
    """The page at ``viewport``, with what it logged and every request it made."""
    page = browser.new_page()
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_file.as_uri(), wait_until="load")
    return page, errors, requests


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", [c.name for c in BROWSER_CASES])
def test_the_report_reads_well_at_every_width(browser, pages, case: str, lang: str, viewport: str) -> None:
    page_file, payload = pages[(case, lang)]
    page, errors, requests = _open(browser, page_file, VIEWPORTS[viewport])
    try:
        # The verdict, as written in report.json, is the page's heading.
        assert page.inner_text("h1").strip() == payload["headline"]
        assert payload["summary"].split("。")[0].split(". ")[0] in page.inner_text("header.verdict")
        # Nothing sticks out sideways: no horizontal scrolling, no element past the right edge.
        width = page.evaluate("document.documentElement.clientWidth")
        assert page.evaluate(OVERFLOWING) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # Run details: boxes side by side or stacked, never on top of each other, values inside their cells.
        details = page.evaluate(RUN_DETAILS)
        assert details["tables"] >= 3 and details["problems"] == []
        # Every point of the plot names its op on hover (an SVG <title>, no script needed).
        bands = page.locator("svg.plot g.hv rect")
        assert bands.count() >= 1
        titles = bands.evaluate_all("rects => rects.map(r => r.querySelector('title').textContent)")
        named = " ".join(titles)
        assert all(titles)
        located = [f["op"] for f in payload["findings"] if f["index"] is not None]
        # More ops than the plot has 3-pixel columns share a band, which names its worst op and counts them.
        shared = [t for t in titles if re.match(r"\d+ (ops|个算子)", t)]
        if not shared:
            assert all(re.search(re.escape(op) + "[ （]", named) for op in located)
        else:
            assert sum(int(t.split(" ")[0]) for t in shared) + len(titles) - len(shared) <= payload["network"]["ops"]
        # The root cause is in view: its mark on the plot and its row of the ops table, at every width.
        if payload["root_cause"] and payload["root_cause"]["index"] is not None:
            # (the ops table's first cells: a table wider than the page scrolls sideways on its own)
            for selector in ("svg.plot g.m-root", "section.key-ops tr.root td.op", "svg .gnode.focus"):
                if selector.endswith("focus") and not payload["inputs"].get("graph"):
                    continue
                box = page.evaluate(VISIBLE_BOX, selector)
                assert box is not None, selector
                assert 0 <= box["left"] and box["right"] <= width, (selector, box)
            if payload["inputs"].get("graph") and VIEWPORTS[viewport][0] < 700:   # the graph scrolls: a cue says so
                assert page.locator("section.graph .scroll-cue").is_visible()
        # Self-contained: nothing fetched but the page itself, nothing logged as an error.
        assert requests == [page_file.as_uri()]
        assert errors == []
    finally:
        page.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("case", ["msprobe_statistics", "msprobe_md5"])
def test_a_comparison_without_cosine_shows_its_own_metrics(browser, pages, case: str, viewport: str) -> None:
    page_file, payload = pages[(case, "en")]
    page, errors, _ = _open(browser, page_file, VIEWPORTS[viewport])
    try:
        plot = page.locator("section.plot .fit svg").filter(has=page.locator("g.hv")).locator("visible=true")
        assert plot.count() == 1
        assert "no values" not in plot.evaluate("svg => svg.textContent")
        # Text in the drawing is legible at this width: no font drawn smaller than 9 CSS pixels.
        scale = plot.evaluate("svg => svg.getBoundingClientRect().width / svg.viewBox.baseVal.width")
        sizes = plot.evaluate("svg => [...svg.querySelectorAll('text')]"
                              ".map(t => parseFloat(getComputedStyle(t).fontSize))")
        assert min(sizes) * scale >= 9, (min(sizes), scale)
        cells = page.locator("section.key-ops tbody td.num:not(:first-child):not(:last-child)").all_inner_texts()
        assert cells and sum(c.strip() not in ("—", "") for c in cells) >= len(cells) // 2
        if case == "msprobe_md5":
            caption = page.inner_text("section.plot p.legend")
            assert f"{payload['network']['checksums_differ']} of {payload['network']['checksums_compared']}" in caption
        assert errors == []
    finally:
        page.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_batch_index_reads_well_at_every_width(browser, indexes, lang: str, viewport: str) -> None:
    page, errors, requests = _open(browser, indexes[lang], VIEWPORTS[viewport])
    try:
        width = page.evaluate("document.documentElement.clientWidth")
        assert page.evaluate(OVERFLOWING) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # The regression and its root cause are in view; on a phone every job is a card, not a table row.
        box = page.evaluate(VISIBLE_BOX, "section.regressions article code")
        assert box is not None and 0 <= box["left"] and box["right"] <= width
        cards = page.evaluate("getComputedStyle(document.querySelector('table.jobs thead')).display") == "none"
        assert cards == (VIEWPORTS[viewport][0] < 700)
        # Job names break only after / . _ : every line of a name ends at one of them or at its end.
        for name in page.locator("table.jobs td.job a").all():
            lines = name.evaluate("""a => { const r = document.createRange(); r.selectNodeContents(a);
                                          const tops = [...r.getClientRects()].map(b => Math.round(b.top));
                                          return new Set(tops).size; }""")
            parts = len(re.split(r"(?<=[/._])", name.inner_text()))
            assert lines <= parts
        assert requests == [indexes[lang].as_uri()]
        assert errors == []
    finally:
        page.close()


def test_the_ops_table_sorts_by_a_clicked_column(browser, pages) -> None:
    page_file, _ = pages[("fp16_overflow", "en")]
    page, errors, _ = _open(browser, page_file, VIEWPORTS["wide"])
    try:
        table = page.locator("section.key-ops table")
        heading = table.locator("thead th", has_text="Input cosine")
        heading.click()
        assert heading.get_attribute("aria-sort") == "ascending"
        column = [h.strip() for h in table.locator("thead th").all_inner_texts()].index(heading.inner_text().strip())
        values = table.locator("tbody tr").evaluate_all(
            f"rows => rows.map(r => r.cells[{column}].getAttribute('data-sort'))")
        numbers = [float(v) for v in values if v]
        assert numbers == sorted(numbers) and values[len(numbers):] == [""] * (len(values) - len(numbers))
        heading.click()
        assert heading.get_attribute("aria-sort") == "descending"
        values = table.locator("tbody tr").evaluate_all(
            f"rows => rows.map(r => r.cells[{column}].getAttribute('data-sort'))")
        numbers = [float(v) for v in values if v]
        assert numbers == sorted(numbers, reverse=True)
        # The root cause's row links to its finding, and every row to its own rows of the comparison, which
        # the page embeds (a shared report has no file to link to): the link opens them.
        link = table.locator("tr.root td a[href^='#']").first
        assert page.locator(f"[id='{link.get_attribute('href')[1:]}']").count() == 1
        assert table.locator("tbody a[href^='file:']").count() == 0
        rows = table.locator("tbody a[href^='#src-L']")
        assert rows.count() == table.locator("tbody tr").count()
        target = rows.first.get_attribute("href")[1:]
        rows.first.click()
        assert page.evaluate(f"document.getElementById('{target}').closest('details').open")
        assert page.locator(f"[id='{target}']").is_visible()
        assert errors == []
    finally:
        page.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_verified_panel_follows_the_verdict_and_says_what_was_not_verified(browser, pages, lang: str) -> None:
    page_file, payload = pages[("problem_node_verified", lang)]
    page, errors, _ = _open(browser, page_file, VIEWPORTS["narrow"])
    try:
        # The panel is the first thing after the verdict.
        assert page.evaluate("document.querySelector('header.verdict').nextElementSibling.id") == "verified"
        panel = page.inner_text("#verified")
        fidelity = payload["verification"]["fidelity"]
        assert f"{fidelity['target_output_cosine']:g}" in panel
        for line in payload["verification"]["not_verified"]:
            assert line["why"] in panel
        assert page.locator("#verified").bounding_box()["width"] <= VIEWPORTS["narrow"][0]
        assert errors == []
    finally:
        page.close()


@pytest.mark.parametrize("viewport", ["narrow", "wide"])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", POST_CASES)
def test_an_advisor_post_report_draws_the_boxes_and_the_maps(browser, post_pages, case: str, lang: str,
                                                            viewport: str) -> None:
    page_file, payload = post_pages[(case, lang)]
    page, errors, requests = _open(browser, page_file, VIEWPORTS[viewport])
    try:
        assert page.inner_text("h1").strip() == payload["headline"]
        width = page.evaluate("document.documentElement.clientWidth")
        assert page.evaluate(OVERFLOWING) == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # One image's boxes: every golden and target box drawn, each naming its class and score on hover.
        boxes = page.locator("section.post svg.boxes rect.golden, section.post svg.boxes rect.target")
        assert boxes.count() == len(payload["post"]["golden"]) + len(payload["post"]["target"])
        titles = boxes.evaluate_all("rects => rects.map(r => r.querySelector('title').textContent)")
        assert all(re.search(r"\b(class|类别)\b|class", t) and "score" in t for t in titles)
        # The mapping that fits best leads the table of mappings, in bold.
        best = page.locator("section.post table.post-fits tr.best code").inner_text()
        assert best == payload["post"]["mapping"] == payload["post"]["fits"][0][0]
        assert page.locator("section.post table.post-fits tr.best td").first.evaluate(
            "td => getComputedStyle(td).fontWeight") in ("600", "700", "bold")
        assert requests == [page_file.as_uri()]
        assert errors == []
    finally:
        page.close()


@pytest.fixture(scope="module")
def calibration_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict]]:
    """lang -> the report of an int8 build calibrated on raw pixels, and its report.json."""
    root = tmp_path_factory.mktemp("browser-calibration-reports")
    out = {}
    for lang in ("en", "zh"):
        html = write_calibration_case("unnormalised", root / lang, lang)
        out[lang] = (html, json.loads((html.parent / "report.json").read_text(encoding="utf-8")))
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_calibration_diagnosis_reads_well(browser, calibration_pages, lang: str) -> None:
    """An int8 build calibrated on raw pixels: the calibration finding leads, names the map, and the page
    fits a phone."""
    page_file, payload = calibration_pages[lang]
    assert payload["root_cause"]["rule"] == "calibration-unnormalised"
    for viewport in ("narrow", "wide"):
        page, errors, requests = _open(browser, page_file, VIEWPORTS[viewport])
        try:
            assert page.inner_text("h1").strip() == payload["headline"]
            assert page.evaluate(OVERFLOWING) == []
            finding = page.locator(f"[id='{payload['root_cause']['id']}']")
            assert "255" in finding.inner_text()
            assert requests == [page_file.as_uri()] and errors == []
        finally:
            page.close()
