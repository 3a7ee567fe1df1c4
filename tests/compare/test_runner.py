"""advisor compare as a run: streaming into a journal, resuming, progress, namings, errors, CLI."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from advisor.cli import main
from advisor.compare import runner, work
from advisor.compare.journal import Journal
from advisor.compare.runner import CompareOptions, compare_dumps, journal_path, output_path
from advisor.errors import InputFormatError
from advisor.tensors.npyfile import NpyFile
from benchmarks.compare import write_dumps


@pytest.fixture
def dumps(tmp_path):
    """A Data -> Cast -> TransData -> 6 x Conv(+fused Relu) -> Cast chain, FP16 target, 64 elements each."""
    return write_dumps(tmp_path / "dumps", ops=6, elements=64)


def options(dumps, out, **kw) -> CompareOptions:
    golden, target = dumps
    return CompareOptions(golden, target, out, progress=False, **kw)


def test_the_chain_pairs_fused_ops_target_only_ops_and_the_network_output(dumps, tmp_path):
    summary = compare_dumps(options(dumps, tmp_path / "r.csv", jobs=1))
    frame = pd.read_csv(summary.output, keep_default_na=False, na_values=["NaN"])
    conv = frame[frame["NPUDump"] == "Conv_2"]
    assert list(conv["GroundTruth"]) == ["Conv_2,Relu_3", "Conv_2,Relu_3"]
    assert (conv["CosineSimilarity"] > 0.99).all()
    assert set(frame[frame["GroundTruth"] == "*"]["NPUDump"]) == {"trans_Cast_0", "trans_TransData_1", "trans_Cast_2"}
    assert frame[frame["GroundTruth"] == "*"]["CosineSimilarity"].isna().all()
    last = frame.iloc[-1]
    assert last["NPUDump"] == "Node_Output" and last["GroundTruth"].startswith("Relu_11.0.")
    # input rows share their producer's comparison: 6 convs + Data + Node_Output... computed once each
    assert summary.pairs < summary.rows
    assert not journal_path(tmp_path / "r.csv").exists()


def test_an_interrupted_run_resumes_where_it_stopped(dumps, tmp_path, monkeypatch):
    monkeypatch.setattr(work, "BATCH_ITEMS", 2)        # several batches, so worker threads run
    clean = compare_dumps(options(dumps, tmp_path / "clean.csv", jobs=1))
    out = tmp_path / "r.csv"
    saved = []
    original = Journal.add_pair

    def interrupt_after_three(self, key, value):
        if len(saved) == 3:
            raise KeyboardInterrupt
        saved.append(key)
        original(self, key, value)

    monkeypatch.setattr(Journal, "add_pair", interrupt_after_three)
    with pytest.raises(KeyboardInterrupt):
        compare_dumps(options(dumps, out, jobs=2))
    assert journal_path(out).is_file() and not out.exists()
    monkeypatch.setattr(Journal, "add_pair", original)
    resumed = compare_dumps(options(dumps, out, jobs=2))
    assert resumed.computed == clean.pairs - 3
    assert out.read_bytes() == clean.output.read_bytes()
    assert not journal_path(out).exists()


def test_each_batch_of_results_is_on_disk_once_recorded(dumps, tmp_path, monkeypatch):
    """A run killed outright (no clean-up) keeps every batch it recorded: the journal is written
    once per batch, not left in a buffer."""
    monkeypatch.setattr(work, "BATCH_ITEMS", 3)
    out = tmp_path / "r.csv"
    on_disk = []
    original = runner._Work._record

    def recorded(self, results):
        original(self, results)
        lines = journal_path(out).read_text(encoding="utf-8").splitlines()
        on_disk.append((len(lines) - 1, len(self.journal.prints) + len(self.journal.pairs)))

    monkeypatch.setattr(runner._Work, "_record", recorded)
    compare_dumps(options(dumps, out, jobs=2))
    assert len(on_disk) > 3 and all(written == held for written, held in on_disk)


def test_a_journal_of_other_dumps_is_ignored(dumps, tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    monkeypatch.setattr(Journal, "add_pair", lambda self, key, value: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        compare_dumps(options(dumps, out, jobs=1))
    monkeypatch.undo()
    golden, target = dumps
    victim = sorted(target.glob("Conv2D.Conv_4.*.output.0.npy"))[0]
    np.save(victim, np.load(victim) * np.float16(2))     # the dumps changed since
    summary = compare_dumps(options(dumps, out, jobs=1))
    assert summary.computed == summary.pairs


def test_the_journal_signature_reads_the_scan_and_matches_one_from_the_files(dumps, tmp_path):
    """The run's signature takes each dump's size and modification time from the scan (no second
    stat per file); it is the digest a stat of every file gives, so a journal of an earlier run resumes."""
    import dataclasses

    from advisor.compare.journal import run_signature
    from advisor.tensors.inventory import scan_folder

    golden, target = (scan_folder(folder, side) for folder, side in zip(dumps, ("golden", "target"), strict=True))
    assert all(dump.stamp is not None for dump in golden.files + target.files)
    unstamped = [dataclasses.replace(folder, files=[dataclasses.replace(d, stamp=None) for d in folder.files])
                 for folder in (golden, target)]
    assert run_signature(golden, target, []) == run_signature(*unstamped, [])
    victim = target.files[3].path
    victim.write_bytes(victim.read_bytes() + b"\0")
    assert run_signature(golden, scan_folder(dumps[1], "target"), []) != run_signature(golden, target, [])


def test_restart_ignores_a_matching_journal(dumps, tmp_path, monkeypatch):
    out = tmp_path / "r.csv"
    monkeypatch.setattr(Journal, "add_pair", lambda self, key, value: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        compare_dumps(options(dumps, out, jobs=1))
    monkeypatch.undo()
    summary = compare_dumps(options(dumps, out, jobs=1, resume=False))
    assert summary.computed == summary.pairs


def test_a_folder_output_gets_a_timestamped_name_and_a_stable_journal(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    assert output_path(folder).name.startswith("result_") and output_path(folder).suffix == ".csv"
    assert journal_path(folder) == folder / ".advisor-compare.journal"
    assert journal_path(tmp_path / "r.csv") == tmp_path / "r.csv.journal"


def test_batches_bound_items_and_bytes_largest_first_and_shrink_towards_the_end(monkeypatch):
    monkeypatch.setattr(work, "BATCH_ITEMS", 3)
    monkeypatch.setattr(work, "BATCH_BYTES", 100)

    def keys(tasks, workers=1):
        return [[task.key for task in batch] for batch in work.batches(tasks, workers)]

    # at most half of what is left per worker: 35 of 70 bytes (3 items), then 20 of 40, then 10 of 20
    assert keys([work.PairTask(str(i), "t", nbytes=10) for i in range(7)]) == [["0", "1", "2"], ["3", "4"], ["5"],
                                                                               ["6"]]
    assert keys([work.PairTask(k, "t", nbytes=n) for k, n in (("c", 1), ("a", 60), ("b", 60))]) == [["a"], ["b"],
                                                                                                  ["c"]]
    many = [work.PairTask(str(i), "t", nbytes=10) for i in range(100)]
    assert [len(batch) for batch in work.batches(many, 2)] == [3] * 30 + [2, 2] + [1] * 6
    assert sum(keys(many, 2), []) == [task.key for task in many]


def test_msprobe_dumps_pair_by_identical_names(tmp_path):
    bench, npu = tmp_path / "bench", tmp_path / "npu"
    bench.mkdir()
    npu.mkdir()
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    for folder, noise in ((bench, 0.0), (npu, 1e-3)):
        np.save(folder / "Functional.linear.0.forward.input.0.npy", x)
        np.save(folder / "Functional.linear.0.forward.output.0.npy", x * 2 + noise)
        np.save(folder / "Torch.relu.1.forward.output.0.npy", np.maximum(x, 0))
    np.save(npu / "Torch.gelu.2.forward.output.0.npy", x)     # only on the NPU side
    summary = compare_dumps(CompareOptions(bench, npu, tmp_path / "r.csv", progress=False, jobs=1))
    frame = pd.read_csv(summary.output, keep_default_na=False, na_values=["NaN"])
    assert summary.pairing.startswith("by name")
    linear = frame[frame["NPUDump"] == "Functional.linear.0.forward"]
    assert list(linear["TensorIndex"]) == ["Functional.linear.0.forward:input:0",
                                           "Functional.linear.0.forward:output:0"]
    assert linear["CosineSimilarity"].iloc[0] == 1.0
    gelu = frame[frame["NPUDump"] == "Torch.gelu.2.forward"].iloc[0]
    assert gelu["GroundTruth"] == "*" and gelu["CompareFailReason"] == "no golden data"


def _without_the_input_ops(dumps):
    golden, target = dumps
    for path in list(target.glob("Data.*")) + list(target.glob("Cast.trans_Cast_0.*")) + list(
            target.glob("TransData.*")):
        path.unlink()
    return golden, target


def test_an_input_no_dumped_op_produced_is_not_compared_by_default(dumps, tmp_path):
    golden, target = _without_the_input_ops(dumps)
    summary = compare_dumps(CompareOptions(golden, target, tmp_path / "r.csv", progress=False, jobs=1))
    frame = pd.read_csv(summary.output, keep_default_na=False, na_values=["NaN"]).set_index("TensorIndex")
    row = frame.loc["Conv_0:input:0"]
    assert np.isnan(row["CosineSimilarity"]) and pd.isna(row["DataType.1"])
    assert row["CompareFailReason"].startswith("not compared: no dumped op produced it")
    assert summary.coverage[""] == 1 and "shape" not in summary.coverage
    assert frame.loc["Conv_0:output:0", "CosineSimilarity"] > 0.999


def test_pairing_by_shape_is_opt_in_and_labelled(dumps, tmp_path):
    golden, target = _without_the_input_ops(dumps)
    summary = compare_dumps(CompareOptions(golden, target, tmp_path / "r.csv", progress=False, jobs=1,
                                           pair_by_shape=True))
    frame = pd.read_csv(summary.output, keep_default_na=False, na_values=["NaN"]).set_index("TensorIndex")
    assert frame.loc["Conv_0:input:0", "CosineSimilarity"] > 0.999
    assert frame.loc["Conv_0:input:0", "CompareFailReason"].startswith("paired by shape only (--pair-by-shape)")
    assert summary.coverage["shape"] == 1 and "" not in summary.coverage
    assert any("Conv_0:input:0" in note for note in summary.notes)


def test_cli_writes_the_csv_and_exits_0(dumps, tmp_path, capsys):
    golden, target = dumps
    code = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "r.csv"),
                 "--jobs", "1", "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "distinct tensor pairs" in out
    assert "Coverage: 14 of 20 rows compared (name 1, lineage 7, order 6); 0 not compared; 6 of target-only ops" in out
    assert (tmp_path / "r.csv").read_text().startswith("Index,OpType,NPUDump")


def test_cli_reports_a_missing_folder_with_exit_2(tmp_path, capsys):
    code = main(["compare", "--golden", str(tmp_path / "missing"), "--target", str(tmp_path), "-o",
                 str(tmp_path / "r.csv")])
    assert code == 2
    assert "golden dump folder not found" in capsys.readouterr().err


def test_cli_interrupted_says_how_to_resume(dumps, tmp_path, capsys, monkeypatch):
    golden, target = dumps
    monkeypatch.setattr(runner, "compare_dumps", lambda options, stream=None: (_ for _ in ()).throw(KeyboardInterrupt))
    code = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "r.csv")])
    assert code == 130
    assert "run the same command again to resume" in capsys.readouterr().err


def test_a_target_folder_of_golden_names_still_compares_by_name(dumps, tmp_path):
    golden, _ = dumps
    twin = tmp_path / "twin"
    shutil.copytree(golden, twin)
    summary = compare_dumps(CompareOptions(golden, twin, tmp_path / "r.csv", progress=False, jobs=1))
    frame = pd.read_csv(summary.output)
    assert (frame["CosineSimilarity"] == 1.0).all()


def test_unreadable_graph_is_an_input_error(dumps, tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text("[1, 2")
    with pytest.raises(InputFormatError):
        compare_dumps(options(dumps, tmp_path / "r.csv", graphs=(bad,)))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_dump_cut_short_is_an_input_error_naming_it(dumps, tmp_path, jobs, monkeypatch):
    monkeypatch.setattr(work, "BATCH_ITEMS", 2)        # several batches: workers when jobs > 1
    golden, target = dumps
    victim = sorted(golden.glob("Relu_5.*.npy"))[0]
    victim.write_bytes(victim.read_bytes()[:-40])
    with pytest.raises(InputFormatError, match="Relu_5"):
        compare_dumps(options(dumps, tmp_path / "r.csv", jobs=jobs))


def test_every_target_dump_is_read_once_except_inputs_fed_through_target_only_ops(dumps, tmp_path, monkeypatch):
    reads: list[Path] = []

    def counting(original):
        def read(self, *args):
            reads.append(self.path)
            return original(self, *args)
        return read

    monkeypatch.setattr(NpyFile, "chunks", counting(NpyFile.chunks))       # a dump read in pieces
    monkeypatch.setattr(NpyFile, "read", counting(NpyFile.read))           # ... or whole
    golden, target = dumps
    compare_dumps(options(dumps, tmp_path / "r.csv", jobs=1))
    target_reads = Counter(p for p in reads if p.parent == target)
    assert set(target_reads) == set(target.glob("*.npy"))
    twice = sorted(p.name.split(".")[1] + ":" + p.name.split(".")[-3] for p, n in target_reads.items() if n > 1)
    # Conv_0's input comes from the target-only TransData, and the network output (Node_Output) is the
    # target-only final Cast's: their golden partners are known only after pairing, so these two are
    # read again to be compared; every other dump is read once
    assert twice == ["Conv_0:input", "trans_Cast_2:output"]
    assert all(n <= 2 for n in target_reads.values())


def test_a_mapper_completing_batches_out_of_order_writes_the_same_csv(dumps, tmp_path, monkeypatch):
    """The seam a cluster scheduler uses: any map over batches, results in any order."""
    monkeypatch.setattr(work, "BATCH_ITEMS", 2)
    serial = compare_dumps(options(dumps, tmp_path / "serial.csv", jobs=1))
    used = []

    def reversed_mapper(function, batches):
        used.append(True)
        return [function(batch) for batch in reversed(list(batches))]

    shuffled = compare_dumps(options(dumps, tmp_path / "shuffled.csv", jobs=1, mapper=reversed_mapper))
    assert used and shuffled.output.read_bytes() == serial.output.read_bytes()


def test_a_large_run_takes_the_compiled_pass_and_writes_the_same_csv(dumps, tmp_path, monkeypatch):
    """RUN_BYTES and MIN_ELEMENTS lowered so these small dumps count as large: the worker threads
    (started after numba was loaded) compare through tensors/kernel.py; the CSV is the numpy pass's."""
    from advisor.tensors import kernel

    reference = compare_dumps(options(dumps, tmp_path / "numpy.csv", jobs=2, resume=False))
    monkeypatch.setattr(kernel, "RUN_BYTES", 0)
    monkeypatch.setattr(kernel, "MIN_ELEMENTS", 16)
    calls = []
    monkeypatch.setattr(kernel, "warm_up", lambda real=kernel.warm_up: calls.append(1) or real())
    compiled = compare_dumps(options(dumps, tmp_path / "compiled.csv", jobs=2, resume=False))
    assert calls, "the run did not load the compiled pass"
    assert compiled.output.read_text() == reference.output.read_text()


