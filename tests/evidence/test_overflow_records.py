"""Hardware overflow records beside a comparison: each status kind gives its own finding and fix.

The records are written in the documented layouts (2048-byte blocks of 64-bit words; the newer
magic-numbered entry) as the first output of an ``Opdebug.Node_OpDebug.{task}.{stream}.{ts}`` dump,
next to the raw dumps of the same run; the comparison is made from those dumps by ``advisor compare``.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from advisor.cli import main
from advisor.tensors.opdebug import read_overflow_record
from benchmarks.compare import write_dumps
from tests.tensors.device_dump_files import raw_folder_from_npy, write_raw_dump

STAMP = 1714987419999999


def old_record(task: int, stream: int, ai_core: int = 0, dha: int = 0, l2: int = 0) -> bytes:
    record = bytearray(2048)
    for start, status_at, status in ((0, 512, dha), (128, 768, l2), (256, 1040, ai_core)):
        if status:
            struct.pack_into("<6Q", record, start, 0, stream, task, 0, 0x1240000, 0x1250000)
            struct.pack_into("<Q", record, status_at, status)
    return bytes(record)


def new_record(task: int, stream: int, status: int) -> bytes:
    words = [0, stream, task, 0, 0xFFFF, 0xFFFF, 0x1240000, 0x1250000, 3, 1, status, 0, 0, 0]
    return struct.pack("<6I", 0x5A5A5A5A, 1, 1, 0, 0, len(words) * 8) + struct.pack(f"<{len(words)}Q", *words)


@pytest.fixture
def run(tmp_path):
    """A chain whose Conv_2 adds error with finite values (a problem node), as raw dumps plus its comparison."""
    golden, target = write_dumps(tmp_path / "npy", ops=4, elements=256)
    conv = next(target.glob("Conv2D.Conv_2.*.output.0.npy"))
    values = np.load(conv).astype(np.float32)
    np.save(conv, (values * 0.6 + 0.3 * np.roll(values, 3)).astype(np.float16))
    raw = raw_folder_from_npy(target, tmp_path / "raw")
    task, stream = (int(p) for p in conv.name.split(".")[2:4])
    assert main(["compare", "--golden", str(golden), "--target", str(raw), "-o", str(tmp_path / "r.csv"), "-q"]) == 0
    return tmp_path, raw, task, stream


def diagnose(tmp_path, *extra) -> dict:
    out = tmp_path / "report"
    code = main(["run", str(tmp_path / "r.csv"), "-o", str(out), "--format", "json", *extra])
    assert code in (0, 1)
    return json.loads((out / "report.json").read_text())


def write_record(raw, name, record):
    write_raw_dump(raw / name, "Node_OpDebug", [], [np.frombuffer(record, np.uint8)])


@pytest.mark.parametrize("record, kind", [
    (lambda t, s: old_record(t, s, ai_core=0x20), "float_overflow"),
    (lambda t, s: old_record(t, s, ai_core=0x100), "conversion_overflow"),
    (lambda t, s: old_record(t, s, ai_core=0x400), "accumulation_overflow"),
    (lambda t, s: old_record(t, s, dha=0x9 << 8), "accumulation_overflow"),
    (lambda t, s: old_record(t, s, l2=0x1 << 16), "accumulation_overflow"),
    (lambda t, s: new_record(t, s, 0x400), "accumulation_overflow"),
])
def test_each_status_kind_names_its_own_root_cause_at_the_op(run, record, kind):
    tmp_path, raw, task, stream = run
    before = diagnose(tmp_path)
    assert before["root_cause"]["kind"] == "problem_node" and before["root_cause"]["op"] == "Conv_2"
    write_record(raw, f"Opdebug.Node_OpDebug.{task}.{stream}.{STAMP}", record(task, stream))
    after = diagnose(tmp_path, "--overflow", str(raw))
    assert after["root_cause"]["kind"] == kind
    assert after["root_cause"]["op"] == "Conv_2" and after["root_cause"]["index"] == before["root_cause"]["index"]
    node = next(f for f in after["findings"] if f["kind"] == "problem_node")
    assert node["explained_by"] == next(f["id"] for f in after["findings"] if f["kind"] == kind)


def test_the_three_kinds_have_different_fixes(run):
    tmp_path, raw, task, stream = run
    fixes = {}
    for status in (0x20, 0x100, 0x400):
        for old in raw.glob("Opdebug.*"):
            old.unlink()
        write_record(raw, f"Opdebug.Node_OpDebug.{task}.{stream}.{STAMP}", old_record(task, stream, ai_core=status))
        root = diagnose(tmp_path, "--overflow", str(raw))["findings"][0]
        fixes[status] = json.dumps(root["advice"], ensure_ascii=False)
    assert len(set(fixes.values())) == 3
    assert "split the reduction" in fixes[0x400] and "conversion" in fixes[0x100]


def test_a_record_no_dump_explains_is_a_warning_not_a_finding(run):
    tmp_path, raw, task, stream = run
    write_record(raw, f"Opdebug.Node_OpDebug.999.{stream}.{STAMP}", old_record(999, stream, ai_core=0x400))
    report = diagnose(tmp_path, "--overflow", str(raw))
    assert report["root_cause"]["kind"] == "problem_node"


def test_records_decode_every_documented_bit(tmp_path):
    path = tmp_path / f"Opdebug.Node_OpDebug.7.1.{STAMP}"
    write_record(tmp_path, path.name, old_record(7, 1, ai_core=0x520, dha=0xA << 8))
    records = read_overflow_record(path)
    assert [(r.unit, r.task_id, r.stream_id) for r in records] == [("AI Core", 7, 1), ("DHA atomic", 7, 1)]
    assert records[0].kinds == ("float", "conversion", "accumulation") and records[0].kind == "accumulation"
    assert "underflow" in records[1].meanings[0]


def saturating_fp16_mean(x: np.ndarray, axis: int) -> np.ndarray:
    """ReduceMeanD on the device: the sum accumulates in FP16 and saturates at 65504 (no inf), then / n."""
    moved = np.moveaxis(x.astype(np.float16), axis, -1)
    total = np.zeros(moved.shape[:-1], np.float16)
    for k in range(moved.shape[-1]):
        total = np.minimum(total.astype(np.float32) + moved[..., k], 65504).astype(np.float16)
    return (total / np.float16(moved.shape[-1])).astype(np.float16)


def test_a_reduction_overflowing_inside_the_op_is_diagnosed_at_that_op(tmp_path):
    """Data -> Conv -> ReduceMean (FP16 accumulation saturates: finite, half the true mean) -> Mul: the values
    only show a problem node; the accumulation record names the fix."""
    rng = np.random.default_rng(3)
    golden, target = tmp_path / "golden", tmp_path / "target"
    golden.mkdir()
    target.mkdir()
    clock = iter(range(1714987410000000, 1714987420000000, 37))
    x = (30 + rng.standard_normal((1, 8, 64, 64))).astype(np.float32)
    conv = x * 1.0001
    mean = conv.mean(axis=(2, 3), keepdims=True)
    out = mean * 0.5
    device_conv = conv.astype(np.float16)
    device_mean = saturating_fp16_mean(device_conv.reshape(1, 8, -1), 2).reshape(1, 8, 1, 1)
    assert np.isfinite(device_mean).all() and device_mean.max() < 65504
    device_out = (device_mean * np.float16(0.5)).astype(np.float16)
    for name, value in (("images", x), ("conv1", conv), ("ReduceMean_2", mean), ("Mul_3", out)):
        np.save(golden / f"{name}.0.{next(clock)}.npy", value)
    tasks = {}
    for task, (op_type, name, inputs, output) in enumerate(
            (("Data", "images", [], x), ("Conv2D", "conv1", [x.astype(np.float16)], device_conv),
             ("ReduceMeanD", "ReduceMean_2", [device_conv], device_mean),
             ("Mul", "Mul_3", [device_mean], device_out)), start=3):
        stamp = next(clock)
        write_raw_dump(target / f"{op_type}.{name}.{task}.0.{stamp}", name, inputs, [output])
        tasks[name] = task
    assert main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "r.csv"),
                 "-q"]) == 0
    before = diagnose(tmp_path)
    assert before["root_cause"]["kind"] == "problem_node" and before["root_cause"]["op"] == "ReduceMean_2"
    assert not any(f["kind"] == "fp16_overflow" for f in before["findings"])
    write_record(target, f"Opdebug.Node_OpDebug.{tasks['ReduceMean_2']}.0.{STAMP}",
                 old_record(tasks["ReduceMean_2"], 0, ai_core=0x400))
    after = diagnose(tmp_path, "--overflow", str(target))
    root = after["root_cause"]
    assert (root["kind"], root["op"]) == ("accumulation_overflow", "ReduceMean_2")
    finding = after["findings"][0]
    assert "accumulator" in finding["evidence"] and "split the reduction" in json.dumps(finding["advice"])
