"""Build configs -> the config fact: MagicMind and ATC knobs, AIPP files, and clear errors."""

from __future__ import annotations

import json

import pytest

from advisor.errors import InputFormatError
from advisor.evidence.facts import config_facts
from advisor.facts.schema import FACT_FIELDS
from tests.conftest import scenario_dirs
from tests.evidence.conftest import path_of


@pytest.mark.parametrize("directory", scenario_dirs(), ids=lambda d: d.name)
def test_every_committed_build_config_reads_and_fits_the_schema(directory):
    (fact,) = config_facts(directory / "build.json")
    assert fact["id"] == "config" and fact["tool"] in ("atc", "magicmind")
    assert set(fact) <= set(FACT_FIELDS["config"])


def test_insert_bn_before_firstnode_folds_the_normalisation_into_the_model():
    (fact,) = config_facts(path_of("duplicate_normalization__mtcnn_rnet__bn_inserted__s0") / "build.json")
    assert fact["tool"] == "magicmind" and fact["insert_bn_before_firstnode"]
    assert fact["normalization_in_model"] and fact["normalization_knob"] == "insert_bn_before_firstnode"
    assert (fact["norm_mean"], fact["norm_std"], fact["precision_mode"]) == ("127.5", "128", "force_float16")


def test_convert_input_layout_is_read():
    (fact,) = config_facts(path_of("layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0") / "build.json")
    assert fact["layout_converted"] and fact["layout_conversion"] == "NCHW->NHWC"


def test_the_aipp_file_an_atc_config_names_is_read_beside_it():
    (fact,) = config_facts(path_of("rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0") / "build.json")
    assert fact["aipp"] and fact["aipp_channel_swap"] and fact["aipp_input_format"] == "RGB888_U8"
    assert not fact["normalization_in_model"]


def test_an_aipp_that_normalises_and_a_yaml_config(tmp_path):
    (tmp_path / "aipp.cfg").write_text(
        "aipp_op {\n  aipp_mode : static\n  input_format : RGB888_U8\n  mean_chn_0 : 123\n  mean_chn_1 : 117\n"
        "  mean_chn_2 : 104\n  var_reci_chn_0 : 0.0171\n  var_reci_chn_1 : 0.0175\n  var_reci_chn_2 : 0.0174\n}\n")
    (tmp_path / "build.yaml").write_text("soc_version: Ascend310P3\ninsert_op_conf: aipp.cfg\n"
                                         "precision_mode: allow_mix_precision\n")
    (fact,) = config_facts(tmp_path / "build.yaml")
    assert fact["tool"] == "atc" and fact["aipp_normalization"] and fact["normalization_in_model"]
    assert fact["norm_mean"] == "123,117,104" and fact["norm_std"].startswith("58.4")


def test_an_aipp_file_that_is_missing_is_named_but_not_fatal(tmp_path):
    (tmp_path / "build.json").write_text(json.dumps({"insert_op_conf": "gone.cfg"}))
    (fact,) = config_facts(tmp_path / "build.json")
    assert fact["aipp"] and fact["aipp_file"] == "gone.cfg"


@pytest.mark.parametrize(("name", "text", "message"), [
    ("build.json", '{"tool": "atc",\n "precision_mode": }', "not valid JSON"),
    ("build.yaml", "tool: magicmind\n  bad: [\n", "invalid YAML"),
    ("build.json", "[1, 2]", "a mapping of knob names"),
    ("build.json", '{"insert_bn_before_firstnode": "yes"}', "maps network input indexes"),
    ("build.json", '{"insert_bn_before_firstnode": {}}', "it is empty"),
    ("build.json", '{"insert_bn_before_firstnode": {"first": {"mean": [1], "var": [1]}}}', "not a network input"),
    ("build.json", '{"insert_bn_before_firstnode": {"0": {"mean": [1, 2, 3], "std": [1, 2, 3]}}}',
     'exactly "mean" and "var"'),
    ("build.json", '{"insert_bn_before_firstnode": {"0": {"mean": [1, 2, 3], "var": [1, 0, 1]}}}', "above 0"),
    ("build.json", '{"insert_bn_before_firstnode": {"0": {"mean": [1, 2, 3], "var": [1, 1]}}}', "3 means but 2"),
    ("build.json", '{"insert_bn_before_firstnode": {"0": {"mean": ["a"], "var": [1]}}}', "list of numbers"),
    ("build.json", '{"precision_config": {"activation_quant_algo": "minmax"}}', "symmetric"),
    ("build.json", '{"precision_config": {"weight_quant_granularity": "per_row"}}', "per_axis"),
    ("build.json", '{"insert_bn_before_firstnode": true, "mean": ["a"]}', "list of numbers"),
    ("build.json", '{"convert_input_layout": {"0": {"src": "NCHW"}}}', "needs \\\"src\\\" and \\\"dst\\\""),
    ("build.json", '{"precision_mode": {"a": 1}}', "must be a string"),
])
def test_bad_configs_say_what_is_wrong(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputFormatError, match=message) as error:
        config_facts(tmp_path / name)
    assert str(tmp_path / name) in error.value.one_line()


