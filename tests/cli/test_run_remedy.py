"""`advisor run` writes the remedy: for the committed FP16 overflow scenario it keeps the ops the
finding names in float32, for the backend the build config names (or the ones --backend /
the project settings choose), under OUTDIR/remedy/; report.json follows the schema."""

from __future__ import annotations

import json

import jsonschema
import pytest

from advisor.resources import data_dir

from ..conftest import scenario_csv, scenario_dirs

SCENARIO = next(d for d in scenario_dirs() if d.name == "fp16_overflow__byte_transformer__embedding_outliers__s0")
ALL = ["ascend", "magicmind", "tensorrt", "onnxruntime", "pytorch"]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def test_the_overflow_scenario_gets_its_keep_list_for_the_configured_backend(run_cli, validator):
    run = run_cli(scenario_csv(SCENARIO), "--config", SCENARIO / "build.json")
    assert run.code == 0, run.err
    report = run.report()
    assert not list(validator.iter_errors(report))
    root = next(f for f in report["findings"] if f["id"] == report["root_cause"]["id"])
    keep_all = root["values"]["keep_fp32_all"].split(",")
    remedy = report["remedy"]
    assert remedy["backends"] == ["ascend"]                   # the build config is an ATC one
    (step,) = remedy["steps"]
    assert [k["golden"] for k in step["keep"]] == [[name] for name in keep_all]
    assert {k["precision"] for k in step["keep"]} == {"float32"} and step["findings"][0] == root["id"]
    folder = run.outdir / "remedy" / "step1" / "ascend"
    assert (folder / "keep_dtype.cfg").read_text(encoding="utf-8").splitlines() == keep_all
    assert "--precision_mode=allow_fp32_to_fp16" in (folder / "atc_command.sh").read_text(encoding="utf-8")
    assert sorted(p.name for p in (run.outdir / "remedy").iterdir()) == ["README.md", "step1"]
    assert f"Remedy: {run.outdir / 'remedy' / 'README.md'} (1 step for ascend)" in run.out


def test_without_a_build_config_every_backend_gets_files(run_cli):
    run = run_cli(scenario_csv(SCENARIO), "--format", "json")
    remedy = run.report()["remedy"]
    assert remedy["backends"] == ALL
    assert sorted(p.name for p in (run.outdir / "remedy" / "step1").iterdir()) == sorted(ALL)
    assert set(remedy["steps"][0]["files"]) == set(ALL)


def test_backends_repeat_and_split_at_commas(run_cli):
    run = run_cli(scenario_csv(SCENARIO), "--format", "json", "--backend", "tensorrt, pytorch",
                  "--backend", "onnxruntime", "--config", SCENARIO / "build.json")
    assert run.report()["remedy"]["backends"] == ["tensorrt", "onnxruntime", "pytorch"]
    run = run_cli(scenario_csv(SCENARIO), "--format", "json", "--backend", "all")
    assert run.report()["remedy"]["backends"] == ALL


def test_an_unknown_backend_is_a_usage_error(run_cli):
    run = run_cli(scenario_csv(SCENARIO), "--backend", "ascnd")
    assert run.code == 2
    assert "--backend: unknown backend 'ascnd' (did you mean 'ascend'?)" in run.err
    assert not run.outdir.exists()


def test_project_settings_choose_backends_and_the_command_line_overrides_them(run_cli, tmp_path, monkeypatch):
    (tmp_path / "advisor.toml").write_text('backends = ["magicmind"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = run_cli(scenario_csv(SCENARIO), "--format", "json")
    assert run.report()["remedy"]["backends"] == ["magicmind"]
    run = run_cli(scenario_csv(SCENARIO), "--format", "json", "--backend", "pytorch")
    assert run.report()["remedy"]["backends"] == ["pytorch"]
    (tmp_path / "advisor.toml").write_text('backends = ["tensorrt", "cuda"]\n', encoding="utf-8")
    run = run_cli(scenario_csv(SCENARIO), "--format", "json")
    assert run.code == 2 and "advisor.toml" in run.err and "field 'backends'" in run.err
    assert "unknown backend 'cuda'" in run.err
