"""evidence_facts + config_facts + the core rules name each preprocessing mistake from the dumps,
lead over the generic input mismatch, and stay silent on clean runs and other input mismatches.
Run through the engine directly (build_facts -> run_rules -> rank_findings)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from advisor.compare.runner import CompareOptions, compare_dumps
from advisor.diagnosis import Finding
from advisor.engine.judgement import builtin_judgement
from advisor.engine.loading import load_packs
from advisor.engine.ranking import rank_findings
from advisor.engine.runner import run_rules
from advisor.evidence.facts import config_fact, config_facts, evidence_facts
from advisor.evidence.probes import probe_pair
from advisor.facts.builder import build_facts
from advisor.facts.schema import FACT_FIELDS
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison
from benchmarks.compare import write_dumps
from tests.compare.generated import generated_scenario
from tests.conftest import scenario_csv, scenario_label
from tests.evidence.conftest import path_of, scenario_input

RULES = load_packs(installed=False).rules
PRIORITIES = {rule.id: rule.priority for rule in RULES}
PREPROCESSING = {"rgb_bgr_swap", "duplicate_normalization", "layout_nchw_nhwc", "input_scale_mismatch",
                 "random_preprocessing"}


@dataclass
class Diagnosed:
    root: Finding | None
    findings: list[Finding]
    evidence: list[dict]

    def active(self) -> list[Finding]:
        return [f for f in self.findings if f.explained_by is None]

    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}


def diagnose(directory: Path, csv: Path | None = None, config: dict | None | bool = True) -> Diagnosed:
    table = read_comparison(csv or scenario_csv(directory))
    facts = build_facts(table, load_thresholds(), judge=builtin_judgement())
    if config is True:
        config = config_facts(directory / "build.json")[0] if (directory / "build.json").is_file() else None
    evidence = evidence_facts(directory / "golden", directory / "target", table, facts.network, config or None)
    result = run_rules(RULES, facts.all_facts() + evidence + ([config] if config else []))
    root, ordered = rank_findings(result.findings, result.explanations, PRIORITIES, result.groups)
    return Diagnosed(root, ordered, evidence)


COMMITTED = {
    "rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0": ("rgb_bgr_swap", "rgb-bgr-swap"),
    "layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0": ("layout_nchw_nhwc", "layout-nchw-nhwc"),
    "duplicate_normalization__mtcnn_rnet__bn_inserted__s0": ("duplicate_normalization",
                                                             "duplicate-normalization-in-model"),
}


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_each_preprocessing_family_is_named_at_the_input_and_explains_the_input_mismatch(name):
    kind, rule = COMMITTED[name]
    label = scenario_label(path_of(name))
    got = diagnose(path_of(name))
    assert (got.root.kind, got.root.rule, got.root.op, got.root.index) == (kind, rule, label["op"], label["index"])
    mismatch = next(f for f in got.findings if f.kind == "input_mismatch")
    assert mismatch.explained_by == got.root.id
    assert [f.kind for f in got.active() if f.severity == "error"] == [kind]


def test_duplicate_normalization_from_the_dumps_alone_is_less_sure():
    got = diagnose(path_of("duplicate_normalization__mtcnn_rnet__bn_inserted__s0"), config=None)
    assert (got.root.kind, got.root.rule) == ("duplicate_normalization", "duplicate-normalization")
    assert got.root.confidence < 0.9
    with_config = diagnose(path_of("duplicate_normalization__mtcnn_rnet__bn_inserted__s0"))
    assert with_config.root.confidence > got.root.confidence
    assert "insert_bn_before_firstnode" in with_config.root.evidence["en"]
    assert "with the knob's own constants reproduces it" in with_config.root.evidence["en"]


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_without_the_build_config_the_kind_is_the_same(name):
    assert diagnose(path_of(name), config=None).root.kind == COMMITTED[name][0]


def test_the_evidence_names_the_numbers():
    swap = diagnose(path_of("rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0")).root
    assert swap.evidence["en"].startswith("Reversing the channels of the target input images:output:0 gives cosine 1")
    assert "rbuv_swap_switch" in swap.evidence["en"] and swap.values["channel_order"] == "2,1,0"
    assert "通道反转" in swap.evidence["zh"]
    layout = diagnose(path_of("layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0")).root
    assert "NHWC buffer as NCHW" in layout.evidence["en"] and "convert_input_layout" in layout.evidence["en"]


@pytest.mark.parametrize("name", ["clean_bf16__mtcnn_pnet__mixed_bf16__s0",
                                  "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0",
                                  "input_mismatch__mtcnn_rnet__shifted_crop__s1",
                                  "problem_node__mtcnn_pnet__prelu_layout__s0",
                                  "single_point_deviation__mtcnn_pnet__saturated_logits__s0",
                                  "fp16_overflow__byte_transformer__embedding_outliers__s0"])
def test_other_scenarios_keep_their_diagnosis_and_get_no_preprocessing_finding(name):
    label = scenario_label(path_of(name))
    got = diagnose(path_of(name))
    assert not (got.kinds() & PREPROCESSING)
    assert (got.root.kind if got.root else "consistent") == label["kind"]


def test_every_evidence_field_is_in_the_schema():
    for name in COMMITTED:
        for fact in diagnose(path_of(name)).evidence:
            assert set(fact) <= set(FACT_FIELDS["evidence"]), set(fact) - set(FACT_FIELDS["evidence"])
            assert fact["id"] == "evidence:images:output:0" and fact["index"] == 0 and fact["is_input"]


# --- mistakes the generator does not make: built from the committed photo, compared by advisor compare --

def write_input_scenario(root: Path, target: np.ndarray, golden: np.ndarray, config: dict | None = None) -> Path:
    """A one-op run (Data 'images') with its dumps and the CSV advisor compare writes for them."""
    (root / "golden").mkdir(parents=True)
    (root / "target").mkdir()
    np.save(root / "golden" / "images.0.1714987110000066.npy", golden.astype(np.float32))
    np.save(root / "target" / "Data.images.2.0.1714987410000641.output.0.npy", target.astype(np.float32))
    if config is not None:
        (root / "build.json").write_text(__import__("json").dumps(config))
    compare_dumps(CompareOptions(root / "golden", root / "target", root / "result_20240101000000.csv",
                                 progress=False, jobs=1))
    return root


@pytest.fixture
def pixels() -> np.ndarray:
    photo = np.load(next((path_of("clean_bf16__mtcnn_pnet__mixed_bf16__s0") / "golden").glob("*.npy")))
    return photo * 128 + 127.5


def test_0_255_against_0_1_is_an_input_scale_mismatch(tmp_path, pixels):
    got = diagnose(write_input_scenario(tmp_path / "s", pixels, pixels / 255))
    assert (got.root.kind, got.root.index, got.root.op) == ("input_scale_mismatch", 0, "images")
    assert "times 255" in got.root.evidence["en"] and "the 255 of 0-255 against 0-1" in got.root.evidence["en"]


def test_a_target_that_skipped_normalisation_is_an_input_scale_mismatch(tmp_path, pixels):
    got = diagnose(write_input_scenario(tmp_path / "s", pixels, (pixels - 127.5) / 128))
    assert got.root.kind == "input_scale_mismatch"
    assert "The golden input images:output:0 is normalised and the other side's is not" in got.root.evidence["en"]


def test_a_raw_target_is_right_when_the_model_normalises_itself(tmp_path, pixels):
    """MagicMind's own form: the knob's mean/var map the raw target onto the golden input exactly."""
    config = {"tool": "magicmind", "insert_bn_before_firstnode": {"0": {"mean": [127.5] * 3, "var": [16384.0] * 3}}}
    got = diagnose(write_input_scenario(tmp_path / "s", pixels, (pixels - 127.5) / 128, config))
    assert not (got.kinds() & PREPROCESSING) and got.root is None
    (expected,) = [f for f in got.findings if f.kind == "normalization_in_model"]
    mismatch = next(f for f in got.findings if f.kind == "input_mismatch")
    assert mismatch.explained_by == expected.id and expected.rule == "normalization-in-model-expected"
    assert "insert_bn_before_firstnode" in expected.evidence["en"] and "nothing fitted" in expected.evidence["en"]


def test_other_constants_than_the_knobs_do_not_make_a_raw_input_intended(tmp_path, pixels):
    config = {"tool": "magicmind", "insert_bn_before_firstnode": {"0": {"mean": [123.675, 116.28, 103.53],
                                                                        "var": [3409.98, 3262.69, 3291.89]}}}
    got = diagnose(write_input_scenario(tmp_path / "s", pixels, (pixels - 127.5) / 128, config))
    assert got.root.kind == "input_mismatch" and "normalization_in_model" not in got.kinds()


def test_a_normalised_input_to_a_model_that_normalises_itself_is_a_duplicate(tmp_path, pixels):
    photo = (pixels - 127.5) / 128
    config = {"tool": "magicmind", "insert_bn_before_firstnode": True, "mean": [127.5] * 3, "std": [128.0] * 3}
    got = diagnose(write_input_scenario(tmp_path / "s", photo, photo, config))
    assert (got.root.kind, got.root.rule) == ("duplicate_normalization", "normalized-input-into-normalizing-model")


def test_a_batch_with_mixed_flips_and_shifts_is_random_preprocessing(tmp_path, pixels):
    image = (pixels[0] - 127.5) / 128
    golden = np.stack([image[:, 0:48, 0:48], image[:, 40:88, 10:58], image[:, 20:68, 30:78], image[:, 48:96, 48:96]])
    target = golden.copy()
    target[1] = golden[1][:, :, ::-1]
    target[2] = image[:, 23:71, 28:76]
    got = diagnose(write_input_scenario(tmp_path / "s", target, golden))
    assert got.root.kind == "random_preprocessing"
    assert "identity,hflip,shift(3,-2),identity" in got.root.evidence["en"]


def test_a_whole_batch_flipped_alike_stays_a_generic_input_mismatch(tmp_path, pixels):
    image = (pixels[0] - 127.5) / 128
    golden = np.stack([image[:, :48, :48], image[:, 48:, 48:]])
    got = diagnose(write_input_scenario(tmp_path / "s", golden[..., ::-1], golden))
    assert got.root.kind == "input_mismatch" and not (got.kinds() & PREPROCESSING)


def test_a_raw_config_mapping_works_like_the_config_fact(tmp_path, pixels):
    raw = {"tool": "magicmind", "insert_bn_before_firstnode": True}
    assert config_fact(raw)["normalization_in_model"]
    photo = (pixels - 127.5) / 128
    directory = write_input_scenario(tmp_path / "s", photo, photo)
    table = read_comparison(scenario_csv(directory))
    (fact,) = evidence_facts(directory / "golden", directory / "target", table, {}, raw)
    assert fact["cfg_known"] and fact["cfg_normalization_in_model"] and fact["cfg_tool"] == "magicmind"


def test_any_op_input_can_be_probed_by_name(tmp_path):
    golden, target = write_dumps(tmp_path / "chain", ops=4, elements=64)
    out = tmp_path / "result_20240101000000.csv"
    compare_dumps(CompareOptions(golden, target, out, progress=False, jobs=1))
    table = read_comparison(out)
    facts = evidence_facts(golden, target, table, {}, None, ops=["Conv_2"])
    by_tensor = {f["tensor"]: f for f in facts}
    assert set(by_tensor) == {"images:output:0", "Conv_2:input:0"}
    conv = by_tensor["Conv_2:input:0"]
    assert not conv["is_input"] and conv["golden_tensor"].startswith("Relu_1.0.")   # the fused Conv_0+Relu_1
    assert conv["norm_relation"] == "identity"


def test_a_tensor_without_dumps_is_reported_not_probed(tmp_path, pixels):
    directory = write_input_scenario(tmp_path / "s", pixels, pixels)
    table = read_comparison(scenario_csv(directory))
    for path in (directory / "target").glob("Data.*"):
        path.rename(path.with_name("Data.renamed.2.0.1714987410000641.output.0.npy"))
    (fact,) = evidence_facts(directory / "golden", directory / "target", table, {}, None)
    assert fact["probed"] is False and "no target dump" in fact["skipped"]


# --- generated scenarios (torch): the other networks and the other input mismatches ------------------

GENERATED = {
    "rgb_bgr_swap__mtcnn_onet__aipp_swap__s0": "rgb_bgr_swap",
    "duplicate_normalization__mtcnn_onet__bn_inserted__s0": "duplicate_normalization",
    "layout_nchw_nhwc__mtcnn_onet__nhwc_buffer__s0": "layout_nchw_nhwc",
    "input_mismatch__mtcnn_onet__mirrored_crop__s0": "input_mismatch",
    "input_mismatch__mtcnn_pnet__other_region__s0": "input_mismatch",
    "input_mismatch__crepe_tiny__shifted_frames__s0": "input_mismatch",
    "clean_fp16__mtcnn_onet__allow_fp32_to_fp16__s0": "consistent",
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_scenarios_from_dumps_alone(name, tmp_path_factory):
    directory = generated_scenario(name, tmp_path_factory)
    got = diagnose(directory)
    assert (got.root.kind if got.root else "consistent") == GENERATED[name]
    if GENERATED[name] not in PREPROCESSING:
        assert not (got.kinds() & PREPROCESSING)
    if got.root is not None:
        label = scenario_label(directory)
        assert (got.root.op, got.root.index) == (label["op"], label["index"])


def test_generated_scenario_through_advisor_compare_gives_the_same_diagnosis(tmp_path, tmp_path_factory):
    directory = generated_scenario("rgb_bgr_swap__mtcnn_onet__aipp_swap__s0", tmp_path_factory)
    ours = tmp_path / "result_20240101000000.csv"
    compare_dumps(CompareOptions(directory / "golden", directory / "target", ours, progress=False))
    assert diagnose(directory, csv=ours).root.kind == "rgb_bgr_swap"


# --- MagicMind's insert_bn_before_firstnode with its numbers (committed scenarios) ----------------

def diagnose_rows(directory: Path, config: dict | None = None) -> Diagnosed:
    """The comparison CSV alone (no dumps), optionally with the build config."""
    facts = build_facts(read_comparison(scenario_csv(directory)), load_thresholds(), judge=builtin_judgement())
    result = run_rules(RULES, facts.all_facts() + ([config] if config else []))
    root, ordered = rank_findings(result.findings, result.explanations, PRIORITIES, result.groups)
    return Diagnosed(root, ordered, [])


CMVN = "duplicate_normalization__crepe_tiny__cmvn_twice__s0"
RAW_UINT8 = "clean_bn_inserted__mtcnn_rnet__raw_uint8__s0"


def test_speech_cmvn_applied_twice_is_named_with_the_knob_from_its_own_numbers():
    label = scenario_label(path_of(CMVN))
    got = diagnose(path_of(CMVN))
    assert (got.root.kind, got.root.rule, got.root.op, got.root.index) == (
        "duplicate_normalization", "duplicate-normalization-in-model", label["op"], label["index"])
    (evidence,) = got.evidence
    assert evidence["cfg_norm_checked"] and evidence["cfg_norm_again_fit"] > 0.9999
    assert "insert_bn_before_firstnode" in got.root.evidence["en"] and "nothing fitted" in got.root.evidence["en"]
    assert "drop insert_bn_before_firstnode" in got.root.evidence["en"]
    assert [f.kind for f in got.active() if f.severity == "error"] == ["duplicate_normalization"]


def test_without_the_knobs_numbers_the_second_cmvn_is_read_from_the_tensors():
    """With a mean near 0, (x - mean) / std is a 12x scale; but the golden frames are standardised and
    the target's are no raw audio (not integers, not within [-1, 1]): standardised data normalised once
    more, with the recording's own std (0.082) as the implied constant."""
    label = scenario_label(path_of(CMVN))
    got = diagnose(path_of(CMVN), config=None)
    assert (got.root.kind, got.root.rule, got.root.op) == ("duplicate_normalization", "duplicate-normalization",
                                                           label["op"])
    (evidence,) = got.evidence
    assert evidence["norm_relation"] == "extra_normalization" and evidence["norm_applied_to"] == "target"
    assert evidence["norm_std_value"] == pytest.approx(0.0821, rel=0.01)


