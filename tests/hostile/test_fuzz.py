"""The fuzz harness (benchmarks/fuzz.py), bounded: a fixed, derandomised sample of hostile versions of real
files, each run by the command that reads it. Oracle: exit 0/1 with valid reports, or exit 2 with one
bounded line naming the file; never exit 3, a hang, memory over budget or a file left behind.

The CSV target here only changes cell values and whole rows (well-formed CSV); byte-level CSV mutations
run in the long run (`python -m benchmarks.fuzz --minutes 30`, docs/robustness.md). More examples:
``ADVISOR_FUZZ_EXAMPLES=500 python -m pytest tests/hostile/test_fuzz.py``."""

from __future__ import annotations

import os
import shutil
from functools import cache

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from benchmarks.fuzz import Outcome, Target, check, mutate, run_example, targets

EXAMPLES = int(os.environ.get("ADVISOR_FUZZ_EXAMPLES", "24"))
CI_TARGETS = ("csv", "config", "mapping", "toml", "graph", "fusion", "pack", "manifest", "subnormal", "xlsx", "onnx",
              "dumpjson", "template", "outdir", "batchdir", "dumpdir")


@cache
def seeded() -> dict[str, tuple[Target, list[bytes]]]:
    found = {}
    for name in CI_TARGETS:
        target = targets()[name]
        seeds = target.seeds()
        if seeds:
            found[name] = (target, seeds)
    return found


def test_every_reader_has_seeds():
    assert {"csv", "config", "mapping", "toml", "pack", "manifest", "subnormal", "xlsx", "onnx", "dumpjson",
            "template", "outdir", "batchdir", "dumpdir"} <= set(seeded())


@pytest.mark.parametrize("name", ["subnormal", "xlsx", "onnx", "dumpjson", "template", "outdir", "batchdir", "dumpdir"])
def test_every_seed_of_the_hostile_classes_passes_the_oracle(tmp_path, name):
    """The seeds themselves are hostile (subnormal metrics, workbooks, external weights pointing out, a
    dump.json 100,000 deep, templates that fail when rendered, links and FIFOs where advisor writes or
    reads): each unmutated seed must already hold the oracle."""
    target, seeds = seeded()[name]
    for number, seed in enumerate(seeds):
        workdir = tmp_path / f"{name}-{number}"
        outcome = run_example(target, seed, workdir)
        assert not outcome.problems, (name, number, outcome.problems, outcome.err[-500:])
        shutil.rmtree(workdir, ignore_errors=True)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_files_get_a_report_or_one_line(tmp_path_factory, data):
    name = data.draw(st.sampled_from(sorted(seeded())), label="target")
    target, seeds = seeded()[name]
    rng = data.draw(st.randoms(use_true_random=False), label="rng")
    hostile = mutate(rng.choice(seeds), rng, well_formed=name == "csv", target_mutate=target.mutate)
    workdir = tmp_path_factory.mktemp(f"fuzz-{name}")
    outcome = run_example(target, hostile, workdir)
    try:
        assert not outcome.problems, (name, outcome.problems, outcome.err[-500:], hostile[:300])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_the_oracle_sees_crashes_hangs_long_lines_and_leftovers(tmp_path):
    """The harness is not blind."""
    target, seeds = seeded()["config"]
    assert run_example(target, seeds[0], tmp_path / "a", time_budget=0.01).problems == \
        ["hang: still running after 60 s"]
    file, out = tmp_path / "b" / "input.json", tmp_path / "b" / "out"
    out.mkdir(parents=True)
    (out / ".report.txt.0123abcd.tmp").write_text("x")
    crash = Outcome("config", 3, "advisor: internal error: RuntimeError: boom\n", 1.0)
    assert check(crash, target, file, out, tmp_path / "b", set()) == [
        "exit 3: advisor: internal error: RuntimeError: boom", "left behind: out/.report.txt.0123abcd.tmp"]
    long_line = Outcome("config", 2, f"advisor: error: {file}: " + "x" * 3000 + "\n", 1.0)
    assert check(long_line, target, file, tmp_path / "c", tmp_path / "c", set())[0].startswith("exit 2 with a 30")
    unnamed = Outcome("config", 2, "advisor: error: something\n", 1.0)
    assert check(unnamed, target, file, tmp_path / "c", tmp_path / "c", set())[0].startswith("exit 2 without naming")
