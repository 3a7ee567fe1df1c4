"""The diagnosis benchmark (benchmarks/diagnosis.py) on the committed scenario corpus.

Needs no torch: the committed scenarios (tests/data/scenarios) are measured as they are. The table
below documents, scenario by scenario, the diagnosis the advisor gives today; a change in the
advisor that alters one of them must update it here on purpose.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.diagnosis import EVIDENCE_KINDS, Diagnosis, Finding
from benchmarks import diagnosis as bench_mod
from benchmarks.diagnosis import (
    COLUMNS,
    COMMITTED_CORPUS,
    LATER_CAPABILITY,
    find_scenarios,
    format_report,
    main,
    run_benchmark,
    score,
    table_rows,
)
from tests.conftest import SCENARIO_EXTRAS

# scenario -> (root-cause kind the advisor answers today, op, index); "consistent" = no root cause.
SUPPORTED_TODAY: dict[str, tuple[str, str | None, int | None]] = {
    "clean_bf16__mtcnn_pnet__mixed_bf16__s0": ("consistent", None, None),
    "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0": ("consistent", None, None),
    "fp16_overflow__byte_transformer__embedding_outliers__s0": ("fp16_overflow", "Pow_4", 5),
    "input_mismatch__mtcnn_rnet__shifted_crop__s1": ("input_mismatch", "images", 0),
    # With the committed model.onnx the graph shows Conv_3 fused with the PRelu whose slopes are reversed.
    "problem_node__mtcnn_pnet__prelu_layout__s0": ("fused_op_problem", "Conv_3", 5),
    "single_point_deviation__mtcnn_pnet__saturated_logits__s0": ("single_point_deviation", "Conv_8", 8),
    # Preprocessing kinds: named from the committed input dumps and build.json.
    "rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0": ("rgb_bgr_swap", "images", 0),
    "duplicate_normalization__mtcnn_rnet__bn_inserted__s0": ("duplicate_normalization", "images", 0),
    # Speech: CMVN folded into the model with insert_bn_before_firstnode ({"0": {mean, var}}) and applied again.
    "duplicate_normalization__crepe_tiny__cmvn_twice__s0": ("duplicate_normalization", "frames", 0),
    # Raw uint8 pixels into a model built with insert_bn_before_firstnode: the intended use.
    "clean_bn_inserted__mtcnn_rnet__raw_uint8__s0": ("consistent", None, None),
    "layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0": ("layout_nchw_nhwc", "images", 0),
    # Quantisation kinds need model.onnx and the layer dumps, which the committed corpus leaves out:
    # answered as a problem node at the quantised op (tests/rules/test_quantisation_scenarios.py
    # generates them with the evidence).
    "quant_per_tensor__byte_transformer__super_weights_b1__s0": ("problem_node", "MatMul_97", 87),
    "quant_symmetric__byte_transformer__attention_int8__s0": ("problem_node", "MatMul_26", 24),
    # Mixtures: one root cause explains (or outlives) a second finding.
    "mixed_input_overflow__crepe_tiny__pcm_int16__s0": ("input_scale_mismatch", "frames", 0),
    "mixed_overflow_problem__byte_transformer__output_logit_drift__s0": ("fp16_overflow", "MatMul_109", 98),
    # The early int8 attention error is absorbed; the later Softmax over the wrong axis breaks the output.
    "mixed_spd_problem__byte_transformer__int8_attention_128__s1": ("problem_node", "Softmax_74", 66),
}
MISSED_TODAY: set[str] = set()


@pytest.fixture(scope="module")
def committed():
    return run_benchmark(find_scenarios(COMMITTED_CORPUS), corpus=str(COMMITTED_CORPUS))


def _copy_scenario(name: str, root: Path, **label_changes) -> Path:
    target = root / name
    shutil.copytree(COMMITTED_CORPUS / name, target, ignore=shutil.ignore_patterns("golden", "target", "*.onnx"))
    if label_changes:
        label = json.loads((target / "label.json").read_text())
        label.update(label_changes)
        (target / "label.json").write_text(json.dumps(label))
    return target


def test_the_table_is_complete(committed):
    names = sorted(p.name for p in COMMITTED_CORPUS.iterdir() if (p / "label.json").is_file())
    assert [s.name for s in committed.scenarios] == names
    assert sorted(SUPPORTED_TODAY) == names
    families = {json.loads((COMMITTED_CORPUS / n / "label.json").read_text())["family"] for n in names}
    assert {f.family for f in committed.families} == families
    assert sum(f.scenarios for f in committed.families) == len(names)
    for row in table_rows(committed):
        assert len(row) == len(COLUMNS) and all(cell for cell in row)
    for family in committed.families:
        clean = family.kind == "consistent"
        later = family.kind in LATER_CAPABILITY and family.kind not in EVIDENCE_KINDS   # input dumps are committed
        assert family.status == ("later capability" if later else "supported")
        assert (family.op_right is None) == clean
        assert (family.false_alarms is None) == (not clean)
        assert (family.supported_answer is not None) == later
        assert (family.supported_right is not None) == later


@pytest.mark.parametrize("name", sorted(SUPPORTED_TODAY))
def test_diagnosis_supported_today(committed, name):
    result = next(s for s in committed.scenarios if s.name == name)
    assert (result.got_kind, result.got_op, result.got_index) == SUPPORTED_TODAY[name], result.got
    assert result.correct == (name not in MISSED_TODAY) and result.error is None


def test_accuracy_on_supported_families_is_complete(committed):
    summary = committed.summary()
    assert summary["supported_families"] == {"correct": 14, "total": 14, "accuracy": 1.0}
    assert summary["later_capability_supported_answer"] == {"correct": 2, "total": 2, "accuracy": 1.0}
    assert summary["overall"]["correct"] == 16 and summary["overall"]["total"] == 16
    assert summary["false_alarms_on_clean"] == {"count": 0, "clean": 3}
    # The later-capability kinds are reported as not (yet) diagnosed, not hidden.
    assert summary["exact_label"] == {"correct": 14, "total": 16, "accuracy": pytest.approx(14 / 16, abs=1e-6)}
    assert sorted(s.name for s in committed.misses) == sorted(MISSED_TODAY)
    for family in committed.families:
        assert family.correct == family.scenarios - sum(n.startswith(family.family + "__") for n in MISSED_TODAY)


def test_report_shows_every_family_and_column(committed):
    text = format_report(committed)
    for column in COLUMNS:
        assert column in text
    for family in committed.families:
        assert family.family in text
    assert "problem_node 1/1" in text             # the supported-answer column of a later capability
    assert "later capability" in text and "misses: none" in text


def test_cli_writes_json_and_exits_zero(tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["--corpus", str(COMMITTED_CORPUS), "--json", str(out), "--fail-under", "90"]) == 0
    assert "overall accuracy" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["summary"]["overall"]["correct"] == 16
    assert {s["name"] for s in data["scenarios"]} == set(SUPPORTED_TODAY)
    assert all(s["got"] and s["label"] for s in data["scenarios"])


def test_only_selects_families():
    chosen = find_scenarios(COMMITTED_CORPUS, ["clean_fp16", "problem_node"])
    assert [p.name for p in chosen] == ["clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0",
                                        "problem_node__mtcnn_pnet__prelu_layout__s0"]


def test_misses_and_false_alarms_are_measured_and_listed(tmp_path, capsys):
    _copy_scenario("problem_node__mtcnn_pnet__prelu_layout__s0", tmp_path, op="Conv_0", index=3)
    _copy_scenario("input_mismatch__mtcnn_rnet__shifted_crop__s1", tmp_path, family="clean_fp16",
                   kind="consistent", op=None, index=None)
    _copy_scenario("clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0", tmp_path)
    # Measurement, not a test: misses alone never fail it...
    assert main(["--corpus", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "misses (2):" in text
    assert "label: problem_node Conv_0@3" in text and "got:   problem_node Conv_3@5 (error)" in text
    assert "active findings: input-mismatch error images@0" in text
    # ...unless --fail-under asks for it.
    assert main(["--corpus", str(tmp_path), "--fail-under", "50"]) == 1
    bench = run_benchmark(find_scenarios(tmp_path))
    clean = next(f for f in bench.families if f.family == "clean_fp16")
    assert (clean.scenarios, clean.false_alarms, clean.correct) == (2, 1, 1)
    problem = next(f for f in bench.families if f.family == "problem_node")
    assert (problem.kind_right, problem.op_right, problem.correct) == (1, 0, 0)


def test_an_advisor_crash_is_a_measured_miss(tmp_path, capsys):
    scenario = _copy_scenario("clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0", tmp_path)
    (csv,) = scenario.glob("result_*.csv")
    csv.write_text("not,a,comparison\n1,2,3\n")
    assert main(["--corpus", str(tmp_path)]) == 0
    assert "got:   error: " in capsys.readouterr().out


def test_unusable_corpus_and_usage_errors(tmp_path, capsys):
    assert main(["--corpus", str(tmp_path)]) == 2
    assert "no scenario directories" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--corpus", str(COMMITTED_CORPUS), "--seed", "3"])
    assert exc.value.code == 2


def _finding(kind: str, op: str, index: int, severity: str = "error") -> Finding:
    return Finding(id=f"{kind}@{index}", rule=kind, pack="core", kind=kind, severity=severity,
                   title={"en": kind}, root_cause=True, op=op, index=index)


def _diagnosis(*findings: Finding) -> Diagnosis:
    root = findings[0] if findings and findings[0].root_cause else None
    return Diagnosis(root_cause=root, findings=list(findings), network={}, inputs={}, packs=[], thresholds={})


@pytest.mark.parametrize("kind", sorted(LATER_CAPABILITY))
def test_later_capability_kinds_count_their_supported_answer(kind):
    label = {"family": kind, "kind": kind, "op": "Conv_7", "index": 7}
    answer = LATER_CAPABILITY[kind]
    right = score("s", label, _diagnosis(_finding(answer, "Conv_7", 7)))
    assert (right.status, right.kind_right, right.op_right, right.supported_right, right.correct) == \
        ("later capability", False, True, True, True)
    wrong_op = score("s", label, _diagnosis(_finding(answer, "Conv_8", 8)))
    assert not wrong_op.correct and wrong_op.op_right is False


def test_a_warning_on_a_clean_run_is_a_false_alarm():
    label = {"family": "clean_fp16", "kind": "consistent", "op": None, "index": None}
    note = Finding(id="n", rule="n", pack="core", kind="note", severity="warning", title={"en": "n"})
    assert score("s", label, _diagnosis(note)).false_alarm
    info = Finding(id="i", rule="network-consistent", pack="core", kind="consistent", severity="info",
                   title={"en": "i"})
    assert score("s", label, _diagnosis(info)).correct


@pytest.mark.scenarios
def test_generate_measures_exactly_what_it_generated(tmp_path, capsys):
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios.networks import package_file
    try:
        package_file("facenet_pytorch", "data", "rnet.pt")
        package_file("skimage", "data", "astronaut.png")
    except (ModuleNotFoundError, FileNotFoundError):
        pytest.skip("facenet-pytorch / scikit-image data files not installed")
    (tmp_path / "stale__scenario").mkdir()       # not generated now: must not be measured
    shutil.copy(COMMITTED_CORPUS / "problem_node__mtcnn_pnet__prelu_layout__s0" / "label.json",
                tmp_path / "stale__scenario" / "label.json")
    assert main(["--generate", str(tmp_path), "--only", "input_mismatch", "--small", "--seed", "0"]) == 0
    text = capsys.readouterr().out
    assert "1 scenarios from" in text and "seed 0" in text and "misses: none" in text
    assert "stale__scenario" not in text
    assert bench_mod.find_scenarios(tmp_path)     # the generated scenario is on disk


@pytest.mark.parametrize(("advice", "index", "expected"), [
    ("Float16 data overflow occurs. Rectify the fault and perform comparison again.", "5", ("fp16_overflow", 5)),
    ("The input data of NPUDump is inconsistent with that of GroundTruth. Use the same data", "0",
     ("input_mismatch", 0)),
    ("All data in the comparison result meets the accuracy requirements.", "NA", ("consistent", None)),
    ("The accuracy of some tensors is low, while the final accuracy is qualified.", "8",
     ("single_point_deviation", 8)),
    ("The accuracy of some tensors is low, resulting in an unqualified final accuracy.", "24", ("problem_node", 24)),
])
def test_the_vendor_advisors_answers_map_onto_our_kinds(advice, index, expected):
    from benchmarks.vendor_advisor import answer_kind

    assert answer_kind("Global Consistency", index, advice) == expected


def test_the_vendor_advisor_is_scored_like_ours_on_the_csv_alone():
    from benchmarks.diagnosis import score_vendor
    from benchmarks.vendor_advisor import VendorAnswer

    label = {"family": "rgb_bgr_swap", "kind": "rgb_bgr_swap", "op": "images", "index": 0}
    result = score("s", label, _diagnosis(_finding("rgb_bgr_swap", "images", 0)))
    score_vendor(result, VendorAnswer("input_mismatch", 0, "Input Inconsistent"))
    assert result.vendor_correct and result.vendor == "input_mismatch@0"     # the supported answer
    score_vendor(result, VendorAnswer("problem_node", 3, "Global Consistency"))
    assert result.vendor_correct is False
    unreadable = score("s", label, _diagnosis())
    score_vendor(unreadable, VendorAnswer(None, None, None, "CompareError: 33"))
    assert unreadable.vendor_correct is None and unreadable.vendor.startswith("unreadable")


def test_each_source_gets_its_own_table_and_totals(tmp_path):
    _copy_scenario("clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0", tmp_path)
    _copy_scenario("input_mismatch__mtcnn_rnet__shifted_crop__s1", tmp_path, source="msprobe")
    bench = run_benchmark(find_scenarios(tmp_path), vendor=False)
    assert bench.sources == ["emulated", "msprobe"]
    assert bench.summary("msprobe")["overall"]["total"] == 1 and bench.summary("emulated")["overall"]["total"] == 1
    text = format_report(bench)
    assert text.index("emulated corpus") < text.index("real-tool corpus (msprobe") < text.index("input_mismatch")
    assert "cannot read" in text          # vendor not run: no family has a vendor score


def test_a_dump_json_pair_scenario_is_analysed_as_bench_and_target(tmp_path, monkeypatch):
    """A real-tool scenario in the dumpjson form (label ``bench`` + ``comparison``: the two msprobe
    dump.json) is run as ``advisor run --bench ... --target ...``, and the vendor advisor (which
    reads comparison tables only) is not asked."""
    scenario = tmp_path / "msprobe_fp16_overflow__mlp__logits_half__L1_statistics_dumpjson"
    for side in ("reference", "target"):
        (scenario / side).mkdir(parents=True)
        (scenario / side / "dump.json").write_text('{"task": "statistics", "level": "L1", "data": {}}')
    (scenario / "label.json").write_text(json.dumps({
        "family": "msprobe_fp16_overflow", "kind": "fp16_overflow", "op": "Functional.linear.2.forward",
        "index": 5, "source": "msprobe", "comparison": "target/dump.json", "bench": "reference/dump.json"}))
    seen = []

    def analyse(options):
        seen.append(options)
        return _diagnosis()

    monkeypatch.setattr(bench_mod, "analyse", analyse)
    result = bench_mod.analyse_scenario(scenario)
    (options,) = seen
    assert options.comparison is None
    assert (options.bench, options.target) == (scenario / "reference" / "dump.json", scenario / "target" / "dump.json")
    assert result.error is None and result.comparison is None and result.source == "msprobe"
    assert result.got_kind == "consistent" and not result.correct
