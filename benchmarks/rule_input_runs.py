"""Cut the built-in rules' whole-run input cases: a comparison with the run's other inputs (dumps, build
config, graph), copied from a committed run under tests/data into ``rules/core/<domain>/cases/<run>/``.

The comparison is cut to the fewest ops whose rows keep what every rule gives on the whole run (each
rule's findings and explanations, by op and index), with ``advisor.pipeline.analyse`` as `advisor run`
runs it; the other inputs are copied as the tools wrote them. Each run's source and kept lines land in
the folder's SOURCES.md. Which rules a run's case proves, and which stay silent on it, is written in the
rule files by hand: a run here is labelled by how it was built (its label.json), never by advisor.

    python -m benchmarks.rule_input_runs [RUN ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from advisor.pipeline import AnalysisOptions, analyse
from benchmarks.rule_cases import REPO, _ranges, minimise

DATA = REPO / "tests" / "data"
CORE = REPO / "rules" / "core"


@dataclass(frozen=True)
class Run:
    name: str                 # the case folder's name, under rules/core/<domain>/cases/
    domain: str
    source: str               # the run's folder under tests/data
    comparison: str           # its comparison file, relative to ``source``
    config: str | None = None
    dumps: tuple[str, str] | None = None     # golden, target folders relative to ``source``
    graph: str | None = None


RUNS = (
    Run("rgb_bgr_swap", "preprocessing", "scenarios/rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0",
        "result_20240506101633.csv", "build.json", ("golden", "target"), "model.onnx"),
    Run("layout_nchw_nhwc", "preprocessing", "scenarios/layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0",
        "result_20240506051439.csv", "build.json", ("golden", "target")),
    Run("bn_inserted", "preprocessing", "scenarios/duplicate_normalization__mtcnn_rnet__bn_inserted__s0",
        "result_20240506092138.csv", "build.json", ("golden", "target")),
    Run("bn_inserted_raw_input", "preprocessing", "scenarios/clean_bn_inserted__mtcnn_rnet__raw_uint8__s0",
        "result_20240506040152.csv", "build.json", ("golden", "target")),
    Run("pcm_int16", "preprocessing", "scenarios/mixed_input_overflow__crepe_tiny__pcm_int16__s0",
        "result_20240506183657.csv", "build.json", ("golden", "target")),
    Run("cmvn_twice", "preprocessing", "scenarios/duplicate_normalization__crepe_tiny__cmvn_twice__s0",
        "result_20240506062828.csv", "build.json", ("golden", "target")),
    Run("shifted_crop", "preprocessing", "scenarios/input_mismatch__mtcnn_rnet__shifted_crop__s1",
        "result_20240507000359.csv", "build.json", ("golden", "target")),
    Run("prelu_layout", "graph", "scenarios/problem_node__mtcnn_pnet__prelu_layout__s0",
        "result_20240506205445.csv", graph="model.onnx"),
    Run("saturated_logits", "graph", "scenarios/single_point_deviation__mtcnn_pnet__saturated_logits__s0",
        "result_20240506002133.csv", "build.json", ("golden", "target"), "model.onnx"),
    Run("calibration_correct", "graph", "calibration", "correct/result.csv", graph="model.onnx"),
    Run("calibration_unnormalised", "quantization", "calibration", "unnormalised/result.csv",
        "unnormalised/build.yaml", ("golden", "unnormalised/target"), "model.onnx"),
    Run("calibration_two_images", "quantization", "calibration", "two_images/result.csv",
        "two_images/build.yaml", ("golden", "two_images/target"), "model.onnx"),
    Run("calibration_correct", "quantization", "calibration", "correct/result.csv",
        "correct/build.yaml", ("golden", "correct/target"), "model.onnx"),
)


def options(folder: Path, run: Run, comparison: Path) -> AnalysisOptions:
    """The run's ``advisor run`` options, its inputs at their place under ``folder``."""
    return AnalysisOptions(comparison=comparison, plugins=False,
                           build_config=folder / run.config if run.config else None,
                           dumps=(folder / run.dumps[0], folder / run.dumps[1]) if run.dumps else None,
                           graph=folder / run.graph if run.graph else None)