def test_pcm_frames_fed_without_the_per_frame_normalisation_are_a_scale_mismatch(tmp_path):
    """16-bit PCM where each frame is expected at zero mean and unit variance (torchcrepe's per-frame
    normalisation): one map per frame explains it exactly, the golden side got that normalisation."""
    target, golden = scenario_input(CMVN)
    rng = np.random.default_rng(0)
    pcm = np.round(golden * rng.uniform(2000, 4000, size=(golden.shape[0], 1, 1, 1))
                   + rng.uniform(-50, 50, size=(golden.shape[0], 1, 1, 1)))
    report = probe_pair(pcm.astype(np.float32), golden)
    assert (report.affine.relation, report.affine.groups, report.affine.applied_to) == (
        "missing_normalization", "sample", "golden")
    again = probe_pair(target, golden).affine          # the same frames normalised twice: one map for all
    assert (again.relation, again.groups) == ("extra_normalization", "channel")


def test_raw_uint8_into_a_model_built_with_insert_bn_is_consistent():
    got = diagnose(path_of(RAW_UINT8))
    assert scenario_label(path_of(RAW_UINT8))["kind"] == "consistent"
    assert got.root is None and not [f for f in got.active() if f.severity in ("error", "warning")]
    assert {f.rule for f in got.findings if f.kind == "normalization_in_model"} == {
        "normalization-in-model-expected", "normalization-in-model-rows"}
    (evidence,) = got.evidence
    assert evidence["cfg_norm_expected_fit"] > 0.999 and evidence["cfg_norm_again_fit"] < 0


