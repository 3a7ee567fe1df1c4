"""Cut the built-in rules' whole-run input cases: a comparison with the run's other inputs (dumps, build
config, graph), copied from a committed run under tests/data, or from a run the scenario generator makes
with every dump (benchmarks/scenarios; for the checks on the CPU, ``--verify``), into
``rules/core/<domain>/cases/<run>/``.

The comparison is cut to the fewest ops whose rows keep what every rule gives on the whole run (each
rule's findings and explanations, by op and index), with ``advisor.pipeline.analyse`` as `advisor run`
runs it (with ``--verify`` when the run says so); dump files the outcome does not depend on are left
out whole; the other inputs are copied as the tools wrote them. Each run's source and kept lines land in
the folder's SOURCES.md. Which rules a run's case proves, and which stay silent on it, is written in the
rule files by hand: a run here is labelled by how it was built (its label.json), never by advisor.

    python -m benchmarks.rule_input_runs [--work DIR] [RUN ...]

``--work``: where generated runs are made (and found again by the next call); a temporary folder by default.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from advisor.engine.runner import EngineResult
from advisor.pipeline import AnalysisOptions, analyse
from benchmarks.rule_cases import REPO, _ranges, fewest, minimise, row_groups

DATA = REPO / "tests" / "data"
CORE = REPO / "rules" / "core"


@dataclass(frozen=True)
class Run:
    name: str                 # the case folder's name, under rules/core/<domain>/cases/
    domain: str
    source: str               # the run's folder under tests/data, or the generated scenario's name
    comparison: str           # its comparison file, relative to ``source``
    config: str | None = None
    dumps: tuple[str, str] | None = None     # golden, target folders relative to ``source``
    graph: str | None = None
    generated: bool = False   # made by benchmarks.scenarios (catalog.CORPUS), every dump kept
    verify: bool = False      # analysed with --verify (replay, emulation, remedy steps on the CPU)
    keep: tuple[str, ...] = ()  # dump files kept whatever the outcome (globs under the folder): a silent case's
                                # evidence is measured on them, not missing
    rows_of: str | None = None  # keep the rows of the ops this other case keeps (a near miss of the same network
                                # shows the ops the firing case names), not the fewest
    graph_of: str | None = None  # the graph given is this model under rules/core instead of the run's own (a user
                                 # passing another checkpoint's export of the same network)


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
    # Generated with every op dumped (benchmarks.scenarios.catalog.CORPUS); the model and --verify where the
    # rules need them (the byte transformer's model.onnx is 554 KB: runs that share its weights share the file).
    Run("normalised_twice", "preprocessing", "duplicate_normalization__mtcnn_rnet__normalised_twice__s0",
        "result_20240506011942.csv", "build.json", ("golden", "target"), generated=True),
    Run("normalised_into_bn_inserted", "preprocessing",
        "duplicate_normalization__mtcnn_rnet__normalised_into_bn_inserted__s0", "result_20240506114826.csv",
        "build.json", ("golden", "target"), generated=True),
    Run("nchw_buffer_declared_nhwc", "preprocessing", "layout_nchw_nhwc__mtcnn_pnet__nchw_buffer_declared_nhwc__s0",
        "result_20240506154331.csv", "build.json", ("golden", "target"), generated=True),
    Run("nhwc_output", "network", "output_layout__mtcnn_pnet__nhwc_output__s0", "result_20240506091936.csv",
        generated=True),
    Run("clean_pnet", "network", "clean_fp16__mtcnn_pnet__allow_fp32_to_fp16__s0", "result_20240506233107.csv",
        generated=True),
    *(Run(name, domain, scenario, comparison, "build.json", ("golden", "target"), "model.onnx", generated=True,
          verify=verify) for name, domain, scenario, comparison, verify in (
        ("clean_transformer", "verification", "clean_fp16__byte_transformer__allow_fp32_to_fp16__s0",
         "result_20240506190943.csv", True),
        ("output_logit_drift", "verification", "mixed_overflow_problem__byte_transformer__output_logit_drift__s0",
         "result_20240506204412.csv", True),
        ("overflow_hiding_softmax_axis", "verification",
         "mixed_overflow_hidden__byte_transformer__token_outliers_softmax_axis__s0", "result_20240506200652.csv", True),
        ("calibration_clipped", "quantization", "quant_calibration__byte_transformer__percentile_95_b1__s0",
         "result_20240506051159.csv", True),
        ("per_tensor_super_weights", "quantization", "quant_per_tensor__byte_transformer__super_weights_b1__s0",
         "result_20240506135031.csv", False),
        ("outlier_weights", "quantization", "quant_precision_limit__byte_transformer__outlier_weights_b1__s0",
         "result_20240506050609.csv", False),
    )),
    # quant-symmetric judges the attention probabilities from the dumps alone: no model (its input length makes
    # the graph differ from the other transformer runs', so it would be a 554 KB file of its own).
    Run("attention_int8_symmetric", "quantization", "quant_symmetric__byte_transformer__attention_int8_112__s0",
        "result_20240506234503.csv", "build.json", ("golden", "target"), generated=True),
    # R-Net on a batch of 8 windows: the training transform left on, one augmentation drawn per window; its near
    # miss, every window mirrored alike, keeps both input dumps: the per-sample survey runs on them and finds every
    # window treated alike (the cut would drop them: the silence does not depend on them).
    Run("train_transform_batch", "preprocessing", "random_preprocessing__mtcnn_rnet__train_transform_b8__s0",
        "result_20240506124458.csv", "build.json", ("golden", "target"), generated=True),
    Run("mirrored_batch", "preprocessing", "input_mismatch__mtcnn_rnet__mirrored_batch_b8__s0",
        "result_20240506223226.csv", "build.json", ("golden", "target"), generated=True,
        keep=("golden/images.*", "target/Data.images.*")),
    # The transformer after attention logit growth: both attention Softmax ops on int8 logits, and the same
    # network in FP16 (judged from the comparison and the build config: no model, no dump needed).
    Run("int8_softmax", "quantization", "quant_sensitive_op__byte_transformer__int8_softmax_logits_3000__s0",
        "result_20240506231711.csv", "build.json", generated=True),
    Run("clean_grown_logits", "quantization", "clean_fp16__byte_transformer__logits_3000__s0",
        "result_20240506082624.csv", "build.json", generated=True, rows_of="int8_softmax"),
    # Block 1's MLP down-projection in int8 as configured, its kernel rescaling every channel with one scale, and
    # the same build with the kernel right (the same ops' rows); the clean transformer's weights: the model is
    # clean_transformer's (verification/cases), the same file.
    # The near miss keeps the dumps of the layer's input and output that the firing case's evidence reads.
    *(Run(name, "quantization", scenario, comparison, "build.json", ("golden", "target"), "model.onnx",
          generated=True, **more) for name, scenario, comparison, more in (
        ("one_scale_kernel", "quant_backend_issue__byte_transformer__one_scale_kernel_b1__s0",
         "result_20240506022459.csv", {}),
        ("int8_kernel_right", "clean_int8__byte_transformer__per_channel_b1__s0", "result_20240506004738.csv",
         {"rows_of": "one_scale_kernel", "keep": ("golden/Mul_96.*", "golden/MatMul_97.*",
                                                  "target/Mul.Mul_96.*.output.0.npy",
                                                  "target/BatchMatMulV2.MatMul_97.*.input.0.npy")}))),
    # Block 1's down-projection with super weights in per-tensor int8 and its input clipped at the 97th
    # percentile, checked on the CPU: the per-channel fix alone does not restore the output, min/max added does;
    # and the per-tensor mistake alone, which per-channel weights restore (the same ops' rows).
    # The near miss keeps the dumps of the ops whose dumps the firing case keeps.
    *(Run(name, "quantization", scenario, comparison, "build.json", ("golden", "target"), "model.onnx",
          generated=True, verify=True, **more) for name, scenario, comparison, more in (
        ("super_weights_clipped", "quant_per_tensor__byte_transformer__super_weights_clipped_97_b1__s0",
         "result_20240506220934.csv", {}),
        ("super_weights_minmax", "quant_per_tensor__byte_transformer__super_weights_minmax_b1__s0",
         "result_20240506093004.csv", {"rows_of": "super_weights_clipped", "keep": (
             *(f"golden/{op}.0.*" for op in ("Add_110", "Add_98", "Add_99", "MatMul_109", "MatMul_97", "Mul_96",
                                             "ReduceMean_100", "Softmax_111", "tokens")),
             "target/Add.Add_99.*.output.0.npy", "target/BatchMatMulV2.MatMul_109.*.output.0.npy",
             "target/BatchMatMulV2.MatMul_97.*.npy", "target/Mul.Mul_96.*.output.0.npy",
             "target/ReduceMeanD.ReduceMean_100.*.npy", "target/SoftmaxV2.Softmax_111.*.npy")}))),
    # The one-scale kernel run checked on the CPU with the model of another checkpoint of the transformer (the one
    # with super weights in block 1's down-projection) and with its own: the replayed MatMul_97 reproduces neither
    # side with the wrong weights, the target's output with the right ones.
    *(Run(name, "verification", "quant_backend_issue__byte_transformer__one_scale_kernel_b1__s0",
          "result_20240506022459.csv", "build.json", ("golden", "target"), "model.onnx", generated=True, verify=True,
          **more) for name, more in (
        ("other_checkpoint_model", {"graph_of": "quantization/cases/per_tensor_super_weights/model.onnx"}),
        ("own_model", {"rows_of": "other_checkpoint_model"}))),
)


def options(folder: Path, run: Run, comparison: Path) -> AnalysisOptions:
    """The run's ``advisor run`` options, its inputs at their place under ``folder``."""
    return AnalysisOptions(comparison=comparison, plugins=False,
                           build_config=folder / run.config if run.config else None,
                           dumps=(folder / run.dumps[0], folder / run.dumps[1]) if run.dumps else None,
                           graph=folder / run.graph if run.graph else None, verify=run.verify)


