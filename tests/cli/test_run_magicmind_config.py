"""`advisor run --config` with a MagicMind build config as MagicMind writes it."""

from __future__ import annotations

import json

from ..conftest import SCENARIOS, scenario_csv, scenario_label
from .test_run_errors import assert_bad_input

CMVN = SCENARIOS / "duplicate_normalization__crepe_tiny__cmvn_twice__s0"
RAW = SCENARIOS / "clean_bn_inserted__mtcnn_rnet__raw_uint8__s0"


def _dumps(directory) -> str:
    return f"{directory / 'golden'}:{directory / 'target'}"


def test_insert_bn_in_its_real_form_names_the_duplicate_normalisation_with_the_knob(run_cli):
    config = json.loads((CMVN / "build.json").read_text())
    assert set(config["insert_bn_before_firstnode"]["0"]) == {"mean", "var"}
    run = run_cli(scenario_csv(CMVN), "--dumps", _dumps(CMVN), "--config", CMVN / "build.json", "--format", "json")
    assert run.code == 0, run.err
    report = run.report()
    label = scenario_label(CMVN)
    root = report["root_cause"]
    assert (root["kind"], root["op"], root["index"]) == ("duplicate_normalization", label["op"], label["index"])
    finding = next(f for f in report["findings"] if f["id"] == root["id"])
    assert "insert_bn_before_firstnode" in finding["evidence"] and finding["values"]["cfg_norm_again_fit"] > 0.9999


def test_raw_input_into_the_normalising_model_is_consistent(run_cli):
    run = run_cli(scenario_csv(RAW), "--dumps", _dumps(RAW), "--config", RAW / "build.json", "--format", "json",
                  "--fail-on", "warning")
    assert run.code == 0, run.err
    report = run.report()
    assert report["root_cause"] is None
    kinds = {f["kind"] for f in report["findings"] if not f.get("explained_by")}
    assert kinds == {"normalization_in_model"}


def test_a_bad_variance_exits_2_naming_the_field(run_cli, tmp_path):
    config = json.loads((CMVN / "build.json").read_text())
    config["insert_bn_before_firstnode"]["0"]["var"] = [-1.0]
    (tmp_path / "build.json").write_text(json.dumps(config))
    run = run_cli(scenario_csv(CMVN), "--config", tmp_path / "build.json")
    assert_bad_input(run, "build.json", "insert_bn_before_firstnode.0.var")


def test_an_unknown_magicmind_key_is_a_warning(run_cli, tmp_path):
    config = json.loads((RAW / "build.json").read_text())
    config["insert_bn_before_firstnod"] = config["insert_bn_before_firstnode"]
    (tmp_path / "build.json").write_text(json.dumps(config))
    run = run_cli(scenario_csv(RAW), "--config", tmp_path / "build.json", "--format", "json")
    assert run.code == 0, run.err
    assert any("unknown MagicMind config key 'insert_bn_before_firstnod'" in w and "did you mean" in w
               for w in run.report()["warnings"])