def test_raw_uint8_into_a_model_built_with_insert_bn_is_consistent_from_the_csv_alone():
    """No dumps, no config: the NPU-only BNInference after the input and nothing deviating after it."""
    got = diagnose_rows(path_of(RAW_UINT8))
    assert got.root is None and not [f for f in got.active() if f.severity in ("error", "warning")]
    (note,) = [f for f in got.findings if f.kind == "normalization_in_model"]
    assert note.rule == "normalization-in-model-rows" and "insert_bn_0 (BNInference)" in note.evidence["en"]


def test_the_same_raw_input_without_the_inserted_op_stays_an_input_mismatch(tmp_path):
    """Drop the inserted BNInference's rows: nothing then says the raw input is normalised inside."""
    (csv,) = path_of(RAW_UINT8).glob("result_*.csv")
    lines = [line for line in csv.read_text().splitlines(keepends=True) if ",insert_bn_0," not in line]
    (tmp_path / csv.name).write_text("".join(lines))
    table = read_comparison(tmp_path / csv.name)
    facts = build_facts(table, load_thresholds(), judge=builtin_judgement())
    result = run_rules(RULES, facts.all_facts())
    root, _ = rank_findings(result.findings, result.explanations, PRIORITIES, result.groups)
    assert root.kind == "input_mismatch"