def source_folder(run: Run, work: Path) -> Path:
    """Where the run's inputs are: under tests/data, or generated into ``work`` (once; found again there)."""
    if not run.generated:
        return DATA / run.source
    folder = work / run.source
    if not (folder / run.comparison).is_file():
        from benchmarks.scenarios.catalog import CORPUS, RULE_CASES
        from benchmarks.scenarios.scenario import generate

        generated = generate(next(spec for spec in (*CORPUS, *RULE_CASES) if spec.name == run.source), work)
        if generated.problems or not (folder / run.comparison).is_file():
            raise SystemExit(f"{run.source}: {generated.problems or 'no ' + run.comparison} (the generator changed?)")
    return folder


def outcome(opts: AnalysisOptions) -> dict[str, frozenset] | None:
    """Every rule's findings (op, index) and explanations (cause, symptom) on the run."""
    try:
        diagnosis = analyse(opts)
    except Exception:  # noqa: BLE001 - a cut that breaks the run is simply not kept
        return None
    given: dict[str, set] = {}
    for finding in diagnosis.findings:
        given.setdefault(finding.rule, set()).add((finding.kind, finding.op, finding.index))
    explained = EngineResult(diagnosis.findings, diagnosis.explanations, groups=diagnosis.explanation_groups)
    for cause, symptom, rule in explained.every_explanation():     # one cause's many symptoms come as a group
        given.setdefault(rule, set()).add((cause, symptom))
    return {rule: frozenset(items) for rule, items in given.items()}


