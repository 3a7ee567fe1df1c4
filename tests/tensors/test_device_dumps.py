"""Raw Ascend device dumps read directly by ``advisor compare``: the same rows as their .npy conversion."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest

from advisor.cli import main
from advisor.compare.runner import CompareOptions, compare_dumps
from advisor.errors import InputFormatError
from advisor.tensors.ascend_raw import read_raw_dump
from advisor.tensors.device_formats import to_original
from benchmarks.compare import write_dumps
from tests.tensors.device_dump_files import raw_folder_from_npy, to_nc1hwc0, wire_header, write_raw_dump


@pytest.fixture
def dumps(tmp_path):
    return write_dumps(tmp_path / "npy", ops=3, elements=256)


def compare(golden, target, out) -> str:
    summary = compare_dumps(CompareOptions(golden, target, out, jobs=1, progress=False))
    return summary.output.read_text()


def test_raw_dumps_give_the_rows_of_their_npy_conversion(dumps, tmp_path):
    golden, target = dumps
    raw = raw_folder_from_npy(target, tmp_path / "raw")
    assert not list(raw.glob("*.npy"))
    assert compare(golden, raw, tmp_path / "raw.csv") == compare(golden, target, tmp_path / "npy.csv")


def test_the_older_layout_with_data_inside_the_message_reads_the_same(dumps, tmp_path):
    golden, target = dumps
    raw = raw_folder_from_npy(target, tmp_path / "raw", inline=True)
    assert compare(golden, raw, tmp_path / "raw.csv") == compare(golden, target, tmp_path / "npy.csv")


def test_a_tensor_stored_as_nc1hwc0_is_compared_in_its_original_layout(tmp_path):
    value = np.random.default_rng(1).standard_normal((1, 20, 5, 5)).astype(np.float16)   # C=20: padded to 32
    path = write_raw_dump(tmp_path / "Conv2D.conv1.3.0.1714987410000641", "conv1", [], [value],
                          formats={("output", 0): ("NC1HWC0", to_nc1hwc0(value))})
    tensor = read_raw_dump(path).tensors[0]
    assert tensor.stored_format == "NC1HWC0" and not tensor.note
    assert np.array_equal(tensor.values, value)


def test_a_layout_without_a_conversion_is_kept_and_said(tmp_path):
    value = np.arange(2 * 3 * 4 * 5 * 16, dtype=np.float32).reshape(2, 3, 4, 5, 16)
    path = write_raw_dump(tmp_path / "Conv3D.c.3.0.1714987410000641", "c", [], [value[:, :, :, :, :1].squeeze(-1)],
                          formats={("output", 0): ("NDC1HWC0", value)})
    tensor = read_raw_dump(path).tensors[0]
    assert tensor.values.shape == value.shape and "stored NDC1HWC0 layout" in tensor.note


def test_a_hand_encoded_header_reads_with_the_published_field_numbers(tmp_path):
    values = np.array([1.5, -2.0, 65504.0], dtype=np.float16)
    header = wire_header("layer1/MatMul", 2, (3,), values.nbytes)
    path = tmp_path / "MatMul.layer1_MatMul.4.0.1714987410000641"
    path.write_bytes(struct.pack("<Q", len(header)) + header + values.tobytes())
    dump = read_raw_dump(path)
    assert dump.op_name == "layer1/MatMul" and dump.version == "2.0"
    assert [(t.io, t.slot, t.dtype) for t in dump.tensors] == [("output", 0, "DT_FLOAT16")]
    assert np.array_equal(dump.tensors[0].values, values)


def test_fractal_z_and_nz_round_trip():
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((20, 5, 3, 3)).astype(np.float32)       # N=20, C=5: both padded
    c1, n1 = 1, 2
    stored = np.zeros((c1, 3, 3, n1, 16, 16), np.float32)
    padded = np.zeros((32, 16, 3, 3), np.float32)
    padded[:20, :5] = weight
    stored[:] = padded.reshape(n1, 16, c1, 16, 3, 3).transpose(2, 4, 5, 0, 1, 3)
    back, note = to_original(stored.reshape(-1), "FRACTAL_Z", (9, n1, 16, 16), weight.shape)
    assert not note and np.array_equal(back, weight)
    matrix = rng.standard_normal((2, 30, 40)).astype(np.float16)        # H=30 -> 2x16, W=40 -> 3x16
    blocks = np.zeros((2, 32, 48), np.float16)
    blocks[:, :30, :40] = matrix
    nz = blocks.reshape(2, 2, 16, 3, 16).transpose(0, 3, 1, 2, 4)
    back, note = to_original(nz.reshape(-1), "FRACTAL_NZ", nz.shape, matrix.shape)
    assert not note and np.array_equal(back, matrix)


def test_a_cut_file_names_itself(dumps, tmp_path):
    _, target = dumps
    raw = raw_folder_from_npy(target, tmp_path / "raw")
    victim = sorted(raw.iterdir())[-1]
    victim.write_bytes(victim.read_bytes()[:-10])
    with pytest.raises(InputFormatError, match="cut short"):
        read_raw_dump(victim)


def test_compare_on_the_command_line_reads_a_raw_folder(dumps, tmp_path, capsys):
    golden, target = dumps
    raw = raw_folder_from_npy(target, tmp_path / "raw")
    shutil.copy(sorted(target.glob("*.npy"))[0], tmp_path / "stray.txt")
    code = main(["compare", "--golden", str(golden), "--target", str(raw), "-o", str(tmp_path / "r.csv"), "-q"])
    assert code == 0 and (tmp_path / "r.csv").is_file()


@pytest.mark.parametrize("make, words", [
    (lambda d: raw_folder_from_npy(d, d.parent / "raw") and sorted((d.parent / "raw").iterdir())[0],
     ["raw Ascend device dump", "advisor compare --golden"]),
    (lambda d: write_raw_dump(d.parent / "Opdebug.Node_OpDebug.4.0.1714987419999999", "Node_OpDebug", [],
                              [np.zeros(2048, np.uint8)]), ["hardware overflow record", "--overflow"]),
])
def test_advisor_run_names_a_dump_it_is_handed_and_the_next_command(dumps, tmp_path, capsys, make, words):
    path = make(dumps[1])
    assert main(["run", str(path), "-o", str(tmp_path / "out")]) == 2
    message = capsys.readouterr().err
    assert "UTF-8" not in message and all(w in message for w in words)


def test_a_magicmind_diff_json_is_named_and_refused(tmp_path, capsys):
    (tmp_path / "diff.json").write_text('{"layer_0": {"cos": 0.99}}')
    assert main(["run", str(tmp_path / "diff.json"), "-o", str(tmp_path / "out")]) == 2
    assert "MagicMind" in capsys.readouterr().err
