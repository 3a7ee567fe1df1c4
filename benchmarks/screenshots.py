"""Screenshots of the HTML report for the README: ``python -m benchmarks.screenshots``.

Writes docs/screenshots/report-{en,zh}-{wide,narrow}.png (the top of the page: verdict, plot, graph,
ops table) and report-{en,zh}-run-details.png, from a committed scenario; post-en-wide.png and
post-zh-narrow.png (advisor post: a letterbox mapped back as a plain resize, a label list in another
order) and calibration-en-wide.png (an int8 build calibrated on raw pixels), with the system Chromium
(benchmarks/report_pages.py; `apt-get install chromium fonts-noto-cjk`: without the CJK fonts the
Chinese text shows as boxes). PNGs are reduced to a 256-colour palette to keep them small.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from .report_pages import (
    CASES,
    NARROW,
    ROOT,
    WIDE,
    Case,
    chromium,
    chromium_path,
    write_calibration_case,
    write_case,
    write_post_case,
)

OUT = ROOT / "docs" / "screenshots"
CASE = "problem_node_graph"
HEIGHT = {"wide": 1700, "narrow": 1600}      # how much of the page's top a screenshot shows


def _small_png(path: Path) -> None:
    """Re-save ``path`` with a 256-colour palette (a report is a few flat colours and text)."""
    try:
        from PIL import Image
    except ImportError:                       # Pillow comes with the scenarios extra; without it, as is
        return
    with Image.open(path) as image:
        reduced = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    reduced.save(path, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the PNGs (default: docs/screenshots)")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print('screenshots need Playwright: pip install ".[browser]"', file=sys.stderr)
        return 2
    if chromium_path() is None:
        print("screenshots need Chromium: apt-get install chromium", file=sys.stderr)
        return 2
    case = next(c for c in CASES if c.name == CASE)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(ROOT)                            # the report shows the inputs as a user in the checkout names them
    case = Case(case.name, case.folder.relative_to(ROOT))
    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright, chromium(playwright) as browser:
        for lang in ("en", "zh"):
            page_file = write_case(case, Path(scratch) / lang, lang)
            for label, (width, _) in (("wide", WIDE), ("narrow", NARROW)):
                page = browser.new_page()
                page.set_viewport_size({"width": width, "height": HEIGHT[label]})
                page.goto(page_file.as_uri(), wait_until="load")
                shot = out / f"report-{lang}-{label}.png"
                page.screenshot(path=str(shot))
                _small_png(shot)
                if label == "wide":
                    details = out / f"report-{lang}-run-details.png"
                    page.locator("section.run").screenshot(path=str(details))
                    _small_png(details)
                page.close()
        _edges(browser, Path(scratch))
    for shot in sorted([*out.glob("report-*.png"), *out.glob("post-*.png"), *out.glob("calibration-*.png")]):
        print(f"{shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}  {shot.stat().st_size // 1024} KB")
    return 0


def _edges(browser, scratch: Path) -> None:
    """The pages past the network's edges: two advisor post reports and a calibration diagnosis."""
    pages = ((write_post_case("letterbox_as_resize", scratch / "post-en", "en"), WIDE[0], 1500, "post-en-wide"),
             (write_post_case("class_permutation", scratch / "post-zh", "zh"), NARROW[0], 1900, "post-zh-narrow"),
             (write_calibration_case("unnormalised", scratch / "cal-en", "en"), WIDE[0], 1300, "calibration-en-wide"))
    for page_file, width, height, name in pages:
        page = browser.new_page()
        page.set_viewport_size({"width": width, "height": height})
        page.goto(page_file.as_uri(), wait_until="load")
        shot = OUT / f"{name}.png"
        page.screenshot(path=str(shot))
        _small_png(shot)
        page.close()


if __name__ == "__main__":
    sys.exit(main())