def cut(run: Run, work: Path) -> None:
    """Cut the run into a scratch folder beside its case folder, then put it in place: the rules' existing
    input cases keep their files (the packs do not load without them) until the new cut is done."""
    source = source_folder(run, work)
    final = CORE / run.domain / "cases" / run.name
    target = final.with_name(f".{run.name}.cutting")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in filter(None, (run.config, run.graph, *(run.dumps or ()), "label.json" if run.generated else None)):
        copy = shutil.copytree if (source / name).is_dir() else shutil.copy
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        copy(source / name, target / name)
    if run.graph_of:
        shutil.copy(CORE / run.graph_of, target / run.graph)
    wanted = outcome(options(target, run, source / run.comparison))
    if wanted is None:
        raise SystemExit(f"{run.name}: advisor cannot analyse {source / run.comparison}")
    for extra in ("calibration.json", "aipp.cfg"):        # files a build config names beside itself
        if run.config and (source / Path(run.config).parent / extra).is_file():
            shutil.copy(source / Path(run.config).parent / extra, target / Path(run.config).parent / extra)
    _drop_unneeded_dumps(run, target, source / run.comparison, wanted)
    kept = same_ops(source / run.comparison, run.rows_of) if run.rows_of else \
        minimise(source / run.comparison, lambda p: outcome(options(target, run, p)) == wanted, target / ".scratch.csv")
    (target / ".scratch.csv").unlink(missing_ok=True)
    header = (source / run.comparison).read_bytes().splitlines(keepends=True)[0]
    (target / run.comparison).parent.mkdir(parents=True, exist_ok=True)
    (target / run.comparison).write_bytes(header + b"".join(t if t.endswith(b"\n") else t + b"\n" for _, t in kept))
    _drop_unneeded_dumps(run, target, target / run.comparison, wanted)   # the rows left out may need fewer
    assert outcome(options(target, run, target / run.comparison)) == wanted, run.name
    shutil.rmtree(final, ignore_errors=True)
    target.rename(final)
    _record(run, [1] + [n for n, _ in kept], _dump_counts(run, source, final))
    print(f"{run.domain}/{run.name}: {len(kept)} of the comparison's rows kept; " + ", ".join(sorted(wanted)))


