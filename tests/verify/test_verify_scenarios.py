"""``advisor run --verify`` on real networks run on the CPU with one labelled fault each (the scenario
generator, every dump kept): what the replay, the emulation and the remedy steps conclude, and the
numbers they conclude it from.

Each scenario is generated into a temporary folder and analysed as a user would:
``advisor run RESULT.csv --graph model.onnx --dumps golden:target --config build.json --verify``.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from advisor.engine.judgement import builtin_judgement
from tests.conftest import REPO, SCENARIO_EXTRAS

pytestmark = pytest.mark.scenarios
pytest.importorskip("torch", reason=SCENARIO_EXTRAS)

from benchmarks.scenarios import catalog  # noqa: E402
from benchmarks.scenarios.scenario import generate  # noqa: E402

SCHEMA = json.loads((REPO / "reports" / "report.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def verified(tmp_path_factory: pytest.TempPathFactory):
    """``verified(name)`` -> (label, report.json, OUTDIR) of the scenario ``name``, verified (cached)."""
    from advisor.cli import main

    root = tmp_path_factory.mktemp("verified")
    done: dict[str, tuple[dict, dict, Path]] = {}

    def run(name: str) -> tuple[dict, dict, Path]:
        if name not in done:
            spec = next(s for s in catalog.CORPUS if s.name == name)
            generated = generate(spec, root)
            assert not generated.problems, generated.problems
            folder, outdir = generated.directory, root / f"{name}.out"
            code = main(["run", str(generated.result_csv), "--graph", str(folder / "model.onnx"), "--dumps",
                         f"{folder / 'golden'}:{folder / 'target'}", "--config", str(folder / "build.json"),
                         "--verify", "--format", "json,md,txt,html", "-q", "-o", str(outdir)])
            assert code == 0
            report = json.loads((outdir / "report.json").read_text(encoding="utf-8"))
            jsonschema.validate(report, SCHEMA)
            done[name] = (generated.label, report, outdir)
        return done[name]

    return run


def _replay(report: dict, op: str) -> dict:
    return next(r for r in report["verification"]["replay"] if r["op"] == op)


def _fidelity_gap(fidelity: dict) -> float:
    return abs(fidelity["emulated_output_cosine"] - fidelity["target_output_cosine"])


def _active(report: dict) -> list[tuple[str, str | None]]:
    return [(f["rule"], f["op"]) for f in report["findings"] if f["explained_by"] is None]


def test_fp16_overflow_in_a_layernorm_is_reproduced_and_its_keep_list_restores_the_output(verified):
    label, report, outdir = verified("fp16_overflow__byte_transformer__embedding_outliers__s0")
    verification = report["verification"]
    fidelity = verification["fidelity"]
    assert fidelity["holds"] and fidelity["mode"] == "ieee" and _fidelity_gap(fidelity) <= 0.01
    assert fidelity["target_output_cosine"] < 0.2                 # the overflow breaks the output
    (step,) = verification["remedy_steps"]
    assert step["restores"] and step["output_cosine_after"] >= 0.999
    replay = _replay(report, label["op"])
    assert replay["verdict"] == "op_wrong" and replay["cpu_vs_golden_cosine"] >= 0.99999
    assert replay["cpu_vs_target_cosine"] is None                 # the target's Pow is inf
    assert verification["residual"] == [] and verification["not_verified"] == []
    assert report["root_cause"]["op"] == label["op"]
    assert ("fix-verified", label["op"]) in _active(report)
    pack = outdir / replay["pack"]
    assert {p.name for p in pack.iterdir()} == {"model.onnx", "inputs", "expected", "README.md"}


def test_fp16_overflow_in_attention_scores_on_a_saturating_target(verified):
    label, report, _ = verified("fp16_overflow__byte_transformer__attention_logits_saturated__s0")
    verification = report["verification"]
    fidelity = verification["fidelity"]
    assert fidelity["mode"] == "saturation" and fidelity["holds"] and _fidelity_gap(fidelity) <= 0.01
    assert report["root_cause"]["kind"] == "fp16_overflow" and report["root_cause"]["op"] == label["op"]
    assert ("target-saturates", None) in _active(report)
    assert verification["remedy_steps"][0]["output_cosine_after"] >= 0.999
    # The softmax after the clamped scores computes right on what it was given: inherited.
    assert _replay(report, "Softmax_74")["verdict"] == "inherited"


def test_a_saturating_target_is_named_and_a_keep_list_that_does_not_restore_it_says_so(verified):
    label, report, _ = verified("mixed_overflow_problem__byte_transformer__output_logit_drift__s0")
    verification = report["verification"]
    fidelity = verification["fidelity"]
    assert fidelity["mode"] == "saturation" and _fidelity_gap(fidelity) <= 0.01
    (step,) = verification["remedy_steps"]
    # Keeping the head and its softmax in FP32 is not enough here (the generator's own re-run: 0.980769).
    assert not step["restores"] and step["output_cosine_after"] == pytest.approx(0.980769, abs=2e-4)
    active = _active(report)
    assert ("target-saturates", None) in active and ("fix-not-restoring", label["op"]) in active
    assert ("fix-verified", label["op"]) not in active


def test_a_problem_node_conv_replays_as_wrong_on_the_target_and_is_the_residual(verified):
    label, report, _ = verified("problem_node__mtcnn_pnet__prelu_layout__s0")
    verification = report["verification"]
    replay = _replay(report, label["op"])
    assert replay["index"] == label["index"] and replay["verdict"] == "op_wrong"
    assert replay["cpu_vs_golden_cosine"] >= 0.99999 and replay["target_vs_golden_cosine"] < 0.9
    assert replay["cpu_vs_target_cosine"] < 0.9          # in the target's precision too: its kernel, not FP16
    assert not verification["fidelity"]["holds"]
    assert verification["residual"] == [{"op": label["op"], "index": label["index"], "kind": "residual_fault"}]


def test_a_downstream_op_fed_the_targets_input_replays_as_inherited(verified):
    """The op after the faulty fused Conv+PRelu, replayed on its own dumped (wrong) inputs."""
    from advisor.engine.loading import load_packs
    from advisor.engine.runner import run_rules
    from advisor.evidence.facts import GoldenInputs
    from advisor.facts.builder import build_facts
    from advisor.facts.thresholds import load_thresholds
    from advisor.ingest import read_comparison
    from advisor.verify.onnxgraph import OnnxModel, groups_of
    from advisor.verify.replay import Replayer, op_tensors

    label, _, outdir = verified("problem_node__mtcnn_pnet__prelu_layout__s0")
    folder = outdir.parent / outdir.name.removesuffix(".out")
    table = read_comparison(next(folder.glob("result_*.csv")))
    facts = build_facts(table, load_thresholds(), judge=builtin_judgement())
    model = OnnxModel.load(folder / "model.onnx")
    downstream = next(g for g in groups_of(model, facts.ops) if g.index == label["index"] + 1)
    tensors = op_tensors(model, downstream, GoldenInputs(folder / "golden", folder / "target", table), table.frame)
    check, _ = Replayer(model).replay(downstream, tensors)
    assert check.cpu_vs_target_cosine >= 0.99999 and check.cpu_vs_golden_cosine < 0.9
    fact = {"id": f"replay:{check.index}", "fact": "replay", "index": check.index, "op": check.op,
            "cpu_vs_golden_cosine": check.cpu_vs_golden_cosine, "cpu_vs_target_cosine": check.cpu_vs_target_cosine,
            "target_vs_golden_cosine": check.target_vs_golden_cosine, "target_finite": check.target_finite}
    kinds = {f.kind for f in run_rules(load_packs(installed=False).rules, [fact]).findings}
    assert kinds == {"replay_inherited"}


def test_per_tensor_int8_is_emulated_and_per_channel_restores_it(verified):
    label, report, _ = verified("quant_per_tensor__byte_transformer__super_weights_b1__s0")
    verification = report["verification"]
    fidelity = verification["fidelity"]
    assert fidelity["holds"] and _fidelity_gap(fidelity) <= 0.002
    assert report["root_cause"]["kind"] == "quant_per_tensor" and report["root_cause"]["op"] == label["op"]
    step = verification["remedy_steps"][0]
    assert report["remedy"]["steps"][0]["settings"] == {"weight_quant_granularity": "per_channel"}
    assert step["restores"] and step["output_cosine_after"] > 0.998 > fidelity["target_output_cosine"]
    replay = _replay(report, label["op"])
    # float32 gives the golden output, int8 as configured gives the target's: the op's precision.
    assert replay["verdict"] == "op_wrong" and replay["cpu_vs_target_cosine"] >= 0.99999


def test_symmetric_int8_on_one_sided_activations_is_diagnosed_and_asymmetric_verified(verified):
    label, report, _ = verified("quant_symmetric__byte_transformer__attention_int8__s0")
    verification = report["verification"]
    assert verification["fidelity"]["holds"] and _fidelity_gap(verification["fidelity"]) <= 0.002
    assert report["root_cause"]["kind"] == "quant_symmetric" and report["root_cause"]["op"] == label["op"]
    assert report["remedy"]["steps"][0]["settings"] == {"activation_quant_algo": "asymmetric"}
    assert verification["remedy_steps"][0]["restores"]
    # The second quantised attention computes as configured on what it was given: its error is inherited,
    # so it no longer counts as a root cause of its own.
    assert _replay(report, "MatMul_75")["verdict"] == "inherited"
    assert ("quant-symmetric", "MatMul_75") not in _active(report)


def test_a_fault_hidden_behind_an_overflow_is_the_residual(verified):
    label, report, _ = verified("mixed_overflow_hidden__byte_transformer__token_outliers_softmax_axis__s0")
    verification = report["verification"]
    (hidden,) = label["symptoms"]
    assert report["root_cause"]["kind"] == "fp16_overflow" and report["root_cause"]["op"] == label["op"]
    assert verification["residual"] == [{"op": hidden["op"], "index": hidden["index"], "kind": "residual_fault"}]
    # The target is worse than its emulation, so the keep list's restored emulation proves nothing here.
    assert not verification["fidelity"]["holds"]
    assert ("fix-verified", label["op"]) not in _active(report)


def test_a_clean_network_verifies_clean(verified):
    _, report, outdir = verified("clean_fp16__byte_transformer__allow_fp32_to_fp16__s0")
    verification = report["verification"]
    assert report["verdict"] == "consistent"
    assert verification["fidelity"]["holds"] and _fidelity_gap(verification["fidelity"]) <= 0.001
    assert verification["replay"] == [] and verification["remedy_steps"] == [] and verification["residual"] == []
    assert verification["not_verified"] == []
    assert not (outdir / "replay").exists()
    assert "Verified on CPU: fidelity" in (outdir / "report.txt").read_text(encoding="utf-8")


def test_a_repro_pack_runs_as_its_readme_says(verified):
    import numpy as np
    import onnxruntime as ort

    label, report, outdir = verified("problem_node__mtcnn_pnet__prelu_layout__s0")
    pack = outdir / _replay(report, label["op"])["pack"]
    readme = (pack / "README.md").read_text(encoding="utf-8")
    assert "onnxruntime" in readme and "ais_bench" in readme
    session = ort.InferenceSession(str(pack / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(next((pack / "inputs").glob(f"*_{i.name}.npy"))) for i in session.get_inputs()}
    out = session.run(None, feeds)[0].ravel().astype(np.float64)
    golden = np.load(pack / "expected" / "golden.npy").ravel().astype(np.float64)
    assert out @ golden / (np.linalg.norm(out) * np.linalg.norm(golden)) >= 0.99999
