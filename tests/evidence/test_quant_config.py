"""Quantisation settings from build configs: MagicMind, ATC + AMCT and the generic form, one normalised view."""

from __future__ import annotations

import json

import pytest

from advisor.errors import InputFormatError
from advisor.evidence.config import config_facts
from advisor.evidence.quant_config import quant_settings
from advisor.facts.schema import FACT_FIELDS


def _write(tmp_path, data, name="build.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else data, encoding="utf-8")
    return path


def test_magicmind_precision_config_nested():
    s = quant_settings({"precision_config": {"precision_mode": "qint8_mixed_float16",
                                             "weight_quant_granularity": "per_axis",
                                             "activation_quant_algo": "asymmetric"}})
    assert (s.precision, s.float_precision, s.weight_granularity, s.activation_symmetric) == \
        ("int8", "float16", "per_channel", False)
    assert s.quantized and s.weight_scheme().per_channel and not s.activation_scheme(None, 99.99).symmetric


def test_a_float_build_quantises_nothing():
    s = quant_settings({"precision_mode": "allow_fp32_to_fp16"})
    assert s.precision == "float16" and not s.quantized


def test_amct_config_file_referenced_from_an_atc_config(tmp_path):
    _write(tmp_path, {"version": 1, "activation_offset": True, "skip_layers": ["Softmax_3"],
                      "Conv_1": {"quant_enable": True,
                                 "weight_quant_params": {"channel_wise": False, "wts_algo": "arq_quantize"},
                                 "activation_quant_params": {"act_algo": "ifmr", "max_percentile": 0.999999}},
                      "Conv_2": {"quant_enable": False}}, "amct.json")
    path = _write(tmp_path, {"soc_version": "Ascend310P3", "precision_mode": "allow_fp32_to_fp16",
                             "amct_config": "amct.json"})
    (fact,) = config_facts(path)
    assert fact["quantized"] and fact["quant_precision"] == "int8"
    assert fact["weight_quant_granularity"] == "per_tensor" and fact["activation_quant_algo"] == "asymmetric"
    assert fact["activation_calibration"] == "percentile"
    assert fact["activation_percentile"] == pytest.approx(99.9999)
    assert fact["quantized_layers"] == "Conv_1" and fact["float_layers"] == "Conv_2,Softmax_3"
    assert set(fact) <= set(FACT_FIELDS["config"])


def test_generic_form_in_yaml(tmp_path):
    path = _write(tmp_path, """
quantization:
  precision: int8
  float_precision: float16
  weights: {granularity: per_tensor, symmetric: true}
  activations: {symmetric: true, calibration: kl}
  layers: [MatMul_26, MatMul_75]
  ranges: {"MatMul_26:input:0": [-1.0, 1.0]}
""", "quant.yaml")
    (fact,) = config_facts(path)
    assert fact["quantized_layers"] == "MatMul_26,MatMul_75" and fact["activation_calibration"] == "kl"
    s = quant_settings({"quantization": {"precision": "int8", "ranges": {"t": [-1, 1]}}})
    scheme = s.activation_scheme("t", 99.99)
    assert (scheme.calibration, scheme.low, scheme.high) == ("range", -1.0, 1.0)


@pytest.mark.parametrize(("raw", "field"), [
    ({"precision_config": {"weight_quant_granularity": "per_row"}}, "weight_quant_granularity"),
    ({"quantization": {"weigths": {}}}, "quantization.weigths"),
    ({"quantization": {"activations": {"percentile": 140}}}, "quantization.activations.percentile"),
    ({"quantization": {"ranges": {"x": [1, -1]}}}, "quantization.ranges.x"),
    ({"amct_config": "missing.json"}, "amct_config"),
])
def test_bad_values_name_their_field(tmp_path, raw, field):
    path = _write(tmp_path, raw)
    with pytest.raises(InputFormatError) as error:
        config_facts(path)
    assert f"field {field}" in str(error.value) or field in str(error.value)
    assert str(path) in str(error.value)


def test_an_unknown_precision_mode_is_a_warning_not_a_guess():
    s = quant_settings({"precision_config": {"precision_mode": "qint8_mixed_fp16"}})
    assert s.precision is None and not s.quantized
    assert "precision_mode 'qint8_mixed_fp16' is not one advisor knows" in s.warnings[0]
    assert not quant_settings({"precision_mode": "qint8_mixed_float16"}).warnings


def test_calibration_may_name_only_its_algorithm():
    assert quant_settings({"calibration": "percentile"}).calibration == "percentile"


def test_a_non_finite_range_is_refused(tmp_path):
    path = tmp_path / "build.yaml"
    path.write_text("quantization:\n  ranges: {x: [.nan, 1.0]}\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="quantization.ranges.x"):
        config_facts(path)


def test_a_bad_build_config_stops_the_run_before_the_comparison_is_read(run_cli, tmp_path):
    config = _write(tmp_path, {"quantization": {"weights": {"granularity": "per_row"}}})
    result = run_cli(tmp_path / "missing_result.csv", "--config", config)
    assert result.code == 2 and "quantization.weights.granularity" in result.err and "missing_result" not in result.err
