"""The real-tool generator itself (benchmarks/scenarios/realtool*.py, training.py): catalog
integrity, the debugger configs, a deterministic training step, and one fixture regenerated with the
real msprobe (skipped without torch / mindstudio-probe)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.scenarios.msprobe_tool import LEVELS, TASKS, debugger_config
from tests.conftest import SCENARIO_EXTRAS

DATA = Path(__file__).resolve().parents[1] / "data" / "realtool"


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("level", LEVELS)
def test_debugger_config_says_what_users_write(task, level):
    config = debugger_config(task, level, Path("/d"))
    assert config["level"] == level and config["dump_path"] == "/d"
    if task == "tensor":
        assert config["task"] == "tensor" and "statistics" not in config
    else:
        assert config["task"] == "statistics"
        assert config["statistics"]["summary_mode"] == ("md5" if task == "md5" else "statistics")
    with pytest.raises(ValueError):
        debugger_config("overflow", level, Path("/d"))


@pytest.mark.scenarios
def test_catalog_is_consistent_and_the_fixtures_are_its_subset():
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios.realtool import fixture_scenarios
    from benchmarks.scenarios.realtool_catalog import CORPUS

    assert len({p.name for p in CORPUS}) == len(CORPUS)
    for pair in CORPUS:
        assert pair.reference.key != pair.target.key
        assert (pair.where is None) == (pair.api is None)
        assert (pair.kind == "consistent") == pair.family.startswith(("msprobe_clean_", "msprobe_same_run"))
    names = sorted(s.name for s in fixture_scenarios())
    assert names == sorted(p.name for p in DATA.iterdir() if (p / "label.json").is_file())


@pytest.mark.scenarios
def test_the_training_step_is_deterministic_and_the_faults_change_it():
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    try:
        from benchmarks.scenarios import training
        training.batch(0)
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        pytest.skip(f"scikit-image photo not installed: {exc}")

    def step(**knobs):
        setup = training.TrainSetup(**knobs)
        model, optimizer = training.build(setup)
        loss = training.train_step(model, optimizer, *training.batch(setup.batch_index, setup.flip), seed=7)
        return loss, torch.cat([p.detach().flatten() for p in model.parameters()])

    loss, weights = step()
    again, weights_again = step()
    assert torch.equal(loss, again) and torch.equal(weights, weights_again)
    for knobs in ({"layer_norm_eps": 1e-3}, {"batch_index": 1}, {"steps_before": 1}, {"flip": True},
                  {"perturbed_layer": "conv2.weight"}):
        assert not torch.equal(step(**knobs)[1], weights), knobs


@pytest.mark.scenarios
def test_a_fixture_regenerated_with_the_real_msprobe_gives_the_same_verdicts(tmp_path):
    pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    pytest.importorskip("msprobe", reason="needs mindstudio-probe (the scenarios extra)")
    from benchmarks.scenarios import realtool

    (scenario,) = [s for s in realtool.fixture_scenarios()
                   if s.name == "msprobe_argument_mismatch__small_convnet__layer_norm_eps__L1_md5"]
    directories, failures = realtool.generate_all([scenario], tmp_path / "out", tmp_path / "work")
    assert failures == [] and [d.name for d in directories] == [scenario.name]
    fresh, committed = (json.loads((d / "label.json").read_text()) for d in (directories[0], DATA / scenario.name))
    assert {k: v for k, v in fresh.items() if k != "comparison"} == \
        {k: v for k, v in committed.items() if k != "comparison"}
    # Same rows in the same order; the checksums themselves are not compared: float results (and so
    # their CRC-32) differ between library builds (a fresh CI venv differs from the machine that wrote the
    # fixture in backward outputs), and msprobe checksums in-place ops' tensors at a moment that varies
    # between runs of one script. What must hold is the diagnosis of the fresh file.
    read = {"dtype": str, "keep_default_na": False, "usecols": ["NPU Name", "NPU MD5", "BENCH MD5"]}
    fresh_rows, committed_rows = (pd.read_csv(path, **read) for path in (
        directories[0] / fresh["comparison"], DATA / scenario.name / committed["comparison"]))
    assert list(fresh_rows["NPU Name"]) == list(committed_rows["NPU Name"])
    from advisor.pipeline import AnalysisOptions, analyse

    root = analyse(AnalysisOptions(comparison=directories[0] / fresh["comparison"], plugins=False)).root_cause
    assert root is not None and (root.kind, root.op, root.index) == (committed["kind"], committed["op"],
                                                                     committed["index"])
