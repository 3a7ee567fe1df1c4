"""The remedy benchmark (benchmarks/remedy.py): reading report remedies, applying them, the table."""

from __future__ import annotations

import pytest

from benchmarks import remedy as bench
from benchmarks.remedy import RemedyResult, StepResult, format_report, main, remedy_steps, summary, table_rows
from tests.conftest import SCENARIO_EXTRAS

KEEP_POW = {"op": "Pow_4", "golden": ["Pow_4"], "op_type": "Pow", "precision": "float32", "finding": "f1"}
KEEP_MEAN = {"op": "ReduceMean_5", "golden": ["ReduceMean_5"], "op_type": "ReduceMeanD", "precision": "float32",
             "finding": "f1"}


def test_remedy_steps_are_cumulative():
    report = {"remedy": {"backends": ["magicmind"], "steps": [
        {"step": 1, "settings": {"weight_quant_granularity": "per_channel"}, "keep": [KEEP_POW]},
        {"step": 2, "settings": {"weight_quant_granularity": "per_channel", "activation_quant_algo": "asymmetric"},
         "keep": [KEEP_POW, KEEP_MEAN]},
        {"step": 3, "settings": {"activation_calibration": "percentile", "activation_percentile": 99.9}, "keep": []},
    ]}}
    steps = remedy_steps(report)
    assert [s for s, _ in steps] == [
        {"weight_quant_granularity": "per_channel"},
        {"weight_quant_granularity": "per_channel", "activation_quant_algo": "asymmetric"},
        {"weight_quant_granularity": "per_channel", "activation_quant_algo": "asymmetric",
         "activation_calibration": "percentile", "activation_percentile": 99.9}]
    assert [k for _, k in steps] == [[KEEP_POW], [KEEP_POW, KEEP_MEAN], [KEEP_POW, KEEP_MEAN]]
    assert remedy_steps({"remedy": None}) == remedy_steps({}) == []


def _step(step, cosine, deviates):
    return StepResult(step=step, settings={"weight_quant_granularity": "per_channel"}, keep=[],
                      output_cosine=cosine, output_deviates=deviates, op_deviates=deviates)


def _results() -> list[RemedyResult]:
    fixed = RemedyResult("quant_per_tensor__x__s0", "quant_per_tensor", "quant_per_tensor", "MatMul_97", 87,
                         "quant_per_tensor", "MatMul_97", 87, 0.957, True, True, ["magicmind"],
                         [_step(1, 0.97, True), _step(2, 0.9984, False)], _step("reference", 0.9984, False))
    silent = RemedyResult("quant_symmetric__x__s0", "quant_symmetric", "quant_symmetric", "MatMul_26", 24,
                          "problem_node", "MatMul_26", 24, 0.98, True, reference=_step("reference", 0.997, False))
    broken = RemedyResult("fp16_overflow__x__s0", "fp16_overflow", "?", None, None,
                          error="generation failed: RuntimeError: boom")
    return [fixed, silent, broken]


def test_table_and_summary():
    fixed, silent, broken = _results()
    assert fixed.right and fixed.restored and fixed.restored_at == 2
    assert not silent.right and not silent.restored and not broken.right
    header, rows = table_rows([fixed, silent, broken])
    assert header == ["scenario", "label", "advisor", "right", "before", "step 1", "step 2", "restored",
                      "reference"]
    assert rows[0] == ["quant_per_tensor__x__s0", "quant_per_tensor MatMul_97@87", "quant_per_tensor MatMul_97@87",
                       "yes", "0.957000", "0.970000", "0.998400 ok", "yes (step 2)", "0.998400 ok"]
    assert rows[1][5:] == ["-", "-", "no remedy", "0.997000 ok"]
    assert "ERROR: generation failed" in rows[2][2]
    assert summary([fixed, silent, broken]) == {"scenarios": 3, "right_kind_and_layer": 1, "with_remedy": 1,
                                                "restored": 1, "reference_restored": 2, "errors": 1}
    text = format_report([fixed, silent, broken], 1.0)
    assert "NO REMEDY in report.json (root cause problem_node MatMul_26@24)" in text
    assert "step 2: settings weight_quant_granularity=per_channel" in text
    assert "right kind+layer 1/3; remedy in report 1/3; restored 1/3 (reference remedy 2/3)" in text


@pytest.mark.scenarios
def test_main_rejects_unknown_families(capsys):
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    assert main(["--families", "quant_per_tensor", "no_such_family"]) == 2
    assert "no_such_family" in capsys.readouterr().err


@pytest.mark.scenarios
def test_main_fails_when_a_scenario_does_not_generate(monkeypatch, capsys):
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    monkeypatch.setattr(bench, "run", lambda *a, **k: _results())
    assert main([]) == 1
    captured = capsys.readouterr()
    assert "right kind+layer 1/3" in captured.out and "boom" in captured.err


@pytest.mark.scenarios
def test_a_scenario_end_to_end_with_the_advisor_and_a_remedy(tmp_path, monkeypatch):
    """The real advisor runs on a generated scenario; its report gets a remedy written by hand (the
    one the quantisation rules should give), which the generator applies step by step."""
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios import catalog

    real_advise = bench.advise
    seen = {}

    def advise_with_remedy(directory, outdir, use_subprocess=False):
        code, report, errors = real_advise(directory, outdir, use_subprocess)
        seen["argv"] = bench.advisor_argv(directory, outdir)
        report["remedy"] = {"backends": ["magicmind"], "steps": [
            {"step": 1, "settings": {"activation_quant_algo": "asymmetric"}, "keep": []},     # not this fault
            {"step": 2, "settings": {"weight_quant_granularity": "per_channel", "vendor_knob": 1},
             "keep": [{"op": "NoSuchOp", "golden": [], "precision": "float16"}]}]}
        return code, report, errors

    monkeypatch.setattr(bench, "advise", advise_with_remedy)
    spec = next(s for s in catalog.CORPUS if s.name == "quant_per_tensor__byte_transformer__super_weights_b1__s0")
    result = bench.evaluate(spec, tmp_path)
    assert result.error is None and result.advisor_exit in (0, 1)
    assert {"--dumps", "--config", "--format"} <= set(seen["argv"]) and seen["argv"][0] == "run"
    assert (result.label_kind, result.label_op, result.label_index) == ("quant_per_tensor", "MatMul_97", 87)
    assert result.got_index == 87
    first, second = result.steps
    assert first.output_deviates and first.output_cosine == pytest.approx(result.before_cosine, abs=1e-6)
    assert not second.output_deviates and second.op_deviates is False
    assert second.unknown_knobs == ["vendor_knob"] and second.unmatched_keep == ["NoSuchOp"]
    assert result.restored and result.restored_at == 2
    assert result.reference is not None and not result.reference.output_deviates
    assert set(result.timings) == {"generate", "advisor", "remedy", "reference"}
