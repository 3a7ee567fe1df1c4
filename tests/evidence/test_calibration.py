"""Calibration provenance: an int8 build's calibrated ranges against the golden activations on real
inputs. MTCNN P-Net quantised with ONNX Runtime's static quantisation (tests/data/calibration, written
by benchmarks/scenarios/calibration.py), calibrated on correctly preprocessed crops, on raw pixels and on
two crops: each wrong set is named with its numbers, the correct one stays silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from advisor.errors import InputFormatError
from advisor.evidence.calibration import calibration_facts
from advisor.facts.thresholds import load_thresholds
from advisor.graph import read_graph
from advisor.ingest.calibration_table import read_calibration_table
from advisor.pipeline import AnalysisOptions, analyse
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "calibration"
LABELS = yaml.safe_load((DATA / "labels.yaml").read_text(encoding="utf-8"))


def run(name: str, config: Path | None = None):
    folder = DATA / name
    return analyse(AnalysisOptions(comparison=folder / "result.csv", dumps=(DATA / "golden", folder / "target"),
                                   build_config=config or folder / "build.yaml", graph=DATA / "model.onnx",
                                   plugins=False))


def rules_of(diagnosis) -> dict[str, object]:
    return {f.rule: f for f in diagnosis.findings}


@pytest.mark.parametrize("name", [n for n, label in LABELS.items() if label["rule"]])
def test_each_wrong_calibration_set_is_named_and_leads(name):
    diagnosis = run(name)
    assert diagnosis.root_cause.rule == LABELS[name]["rule"]
    assert diagnosis.root_cause.index == 0 and diagnosis.root_cause.op == "image"
    # The layer where the damage shows is explained by the calibration, not a cause of its own.
    others = [f for f in diagnosis.findings if f.rule != LABELS[name]["rule"]]
    assert others and all(f.explained_by == diagnosis.root_cause.id for f in others)


def test_raw_pixel_calibration_names_the_normalisation_it_missed():
    values = rules_of(run("unnormalised"))["calibration-unnormalised"].values
    # MTCNN feeds (x - 127.5) / 128: raw pixels make the input range ~128x wider, shifted by ~127.5.
    assert 110 < values["input_scale"] < 150 and 110 < values["input_offset"] < 150
    assert (values["input_low"], values["input_high"]) == (pytest.approx(0.0, abs=1e-3), pytest.approx(255.0))
    assert values["deep_width_ratio_median"] > 50
    assert "onnxruntime-json" in values["table"]


def test_two_calibration_crops_give_ranges_that_clip_real_data():
    values = rules_of(run("two_images"))["calibration-unrepresentative"].values
    assert values["width_ratio_median"] < 0.5 and values["clipped_share"] > 0.9


@pytest.mark.parametrize("name", ["correct", "bgr"])
def test_a_representative_set_is_silent(name):
    """No calibration finding, no error or warning, and the int8 network's output agrees with the golden
    run. (The first conv's input rounds to the same printed (mean; std) as the golden one: three decimals
    equal are not identical inputs, so the conv is judged against its dtype, not its own rounding.)"""
    diagnosis = run(name)
    assert not {r for r in rules_of(diagnosis) if r.startswith("calibration")}
    assert not [f for f in diagnosis.findings if f.severity in ("error", "warning") and f.explained_by is None]
    assert diagnosis.network["output_deviates"] is False


def test_bgr_calibration_leaves_min_max_ranges_as_a_correct_set_does():
    """Why a BGR calibration set is not named from min/max ranges: on natural images every channel spans
    nearly all of 0..255, so the ranges it gives are those of the RGB set within the sampling spread,
    and the int8 build's output agrees as with the correct set (the test above)."""
    def facts(name: str) -> dict:
        table = read_calibration_table(DATA / name / "calibration.json")
        return calibration_facts(table.ranges, None, DATA / "golden", read_graph(DATA / "model.onnx"),
                                 load_thresholds())[0]
    correct, bgr = facts("correct"), facts("bgr")
    assert bgr["input_width_ratio"] == pytest.approx(correct["input_width_ratio"])
    assert bgr["width_ratio_median"] == pytest.approx(correct["width_ratio_median"], rel=0.05)


def test_an_amct_record_of_the_same_ranges_gives_the_same_verdict(tmp_path):
    """The unnormalised set's ranges written as an AMCT record (per layer: the input's scale_d and
    offset_d, asymmetric int8), keyed by layer: resolved through the graph to the producing op's dump."""
    ranges = read_calibration_table(DATA / "unnormalised" / "calibration.json").ranges
    graph = read_graph(DATA / "model.onnx")
    lines = []
    for node in graph:
        if node.op_type != "Conv":
            continue
        low, high = ranges[node.inputs[0].tensor]
        scale = (high - low) / 255
        offset = round(-128 - low / scale)
        lines.append(f'record {{\n  key: "{node.name}"\n  value {{\n    scale_d: {scale:.9g}\n    offset_d: {offset}\n'
                     f'    scale_w: 0.01\n    offset_w: 0\n  }}\n}}')
    (tmp_path / "record.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp_path / "build.yaml"
    config.write_text(yaml.safe_dump({"quantization": {"precision": "int8", "calibration_table": "record.txt"}}),
                      encoding="utf-8")
    diagnosis = run("unnormalised", config)
    assert diagnosis.root_cause.rule == "calibration-unnormalised"
    assert "amct-record" in diagnosis.root_cause.values["table"]


def test_the_table_formats_read_to_the_same_ranges(tmp_path):
    ort = read_calibration_table(DATA / "two_images" / "calibration.json")
    cache = tmp_path / "calibration.cache"
    cache.write_text("".join(f"{k} {max(abs(lo), abs(hi))}\n" for k, (lo, hi) in ort.ranges.items()), encoding="utf-8")
    symmetric = read_calibration_table(cache)
    assert symmetric.format == "onnxruntime-cache"
    assert all(symmetric.ranges[k][1] == pytest.approx(max(abs(lo), abs(hi))) for k, (lo, hi) in ort.ranges.items())
    generic = tmp_path / "ranges.yaml"
    generic.write_text(yaml.safe_dump({"ranges": {k: list(v) for k, v in ort.ranges.items()}}), encoding="utf-8")
    assert read_calibration_table(generic).ranges == ort.ranges
    record = tmp_path / "record.txt"
    record.write_text('record {\n  key: "conv1"\n  value {\n    scale_d: 0.5\n    offset_d: -3\n  }\n}\n',
                      encoding="utf-8")
    assert read_calibration_table(record).ranges == {"conv1:input:0": (0.5 * -125, 0.5 * 130)}


@pytest.mark.parametrize(("text", "message"), [
    ('{"CLS": "TensorsData", "data": {"x": {"highest": {"data": [1.0]}}}}', "no 'lowest'"),
    ('{"ranges": {"x": [2, 1]}}', "low <= high"),
    ("x 1.0\ny lots\n", "TENSOR MAX"),
    ('record {\n  key: "c"\n  value {\n    scale_d: -1\n  }\n}\n', "scale_d"),
])
def test_bad_tables_name_the_entry(tmp_path, text, message):
    path = tmp_path / "table.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError, match=message) as err:
        read_calibration_table(path)
    assert "table.txt" in err.value.one_line()


def test_a_config_naming_a_missing_table_is_one_line(tmp_path):
    config = tmp_path / "build.json"
    config.write_text(json.dumps({"quantization": {"precision": "int8", "calibration_table": "nope.json"}}),
                      encoding="utf-8")
    with pytest.raises(InputFormatError, match="not found") as err:
        run("correct", config)
    assert "nope.json" in err.value.one_line()
