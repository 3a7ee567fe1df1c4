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


def _pairs_by_name() -> dict:
    from benchmarks.scenarios.realtool_catalog import CORPUS

    return {p.name: p for p in CORPUS}


def test_every_label_kind_is_one_the_benchmark_scores():
    """A pair's kind is one the advisor names (ROOT_CAUSE_KINDS), a training kind the benchmark
    scores, or consistent; precision and backward pairs are built as their fields say."""
    from advisor.diagnosis import ROOT_CAUSE_KINDS
    from benchmarks.diagnosis import TRAINING_KINDS
    from benchmarks.scenarios.realtool_spec import PHASES, PRECISIONS

    for pair in _pairs_by_name().values():
        assert pair.kind in {"consistent", *ROOT_CAUSE_KINDS, *TRAINING_KINDS}, pair.name
        assert pair.phase in PHASES and set(pair.tasks) <= set(TASKS)
        if pair.phase == "backward":
            assert pair.reference.mode == pair.target.mode == "train_step" and pair.where is not None
        if pair.precision is not None:
            assert pair.precision in PRECISIONS and pair.kind in ("consistent", "fp16_overflow"), pair.name
            assert pair.precision in (pair.target.cast, pair.target.autocast)
        if pair.kind == "fp16_overflow":
            assert pair.precision == "fp16" and pair.reference.setup == pair.target.setup


def _fixture_pair(directory: Path):
    label = json.loads((directory / "label.json").read_text())
    name = directory.name.rsplit("__", 1)[0]
    return _pairs_by_name()[name], label


def test_every_committed_fixture_passes_the_generators_self_check():
    from benchmarks.scenarios.realtool import calls_in_order
    from benchmarks.scenarios.realtool_checks import check

    fixtures = sorted(p for p in DATA.iterdir() if (p / "label.json").is_file())
    assert fixtures
    problems = {}
    for directory in fixtures:
        pair, label = _fixture_pair(directory)
        csv = directory / label["comparison"]
        problems[directory.name] = check(pair, label, csv, calls_in_order(csv), cast=pair.target.cast is not None)
    assert {name: found for name, found in problems.items() if found} == {}


def test_the_rule_case_pairs_copied_beside_the_rules_pass_the_self_check():
    """The real msprobe runs of RULE_CASE_PAIRS (a float16 reference whose output is inf) that rule input
    cases read still show what their label says, and a label that names the wrong side's overflow fails."""
    from benchmarks.scenarios.realtool import calls_in_order
    from benchmarks.scenarios.realtool_catalog import RULE_CASE_PAIRS
    from benchmarks.scenarios.realtool_checks import check

    cases = Path(__file__).resolve().parents[2] / "rules" / "core" / "network" / "cases"
    by_variant = {pair.variant: pair for pair in RULE_CASE_PAIRS}
    folders = sorted(p.parent for p in cases.glob("*/label.json")
                     if json.loads(p.read_text())["family"] == "msprobe_reference_nonfinite")
    assert sorted(f.name for f in folders) == sorted(by_variant)
    for folder in folders:
        label = json.loads((folder / "label.json").read_text())
        csv = folder / label["comparison"]
        assert check(by_variant[folder.name], label, csv, calls_in_order(csv)) == []
        earlier = {**label, "op": "Functional.linear.1.forward", "index": 2}     # finite on both sides
        assert check(by_variant[folder.name], earlier, csv, calls_in_order(csv)) != []


def test_the_self_check_fails_a_label_that_points_elsewhere():
    """A label one call late, or a fault pair labelled consistent, is caught."""
    from benchmarks.scenarios.realtool import calls_in_order
    from benchmarks.scenarios.realtool_checks import check

    directory = DATA / "msprobe_argument_mismatch__small_convnet__layer_norm_eps__L1_statistics"
    pair, label = _fixture_pair(directory)
    csv = directory / label["comparison"]
    calls = calls_in_order(csv)
    late = {**label, "op": calls[label["index"] + 1], "index": label["index"] + 1}
    assert check(pair, late, csv, calls)
    early = {**label, "op": calls[label["index"] - 1], "index": label["index"] - 1}
    assert check(pair, early, csv, calls)
    assert check(pair, {**label, "kind": "problem_node"}, csv, calls)      # an argument row differs too


