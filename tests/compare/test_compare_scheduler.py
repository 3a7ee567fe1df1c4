"""``advisor compare --scheduler``: the tensor pairs are compared on a real dask cluster (worker
processes on loopback that read the dumps from the same disk) and the CSV is row for row the one a
run on this machine writes; an interrupted cluster run resumes from the client's journal."""

from __future__ import annotations

import csv

import pytest

from advisor.cli import main
from advisor.compare import work
from advisor.compare.journal import Journal
from advisor.compare.runner import CompareOptions, compare_dumps, journal_path
from benchmarks.compare import write_dumps
from tests.localcluster import local_cluster


@pytest.fixture(scope="module")
def scheduler() -> str:
    with local_cluster() as address:
        yield address


@pytest.fixture
def dumps(tmp_path):
    """A Data -> Cast -> TransData -> 12 x Conv(+fused Relu) -> Cast chain, FP16 target."""
    return write_dumps(tmp_path / "dumps", ops=12, elements=256)


@pytest.fixture
def small_batches(monkeypatch):
    """Many small tasks, so every worker gets some and results come back out of order."""
    monkeypatch.setattr(work, "BATCH_ITEMS", 2)


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_compare_on_the_cluster_writes_the_serial_csv_row_for_row(dumps, tmp_path, capsys, scheduler, small_batches):
    golden, target = dumps
    serial = compare_dumps(CompareOptions(golden, target, tmp_path / "serial.csv", jobs=1, progress=False))
    code = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "cluster.csv"),
                 "--scheduler", scheduler, "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and f"{serial.rows} rows, {serial.pairs} distinct tensor pairs" in out
    rows = _rows(tmp_path / "cluster.csv")
    assert len(rows) == serial.rows + 1 and rows == _rows(serial.output)
    assert (tmp_path / "cluster.csv").read_bytes() == serial.output.read_bytes()
    assert not journal_path(tmp_path / "cluster.csv").exists()


def test_an_interrupted_cluster_compare_resumes_from_the_journal(dumps, tmp_path, scheduler, small_batches,
                                                                 monkeypatch):
    from distributed import Client

    from advisor.cluster.compare import mapper

    golden, target = dumps
    clean = compare_dumps(CompareOptions(golden, target, tmp_path / "clean.csv", jobs=1, progress=False))
    out = tmp_path / "r.csv"
    original = Journal.add_pair
    saved = []

    def interrupt_after_three(self, key, value):
        if len(saved) == 3:
            raise KeyboardInterrupt
        saved.append(key)
        original(self, key, value)

    with Client(scheduler, set_as_default=False) as client:
        options = CompareOptions(golden, target, out, progress=False, mapper=mapper(client))
        monkeypatch.setattr(Journal, "add_pair", interrupt_after_three)
        with pytest.raises(KeyboardInterrupt):
            compare_dumps(options)
        monkeypatch.setattr(Journal, "add_pair", original)
        assert journal_path(out).is_file() and not out.exists()
        resumed = compare_dumps(options)
    assert resumed.computed == clean.pairs - 3
    assert out.read_bytes() == clean.output.read_bytes()


def test_a_bad_dump_stops_a_cluster_compare_with_the_file_named(dumps, tmp_path, capsys, scheduler):
    golden, target = dumps
    victim = sorted(target.glob("Conv2D.Conv_4.*.output.0.npy"))[0]
    victim.write_bytes(victim.read_bytes()[:200])          # cut short: the header promises more data
    code = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "r.csv"),
                 "--scheduler", scheduler, "--no-progress"])
    local = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "l.csv"),
                  "-j", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == local == 2 and err.count(victim.name) == 2


def test_scheduler_and_jobs_exclude_each_other(dumps, tmp_path, capsys):
    golden, target = dumps
    code = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "r.csv"),
                 "--scheduler", "tcp://127.0.0.1:9", "-j", "2"])
    assert code == 2 and "--jobs: not with --scheduler" in capsys.readouterr().err


def test_a_large_cluster_run_takes_the_compiled_pass_on_the_workers(tmp_path, scheduler, monkeypatch):
    """RUN_BYTES lowered on the client: every task asks its worker to load numba; pairs of 64k
    elements then go through tensors/kernel.py there, and the CSV is the numpy pass's on this machine."""
    from advisor.tensors import kernel

    golden, target = write_dumps(tmp_path / "dumps", ops=3, elements=kernel.MIN_ELEMENTS)
    with monkeypatch.context() as patch:      # the numpy pass here, even if an earlier test loaded numba
        patch.setattr(kernel, "MIN_ELEMENTS", 1 << 62)
        serial = compare_dumps(CompareOptions(golden, target, tmp_path / "serial.csv", jobs=1, progress=False))
    monkeypatch.setattr(kernel, "RUN_BYTES", 0)
    assert main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "cluster.csv"),
                 "--scheduler", scheduler, "--no-progress"]) == 0
    from distributed import Client

    with Client(scheduler) as client:
        assert any(client.run(kernel.loaded).values()), "no worker loaded the compiled pass"
    assert (tmp_path / "cluster.csv").read_bytes() == serial.output.read_bytes()
