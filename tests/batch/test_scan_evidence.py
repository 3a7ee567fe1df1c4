"""``advisor batch --scan`` takes the evidence lying beside each result (the model graph, the two runs'
dump folders, the build config) by their documented names, so the nightly index shows the verdicts
``advisor run`` gives with ``--graph --dumps --config``, not the generic ones a comparison alone allows.
Committed scenarios (tests/data/scenarios): real networks run on the CPU with injected faults."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.errors import UsageError
from advisor.pipeline import AnalysisOptions, analyse

SCENARIOS = Path(__file__).resolve().parent.parent / "data" / "scenarios"
# Preprocessing faults the dumps tell apart, a fused-op problem the graph explains, a clean run.
PICKED = ("rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0", "duplicate_normalization__mtcnn_rnet__bn_inserted__s0",
          "layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0", "problem_node__mtcnn_pnet__prelu_layout__s0",
          "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0")


def _verdict(report: dict) -> tuple[str | None, int | None]:
    root = report["root_cause"]
    return (root["kind"], root["index"]) if root else ("consistent", None)


@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The picked scenarios as a nightly folder: one folder per model, evidence beside each result."""
    root = tmp_path_factory.mktemp("nightly")
    for name in PICKED:
        shutil.copytree(SCENARIOS / name, root / "runs" / name)
    return root


def _scan(nightly: Path, *extra: str) -> dict[str, dict]:
    out = nightly / f"out{len(list(nightly.glob('out*')))}"
    assert main(["batch", "--scan", str(nightly / "runs"), "-o", str(out), "--workers", "1", "--format", "json",
                 "-q", *extra]) == 0
    return {name: json.loads((out / name / "report.json").read_text(encoding="utf-8")) for name in PICKED}


def test_scan_gives_the_verdicts_of_run_with_the_evidence_beside_each_result(nightly: Path) -> None:
    reports = _scan(nightly)
    for name in PICKED:
        folder = nightly / "runs" / name
        options = AnalysisOptions(comparison=next(folder.glob("result_*.csv")), dumps=(folder / "golden",
                                  folder / "target"), build_config=folder / "build.json",
                                  graph=folder / "model.onnx" if (folder / "model.onnx").is_file() else None)
        expected = analyse(options)
        assert _verdict(reports[name]) == (expected.verdict, expected.root_cause.index if expected.root_cause
                                           else None), name
        assert reports[name]["inputs"].get("golden_dumps") and reports[name]["inputs"].get("build_config")
    # The dumps are what tells the preprocessing faults apart: a comparison alone says "input mismatch".
    kinds = {name: _verdict(reports[name])[0] for name in PICKED}
    assert kinds["rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0"] == "rgb_bgr_swap"
    assert kinds["layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0"] == "layout_nchw_nhwc"


def test_evidence_names_can_be_changed_or_turned_off(nightly: Path) -> None:
    plain = _scan(nightly, "--evidence", "golden=", "--evidence", "config=", "--evidence", "graph=")
    for name in PICKED:
        assert set(plain[name]["inputs"]) <= {"comparison", "format"}, plain[name]["inputs"]
        alone = analyse(AnalysisOptions(comparison=next((nightly / "runs" / name).glob("result_*.csv"))))
        assert _verdict(plain[name])[0] == alone.verdict
    assert _verdict(plain["rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0"])[0] != "rgb_bgr_swap"
    with pytest.raises(UsageError, match="ROLE=GLOB"):
        from advisor.batch.evidence import parse_patterns
        parse_patterns(["model=x.onnx"])


def test_a_manifest_names_its_evidence_by_patterns(nightly: Path) -> None:
    folder = nightly / "runs" / PICKED[0]
    (folder / "target").rename(folder / "device_dump")
    manifest = nightly / "nightly.yaml"
    manifest.write_text(f"evidence: {{target: device_*}}\njobs:\n  - name: pnet\n    input: "
                        f"{next(folder.glob('result_*.csv'))}\n", encoding="utf-8")
    try:
        assert main(["batch", str(manifest), "-o", str(nightly / "manifest-out"), "--workers", "1", "-q"]) == 0
        report = json.loads((nightly / "manifest-out" / "pnet" / "report.json").read_text(encoding="utf-8"))
        assert report["inputs"]["target_dumps"].endswith("device_dump")
        assert _verdict(report)[0] == "rgb_bgr_swap"
    finally:
        (folder / "device_dump").rename(folder / "target")