def same_ops(comparison: Path, other: str) -> list[tuple[int, bytes]]:
    """The rows of ``comparison`` for the ops (by op index) whose rows the case folder ``other`` keeps."""
    (case,) = {run for run in RUNS if run.name == other}
    kept = {group[0][1].split(b",", 1)[0] for group in row_groups(CORE / case.domain / "cases" / other
                                                                   / case.comparison)[1]}
    return [row for group in row_groups(comparison)[1] if group[0][1].split(b",", 1)[0] in kept for row in group]


def _drop_unneeded_dumps(run: Run, target: Path, comparison: Path, wanted: dict | None) -> None:
    """Leave out each dump file the outcome does not depend on (whole files, never parts of one)."""
    kept = {path for pattern in run.keep for path in target.glob(pattern)}
    saved = {dump: dump.read_bytes() for folder in run.dumps or () for dump in sorted((target / folder).iterdir())
             if dump not in kept}
    if not saved:
        return

    def holds(kept: list[Path]) -> bool:
        for dump, data in saved.items():
            if dump in kept and not dump.exists():
                dump.write_bytes(data)
            elif dump not in kept:
                dump.unlink(missing_ok=True)
        return outcome(options(target, run, comparison)) == wanted

    holds([] if holds([]) else fewest(list(saved), holds))    # (fewest never tries none)


def _dump_counts(run: Run, source: Path, target: Path) -> str:
    return ", ".join(f"`{folder}` {len(list((target / folder).iterdir()))} of {len(list((source / folder).iterdir()))}"
                     for folder in run.dumps or ())


def _record(run: Run, lines: list[int], dumps: str) -> None:
    index = CORE / run.domain / "cases" / "SOURCES.md"
    text = index.read_text(encoding="utf-8") if index.is_file() else "# Where these input cases come from\n"
    heading = GENERATED_HEADING if run.generated else COMMITTED_HEADING
    if heading[0] not in text:
        text = text.rstrip("\n") + "\n" + heading[0] + heading[1]
    copied = ", ".join(f"`{name}`" for name in filter(None, (run.config, run.graph, *(run.dumps or ()))))
    where = f"`{run.source}`" if run.generated else f"tests/data/{run.source}"
    entry = (f"- `{run.name}/`: {where}: `{run.comparison}` lines {_ranges(lines)}"
             + (f"; {copied} copied" if copied else "")
             + (f"; dump files kept: {dumps}" if run.generated and run.dumps else "")
             + (f"; kept whatever the outcome: {', '.join(f'`{k}`' for k in run.keep)}" if run.keep else "")
             + (f"; the rows of the ops `{run.rows_of}/` keeps" if run.rows_of else "")
             + (f"; `{run.graph}` is rules/core/{run.graph_of}, not the run's own" if run.graph_of else "")
             + ("; analysed with --verify" if run.verify else "")
             + "\n")
    text = re.sub(rf"^- `{re.escape(run.name)}/`:.*\n", "", text, flags=re.M)
    at = text.index(heading[0]) + len(heading[0]) + len(heading[1])
    end = text.find("\n## ", at)
    end = len(text) if end < 0 else end
    section = text[at:end].rstrip("\n") + "\n" + entry
    index.write_text(text[:at] + section.lstrip("\n") + ("\n" + text[end:].lstrip("\n") if end < len(text) else ""),
                     encoding="utf-8")


COMMITTED_HEADING = (
    "\n## Whole runs (comparison with dumps, build config, graph)\n\n",
    "Each folder holds a run committed under tests/data, cut with `python -m benchmarks.rule_input_runs`: its "
    "comparison cut to whole rows (lines below), its other inputs copied unchanged.\n\n")
GENERATED_HEADING = (
    "\n## Generated runs (every op dumped)\n\n",
    "Each folder holds a run of the scenario generator (`python -m benchmarks.scenarios --out DIR --only FAMILY`, "
    "or one of `catalog.RULE_CASES`, made for these cases and generated by the cut itself: "
    "a real network run on the CPU in float32 and as the emulated target with the labelled fault; its "
    "label.json, copied here, says how it was built), cut with `python -m benchmarks.rule_input_runs RUN`: its "
    "comparison cut to whole rows (lines below), the dump files the outcome does not depend on left out whole, "
    "the other inputs copied unchanged.\n\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="only these runs (case folder names)")
    parser.add_argument("--work", type=Path, help="where generated runs are made and found again (default: a "
                                                 "temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rule-input-runs-") as scratch:
        for run in RUNS:
            if not args.runs or run.name in args.runs:
                cut(run, args.work or Path(scratch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
