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
    ("build.json", '{"insert_bn_before_firstnode": "yes"}', "must be true or false"),
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
    with pytest.raises(InputFormatError, match="cannot read the build config"):
        config_facts(tmp_path / "nope.json")