def test_a_bad_json_config_names_its_line(tmp_path):
    (tmp_path / "build.json").write_text('{"tool": "atc",\n "precision_mode": }')
    with pytest.raises(InputFormatError) as error:
        config_facts(tmp_path / "build.json")
    assert error.value.line == 2


def test_a_malformed_aipp_file_names_its_line(tmp_path):
    (tmp_path / "aipp.cfg").write_text("aipp_op {\n  aipp_mode static\n}\n")
    (tmp_path / "build.json").write_text(json.dumps({"insert_op_conf": "aipp.cfg"}))
    with pytest.raises(InputFormatError, match="key : value") as error:
        config_facts(tmp_path / "build.json")
    assert error.value.line == 2 and error.value.path.endswith("aipp.cfg")


def test_a_missing_config_is_an_input_error(tmp_path):
    with pytest.raises(InputFormatError, match="nope.json: file not found"):
        config_facts(tmp_path / "nope.json")


def test_insert_bn_before_firstnode_as_magicmind_writes_it(tmp_path):
    """MagicMind's samples: input index -> per-channel mean and variance (var = std²)."""
    (tmp_path / "build.json").write_text(json.dumps({
        "archs": ["mtp_372"], "insert_bn_before_firstnode": {"0": {"mean": [123.675, 116.28, 103.53],
                                                                   "var": [3409.976, 3262.694, 3291.891]}},
        "convert_input_layout": {"0": {"src": "NCHW", "dst": "NHWC"}},
        "precision_config": {"precision_mode": "qint8_mixed_float16", "activation_quant_algo": "asymmetric",
                             "weight_quant_granularity": "per_axis"}}))
    (fact,) = config_facts(tmp_path / "build.json")
    assert fact["tool"] == "magicmind" and fact["insert_bn_before_firstnode"] and fact["normalization_in_model"]
    assert fact["normalization_knob"] == "insert_bn_before_firstnode" and fact["normalized_inputs"] == "0"
    assert fact["norm_mean"] == "123.675,116.28,103.53" and fact["norm_std"] == "58.395,57.12,57.375"
    assert fact["layout_conversion"] == "NCHW->NHWC"
    assert (fact["activation_quant_algo"], fact["weight_quant_granularity"]) == ("asymmetric", "per_channel")
    assert fact["quant_precision"] == "int8" and set(fact) <= set(FACT_FIELDS["config"])


def test_one_normalisation_per_network_input(tmp_path):
    (tmp_path / "build.json").write_text(json.dumps({"insert_bn_before_firstnode": {
        "1": {"mean": [0.0], "var": [4.0]}, "0": {"mean": [128, 128, 128], "var": [65536, 65536, 65536]}}}))
    (fact,) = config_facts(tmp_path / "build.json")
    assert (fact["normalized_inputs"], fact["norm_mean"], fact["norm_std"]) == ("0;1", "128;0", "256;2")


def test_unknown_magicmind_keys_are_warnings_not_errors(tmp_path):
    from advisor.ingest.build_config import config_warnings
    from advisor.ingest.config_file import read_build_config

    (tmp_path / "build.json").write_text(json.dumps({
        "insert_bn_before_firstnode": {"0": {"mean": [0], "var": [1]}}, "convert_input_layot": {},
        "compute_determinism": True, "precision_config": {"precision_mode": "force_float16", "activation_algo": "x"}}))
    warnings = config_warnings(read_build_config(tmp_path / "build.json"))
    assert warnings == ["unknown MagicMind config key 'convert_input_layot' ignored (did you mean "
                        "'convert_input_layout'?)",
                        "unknown key 'precision_config.activation_algo' ignored (did you mean "
                        "'activation_quant_algo'?)"]
    (fact,) = config_facts(tmp_path / "build.json")
    assert fact["normalization_in_model"]


def test_a_config_with_magicmind_only_keys_is_taken_for_magicmind(tmp_path):
    from advisor.ingest.build_config import config_warnings
    from advisor.ingest.config_file import read_build_config

    (tmp_path / "build.json").write_text(json.dumps({"archs": ["mtp_372"], "compute_determinism": True,
                                                     "graph_shape_mutabel": False}))
    (fact,) = config_facts(tmp_path / "build.json")
    assert fact["tool"] == "magicmind" and not fact["normalization_in_model"]
    assert config_warnings(read_build_config(tmp_path / "build.json")) == [
        "unknown MagicMind config key 'graph_shape_mutabel' ignored (did you mean 'graph_shape_mutable'?)"]
