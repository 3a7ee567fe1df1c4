"""Report pages of committed scenarios, and the system Chromium that opens them.

Shared by the real-browser test (tests/report/test_report_browser.py) and the screenshots
(``python -m benchmarks.screenshots``). The browser is Debian's Chromium (``apt-get install chromium``),
driven by Playwright for Python (``pip install ".[browser]"``); Playwright's own browser download is
never used: ``playwright install`` is not needed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.pipeline import AnalysisOptions, analyse
from advisor.report import write_reports

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "tests" / "data" / "scenarios"
EXAMPLES = ROOT / "examples"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
# Flags that work in a container as root, offline: no sandbox (root), no GPU, nothing fetched at start.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDE, MEDIUM, NARROW = (1400, 900), (900, 900), (400, 860)


@dataclass(frozen=True)
class Case:
    """A committed comparison and the inputs ``advisor run`` gets with it."""

    name: str
    folder: Path
    verify: bool = False              # advisor run --verify: the "Verified on CPU" panel

    def options(self) -> AnalysisOptions:
        folder = self.folder
        comparison = next(iter(sorted(folder.glob("result_*.csv"))))
        kwargs: dict[str, Any] = {"comparison": comparison}
        if (folder / "build.json").is_file():
            kwargs["build_config"] = folder / "build.json"
        if (folder / "golden").is_dir() and (folder / "target").is_dir():
            kwargs["dumps"] = (folder / "golden", folder / "target")
        if (folder / "model.onnx").is_file():
            kwargs["graph"] = folder / "model.onnx"
        return AnalysisOptions(**kwargs, verify=self.verify)


CASES = (
    Case("fp16_overflow", SCENARIOS / "fp16_overflow__byte_transformer__embedding_outliers__s0"),
    Case("problem_node_graph", SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0"),
    Case("problem_node_verified", SCENARIOS / "problem_node__mtcnn_pnet__prelu_layout__s0", verify=True),
    Case("quant_symmetric", SCENARIOS / "quant_symmetric__byte_transformer__attention_int8__s0"),
    Case("clean_fp16", SCENARIOS / "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0"),
    Case("crepe_example", EXAMPLES / "crepe_tiny_bn_fold"),
)


# advisor post reports of committed post-processing scenarios (tests/data/post).
POST = ROOT / "tests" / "data" / "post"
POST_CASES = ("letterbox_as_resize", "class_permutation")


def write_post_case(name: str, outdir: Path, lang: str) -> Path:
    """``advisor post`` on the committed scenario ``name`` (with annotations and sizes); its HTML report
    (and report.json beside it) in ``outdir``."""
    from advisor.pipeline_post import PostOptions, analyse_post

    options = PostOptions(golden=POST / "golden.json", target=POST / name / "target.json",
                          annotations=POST / "annotations.json", images_info=POST / "images.json")
    return write_reports(analyse_post(options), outdir, ["html", "json"], lang)[0]


# advisor run on the committed calibration-set scenarios (tests/data/calibration).
CALIBRATION = ROOT / "tests" / "data" / "calibration"


def write_calibration_case(name: str, outdir: Path, lang: str) -> Path:
    """``advisor run`` on the calibration scenario ``name`` (config, dumps, graph); its HTML report."""
    folder = CALIBRATION / name
    options = AnalysisOptions(comparison=folder / "result.csv", dumps=(CALIBRATION / "golden", folder / "target"),
                              build_config=folder / "build.yaml", graph=CALIBRATION / "model.onnx")
    return write_reports(analyse(options), outdir, ["html", "json"], lang)[0]


def write_case(case: Case, outdir: Path, lang: str) -> Path:
    """Analyse ``case`` and write its HTML report (and report.json beside it) into ``outdir``; returns
    the page."""
    return write_reports(analyse(case.options()), outdir, ["html", "json"], lang)[0]


def chromium_path() -> str | None:
    """The system Chromium, or None when it is not installed."""
    configured = os.environ.get("ADVISOR_CHROMIUM")
    candidates = ([configured] if configured else []) + list(CHROMIUM_CANDIDATES)
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


@contextmanager
def chromium(playwright: Any) -> Iterator[Any]:
    """A headless system Chromium with an empty profile, closed (and its profile removed) on exit."""
    path = chromium_path()
    if path is None:
        raise RuntimeError("no Chromium found: apt-get install chromium (or set ADVISOR_CHROMIUM)")
    profile = tempfile.mkdtemp(prefix="advisor-chromium-")
    context = playwright.chromium.launch_persistent_context(profile, executable_path=path, headless=True,
                                                           args=CHROMIUM_ARGS)
    try:
        yield context
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)
