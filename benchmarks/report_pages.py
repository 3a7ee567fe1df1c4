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
from benchmarks.scale_paths import TRAINING_STEP

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "tests" / "data" / "scenarios"
REALTOOL = ROOT / "tests" / "data" / "realtool"
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
    rows: int | None = None           # the comparison grown to this many rows (benchmarks/_msprobe_replica.py)

    def options(self, workdir: Path) -> AnalysisOptions:
        """The inputs of ``advisor run``; a grown comparison is written into ``workdir``."""
        folder = self.folder
        comparison = next(iter(sorted(folder.glob("result_*.csv")) or sorted(folder.glob("compare_result_*.csv"))))
        if self.rows is not None:
            from benchmarks._msprobe_replica import replicate_compare_csv
            workdir.mkdir(parents=True, exist_ok=True)
            replicate_compare_csv(comparison, workdir / comparison.name, self.rows)
            comparison = workdir / comparison.name
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
    # msprobe's default summary mode (statistics only) and its MD5 mode: no cosine in either.
    Case("msprobe_statistics", REALTOOL / "msprobe_argument_mismatch__small_convnet__layer_norm_eps__L1_statistics"),
    Case("msprobe_md5", REALTOOL / "msprobe_parameter_mismatch__detector__cls_head_weights__L1_md5"),
    # An FP16 training step grown to 20k rows: ~400 overflow onsets, past the first ten one table row each.
    Case("msprobe_many_findings", REALTOOL / TRAINING_STEP, rows=20_000),
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
    return write_reports(analyse(case.options(outdir.parent / f"{outdir.name}.input")), outdir, ["html", "json"],
                         lang)[0]


def write_index(root: Path, lang: str) -> Path:
    """A nightly batch over three committed scenarios, run twice with a regression in between (a clean
    job broken by an FP16 overflow): its index.html, with each job's reports in ``lang``."""
    from advisor.cli import main

    folder = {case.name: case.folder for case in CASES}
    jobs = {"team_a/mtcnn.rnet_fp16": folder["clean_fp16"], "team_a/bert.large_fp16": folder["clean_fp16"],
            "team_b/crepe_tiny.bn_fold": folder["crepe_example"]}
    inputs = root / "inputs"
    for name, scenario in jobs.items():
        (inputs / name).mkdir(parents=True, exist_ok=True)
        source = next(iter(sorted(scenario.glob("result_*.csv"))))
        shutil.copyfile(source, inputs / name / source.name)
    out = root / "batch"
    run = ["batch", "--scan", str(inputs), "-o", str(out), "--workers", "1", "--format", "html,json", "--lang", lang,
           "-q"]
    for night in (1, 2):
        if night == 2:   # the new driver breaks one job
            target = inputs / "team_a/bert.large_fp16"
            for old in target.glob("result_*.csv"):
                old.unlink()
            source = next(iter(sorted(folder["fp16_overflow"].glob("result_*.csv"))))
            shutil.copyfile(source, target / source.name)
        code = main(run)
        if code not in (0, 1):
            raise RuntimeError(f"advisor batch failed with exit code {code}")
    return out / "index.html"


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