def test_a_run_whose_definition_changed_is_dumped_again(tmp_path, monkeypatch):
    """The dump cache is keyed by the run's whole job, not only its name."""
    from benchmarks.scenarios import msprobe_tool, realtool
    from benchmarks.scenarios.realtool_spec import RunSpec

    dumped: list[list[dict]] = []

    def fake_dump(jobs, directory, task, level):
        dumped.append(jobs)
        directory.mkdir(parents=True)
        (directory / "batch.json").write_text(json.dumps({"jobs": jobs}))
        return [directory / f"step{i}" / "rank0" for i in range(len(jobs))]

    monkeypatch.setattr(msprobe_tool, "dump_runs", fake_dump)
    store = realtool.DumpStore(tmp_path)
    run = RunSpec("mlp-inference-x", "mlp", "inference", setup=(("grow_output", ("fc3", "fc2", 2e5)),))
    store.ensure([run], "statistics", "L1")
    store.ensure([run], "statistics", "L1")
    assert len(dumped) == 1
    changed = RunSpec("mlp-inference-x", "mlp", "inference", setup=(("grow_output", ("fc3", "fc2", 3e5)),))
    store.ensure([changed], "statistics", "L1")
    assert len(dumped) == 2
    assert store.folder(run, "statistics", "L1").parts[-3] == "batch0"
    assert store.folder(changed, "statistics", "L1").parts[-3] == "batch1"


def _output(job: dict):
    from benchmarks.scenarios.realtool_runs import build_run

    model, run = build_run(job)
    seen = []
    handle = model.register_forward_hook(lambda module, args, output: seen.append(output))
    run()
    handle.remove()
    return seen[0] if isinstance(seen[0], tuple) else (seen[0],)


@pytest.mark.scenarios
@pytest.mark.parametrize("network", ["masked_transformer", "detector", "mlp", "decoder"])
def test_the_new_networks_are_deterministic_and_cast_cleanly(network):
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    job = {"network": network, "mode": "inference"}
    reference = _output(job)
    assert all(torch.equal(a, b) for a, b in zip(reference, _output(job), strict=True))
    for cast in ("fp16", "bf16"):
        for ours, theirs in zip(_output({**job, "cast": cast}), reference, strict=True):
            assert torch.isfinite(ours).all() and not torch.equal(ours.float(), theirs)


@pytest.mark.scenarios
@pytest.mark.parametrize(("network", "grow"), [("mlp", ("fc3", "fc2", 2e5)),
                                               ("detector", ("box_head", "backbone.7", 2e5))])
def test_a_grown_layer_overflows_fp16_only_at_its_own_output(network, grow):
    """Its weights and its input stay within FP16's range; its output passes 65504 in FP16 (inf)
    and stays finite in float32 and bfloat16."""
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios.realtool_networks import NETWORKS
    from benchmarks.scenarios.realtool_runs import build_run

    job = {"network": network, "mode": "inference", "setup": {"grow_output": grow}}
    model, _ = build_run({**job, "cast": "fp16"})
    assert all(torch.isfinite(p).all() for p in model.parameters())
    seen = {}
    model.get_submodule(grow[0]).register_forward_hook(lambda m, args, out: seen.update(x=args[0], y=out))
    with torch.no_grad():
        model.eval()(*(f.half() for f in NETWORKS[network].feeds(None)))
    assert torch.isfinite(seen["x"]).all() and not torch.isfinite(seen["y"]).all()
    for cast in (None, "bf16"):
        assert all(torch.isfinite(o).all() for o in _output({**job, "cast": cast}))


@pytest.mark.scenarios
def test_the_target_kernel_makes_nan_only_while_it_runs():
    """The replaced CPU sqrt kernel gives NaN at exact zeros (the padding rows) inside the target's
    run and is gone afterwards; the reference run of the same network stays finite."""
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    job = {"network": "masked_transformer", "mode": "inference"}
    (faulty,) = _output({**job, "setup": {"kernel": "sqrt_x_rsqrt"}})
    assert torch.isnan(faulty).any()
    assert torch.equal(torch.sqrt(torch.zeros(2)), torch.zeros(2))
    assert all(torch.isfinite(o).all() for o in _output(job))


@pytest.mark.scenarios
def test_a_gradient_hook_changes_the_backward_and_not_the_forward():
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios.realtool_runs import build_run

    def step(**setup):
        model, run = build_run({"network": "mlp", "mode": "train_step", "setup": setup})
        losses = []
        model.register_forward_hook(lambda m, args, out: losses.append(out.detach()))
        run()
        return losses[0], model.net.fc1.weight.detach().clone()

    loss, weights = step()
    hooked_loss, hooked_weights = step(grad_scale=("net.fc2", 0.5))
    assert torch.equal(loss, hooked_loss) and not torch.equal(weights, hooked_weights)


@pytest.mark.scenarios
def test_the_token_faults_are_what_a_tokenizer_gets_wrong():
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from benchmarks.scenarios.realtool_networks import PAD, token_batch

    ids = token_batch()
    assert ids.dtype == torch.int64 and (ids[:, -1] == PAD).all() and (ids[:, 0] != PAD).all()
    assert torch.equal(token_batch("ids_off_by_one")[ids != PAD], ids[ids != PAD] - 1)
    left = token_batch("left_padding")
    assert (left[:, 0] == PAD).all() and torch.equal(left.sort().values, ids.sort().values)
    assert not (token_batch("end_of_text_padding") == PAD).any()