def test_a_small_run_never_imports_numba(dumps, tmp_path):
    import subprocess
    import sys

    golden, target = dumps
    paths = ", ".join(f"Path({str(path)!r})" for path in (golden, target, tmp_path / "r.csv"))
    script = ("import sys; from pathlib import Path; from advisor.compare.runner import CompareOptions, compare_dumps; "
              f"compare_dumps(CompareOptions({paths}, jobs=1, progress=False)); print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_resumed_run_takes_the_same_pass_for_every_pair_and_writes_the_same_bytes(tmp_path, monkeypatch):
    """The compiled pass (numba) and the numpy pass agree to float64 rounding, not bit for bit: a run
    resumed after its reading step took the numpy pass for what was left (the bytes left were under
    RUN_BYTES, and numba not loaded yet), so a cell could differ in its last printed digit (2 of 20
    kills). The pass is now one decision for the whole run, whatever is left to do."""
    from advisor.tensors import kernel, running

    dumps = write_dumps(tmp_path / "dumps", ops=3, elements=1 << 17)      # pairs above kernel.MIN_ELEMENTS
    total = sum(p.stat().st_size for folder in dumps for p in folder.glob("*.npy"))
    monkeypatch.setattr(kernel, "RUN_BYTES", total // 3)                  # the run pays; what is left does not
    passes: dict[str, list[bool]] = {}
    original = running.file_sums

    def recorded(target, golden, chunk=running.CHUNK, on_target=None, compiled=None):
        used = kernel.use_for(target.size) if compiled is None else compiled
        passes.setdefault(target.path.name, []).append(bool(used))
        return original(target, golden, chunk, on_target, compiled)

    monkeypatch.setattr(work, "file_sums", recorded)
    clean = compare_dumps(options(dumps, tmp_path / "clean.csv", jobs=1))
    clean_passes, passes = passes, {}
    monkeypatch.setattr(kernel, "_COMPILED", {})                          # a new process: numba not loaded
    steps = []
    monkeypatch.setattr(runner._Work, "compare_rest", lambda self, *a: steps.append(a) or (_ for _ in ()).throw(
        KeyboardInterrupt))
    out = tmp_path / "r.csv"
    with pytest.raises(KeyboardInterrupt):
        compare_dumps(options(dumps, out, jobs=1))
    monkeypatch.undo()
    monkeypatch.setattr(kernel, "RUN_BYTES", total // 3)
    monkeypatch.setattr(kernel, "_COMPILED", {})
    monkeypatch.setattr(work, "file_sums", recorded)
    compare_dumps(options(dumps, out, jobs=1))
    assert steps                                                          # it stopped after reading
    assert {name: used[-1:] for name, used in passes.items()} == {n: u[-1:] for n, u in clean_passes.items()
                                                                   if n in passes}
    assert out.read_bytes() == clean.output.read_bytes()
