"""Dump file names: every naming scheme advisor compare reads, and what it says about the tensor."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.errors import InputFormatError
from advisor.tensors.dump_names import parse_dump_name, safe_name
from advisor.tensors.inventory import read_header, scan_folder


def test_npu_numpy_names_carry_type_op_task_time_direction_and_slot():
    name = parse_dump_name("Conv2D.Conv_0.5.0.1714987410000932.input.1.npy")
    assert (name.naming, name.op_type, name.op, name.task_id, name.timestamp, name.io, name.slot) == (
        "npu", "Conv2D", "Conv_0", 5, 1714987410000932, "input", "1")


def test_npu_op_names_may_hold_dots_from_the_middle():
    name = parse_dump_name("MatMulV2.layer.0.fc.12.0.1714987410000932.output.0.npy")
    assert name.op == "layer.0.fc" and name.task_id == 12


def test_tf_golden_names_carry_op_output_index_and_time():
    name = parse_dump_name("PRelu_1.0.1715028165000148.npy")
    assert (name.naming, name.op, name.io, name.slot, name.timestamp) == ("golden", "PRelu_1", "output", "0",
                                                                         1715028165000148)


@pytest.mark.parametrize(("file", "op", "io", "slot", "api"), [
    ("Functional.linear.0.forward.input.0.npy", "Functional.linear.0.forward", "input", "0", "linear"),
    ("Torch.relu.1.forward.output.0.npy", "Torch.relu.1.forward", "output", "0", "relu"),
    ("Functional.split.0.forward.input.1.2.npy", "Functional.split.0.forward", "input", "1.2", "split"),
    ("Cell.layer1.Conv2d.forward.0.input.0.npy", "Cell.layer1.Conv2d.forward.0", "input", "0", "Conv2d"),
    ("MintFunctional.relu.0.backward.input.0.npy", "MintFunctional.relu.0.backward", "input", "0", "relu"),
])
def test_msprobe_names(file, op, io, slot, api):
    name = parse_dump_name(file)
    assert (name.naming, name.op, name.io, name.slot, name.op_type) == ("msprobe", op, io, slot, api)


@pytest.mark.parametrize("file", ["weights.npy", "notes.txt", "Conv_0.npy", "a.b.npy"])
def test_other_files_follow_no_naming(file):
    assert parse_dump_name(file) is None


def test_safe_names_replace_what_dump_file_names_cannot_hold():
    assert safe_name("model/layer.1/conv 2\\x") == "model_layer_1_conv_2_x"


def test_headers_give_shape_and_dtype_without_reading_the_data(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.zeros((2, 3), dtype=np.float16))
    assert read_header(path) == ((2, 3), "float16", 12)


def test_a_folder_keeps_its_majority_naming_and_notes_the_rest(tmp_path):
    np.save(tmp_path / "Relu.relu_1.3.0.100.output.0.npy", np.ones(3, np.float16))
    np.save(tmp_path / "Relu.relu_1.3.0.100.input.0.npy", np.ones(3, np.float16))
    np.save(tmp_path / "relu_1.0.99.npy", np.ones(3, np.float32))
    (tmp_path / "readme.npy").write_bytes(b"not numpy")
    folder = scan_folder(tmp_path, "target")
    assert folder.naming == "npu" and len(folder.files) == 2
    assert [f.name.io for f in folder.files] == ["input", "output"]
    assert any("golden naming" in note for note in folder.skipped)
    assert any("readme.npy" in note for note in folder.skipped)


def test_missing_and_empty_folders_are_input_errors(tmp_path):
    with pytest.raises(InputFormatError, match="not found"):
        scan_folder(tmp_path / "nope", "golden")
    with pytest.raises(InputFormatError, match="no golden dumps found"):
        scan_folder(tmp_path, "golden")


def test_a_file_that_is_not_numpy_is_an_input_error(tmp_path):
    (tmp_path / "Relu.relu_1.3.0.100.output.0.npy").write_bytes(b"garbage")
    with pytest.raises(InputFormatError, match="is a text file, not an .npy dump"):
        scan_folder(tmp_path, "target")