def test_a_transposed_buffer_into_a_model_built_with_convert_input_layout_names_the_knob(tmp_path, pixels):
    """convert_input_layout NCHW->NHWC: the model reads NHWC, but the preprocessing transposed to NCHW
    already, so the model reads an NCHW buffer as NHWC."""
    photo = ((pixels - 127.5) / 128).astype(np.float32)
    fed = np.ascontiguousarray(photo).reshape(1, 96, 96, 3)          # the NCHW buffer, read as NHWC
    config = {"tool": "magicmind", "convert_input_layout": {"0": {"src": "NCHW", "dst": "NHWC"}}}
    got = diagnose(write_input_scenario(tmp_path / "s", fed, photo, config))
    assert (got.root.kind, got.root.op, got.root.index) == ("layout_nchw_nhwc", "images", 0)
    assert got.root.rule == "layout-buffer-not-transposed"
    assert got.root.values["layout_match"] == "buffer_not_transposed"
    assert "convert_input_layout" in got.root.evidence["en"] and "NCHW->NHWC" in got.root.evidence["en"]


def test_data_transposed_for_the_converted_layout_is_no_untransposed_buffer(tmp_path, pixels):
    photo = ((pixels - 127.5) / 128).astype(np.float32)
    fed = np.ascontiguousarray(photo.transpose(0, 2, 3, 1))          # what the NHWC model should get
    config = {"tool": "magicmind", "convert_input_layout": {"0": {"src": "NCHW", "dst": "NHWC"}}}
    got = diagnose(write_input_scenario(tmp_path / "s", fed, photo, config))
    assert "layout-buffer-not-transposed" not in {f.rule for f in got.findings}
    assert got.evidence[0]["layout_match"] != "buffer_not_transposed"
