"""Screenshots of the HTML report for the README: ``python -m benchmarks.screenshots``.

Writes docs/screenshots/report-{en,zh}-{wide,narrow}.png (the top of the page: verdict, plot, graph,
ops table) and report-{en,zh}-run-details.png, from a committed scenario, with the system Chromium
(benchmarks/report_pages.py; `apt-get install chromium fonts-noto-cjk`: without the CJK fonts the
Chinese text shows as boxes). PNGs are reduced to a 256-colour palette to keep them small.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from .report_pages import CASES, NARROW, ROOT, WIDE, Case, chromium, chromium_path, write_case

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
    for shot in sorted(out.glob("report-*.png")):
        print(f"{shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}  {shot.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