def outcome(opts: AnalysisOptions) -> dict[str, frozenset] | None:
    """Every rule's findings (op, index) and explanations (cause, symptom) on the run."""
    try:
        diagnosis = analyse(opts)
    except Exception:  # noqa: BLE001 - a cut that breaks the run is simply not kept
        return None
    given: dict[str, set] = {}
    for finding in diagnosis.findings:
        given.setdefault(finding.rule, set()).add((finding.kind, finding.op, finding.index))
    for cause, symptom, rule in diagnosis.explanations:
        given.setdefault(rule, set()).add((cause, symptom))
    return {rule: frozenset(items) for rule, items in given.items()}


def cut(run: Run) -> None:
    source = DATA / run.source
    target = CORE / run.domain / "cases" / run.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in filter(None, (run.config, run.graph, *(run.dumps or ()))):
        copy = shutil.copytree if (source / name).is_dir() else shutil.copy
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        copy(source / name, target / name)
    for extra in ("calibration.json", "aipp.cfg"):        # files a build config names beside itself
        if run.config and (source / Path(run.config).parent / extra).is_file():
            shutil.copy(source / Path(run.config).parent / extra, target / Path(run.config).parent / extra)
    wanted = outcome(options(source, run, source / run.comparison))
    _drop_unneeded_dumps(run, target, source / run.comparison, wanted)
    kept = minimise(source / run.comparison, lambda p: outcome(options(target, run, p)) == wanted,
                    target / ".scratch.csv")
    (target / ".scratch.csv").unlink(missing_ok=True)
    header = (source / run.comparison).read_bytes().splitlines(keepends=True)[0]
    (target / run.comparison).parent.mkdir(parents=True, exist_ok=True)
    (target / run.comparison).write_bytes(header + b"".join(t if t.endswith(b"\n") else t + b"\n" for _, t in kept))
    assert outcome(options(target, run, target / run.comparison)) == wanted, run.name
    _record(run, [1] + [n for n, _ in kept])
    print(f"{run.domain}/{run.name}: {len(kept)} of the comparison's rows kept; " +
          ", ".join(sorted(wanted or {})))


def _drop_unneeded_dumps(run: Run, target: Path, comparison: Path, wanted: dict | None) -> None:
    """Leave out each dump file the outcome does not depend on (whole files, never parts of one)."""
    for folder in run.dumps or ():
        for dump in sorted((target / folder).iterdir()):
            kept = dump.read_bytes()
            dump.unlink()
            if outcome(options(target, run, comparison)) != wanted:
                dump.write_bytes(kept)


def _record(run: Run, lines: list[int]) -> None:
    index = CORE / run.domain / "cases" / "SOURCES.md"
    text = index.read_text(encoding="utf-8") if index.is_file() else "# Where these input cases come from\n"
    heading = "\n## Whole runs (comparison with dumps, build config, graph)\n\n"
    if heading not in text:
        text = text.rstrip("\n") + "\n" + heading + (
            "Each folder holds a run committed under tests/data, cut with `python -m benchmarks.rule_input_runs`: "
            "its comparison cut to whole rows (lines below), its other inputs copied unchanged.\n\n")
    copied = ", ".join(f"`{name}`" for name in filter(None, (run.config, run.graph, *(run.dumps or ()))))
    entry = (f"- `{run.name}/`: tests/data/{run.source}: `{run.comparison}` lines {_ranges(lines)}"
             + (f"; {copied} copied" if copied else "") + "\n")
    text = re.sub(rf"^- `{re.escape(run.name)}/`:.*\n", "", text, flags=re.M)
    index.write_text(text.rstrip("\n") + "\n" + entry, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="only these runs (case folder names)")
    args = parser.parse_args(argv)
    for run in RUNS:
        if not args.runs or run.name in args.runs:
            cut(run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
