"""Two msprobe dump.json files compared by statistics: ``read_dump_pair(bench, target)``."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from advisor.errors import InputFormatError, UsageError
from advisor.ingest import read_comparison, read_dump_pair
from advisor.ingest.call_matching import pair_calls
from advisor.ingest.table import check_schema


def tensor(dtype="torch.float32", shape=(2, 3), max_=1.0, min_=-1.0, mean=0.0, norm=2.0, **extra):
    return {"type": "torch.Tensor", "dtype": dtype, "shape": list(shape), "Max": max_, "Min": min_,
            "Mean": mean, "Norm": norm, **extra}


def write_dump(path: Path, data: dict, framework: str = "pytorch") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": "statistics", "level": "mix", "framework": framework,
                                "dump_data_dir": None, "data": data}, indent=4), encoding="utf-8")
    return path


def linear_call(scale: float = 1.0, dtype: str = "torch.float32") -> dict:
    return {
        "input_args": [tensor(dtype, (4, 8)), tensor(dtype, (16, 8), max_=0.5, min_=-0.5, norm=3.0),
                       {"type": "int", "value": 1}],
        "input_kwargs": {"bias": tensor(dtype, (16,), norm=0.5), "inplace": {"type": "bool", "value": False}},
        "output": [tensor(dtype, (4, 16), max_=2.0 * scale, min_=-2.0, mean=0.1, norm=4.0 * scale)],
    }


def test_same_names_pair_tensor_by_tensor_with_statistic_differences(tmp_path):
    bench = write_dump(tmp_path / "gpu" / "dump.json", {"Functional.linear.0.forward": linear_call()})
    target = write_dump(tmp_path / "npu" / "dump.json",
                        {"Functional.linear.0.forward": linear_call(scale=1.5, dtype="torch.float16")})
    table = read_dump_pair(bench, target)
    frame = table.frame
    check_schema(frame)
    assert table.format == "msprobe-dump" and table.source == target
    assert list(frame["tensor_id"]) == ["Functional.linear.0.forward.input.0", "Functional.linear.0.forward.input.1",
                                        "Functional.linear.0.forward.input.2",
                                        "Functional.linear.0.forward.input.bias",
                                        "Functional.linear.0.forward.input.inplace",
                                        "Functional.linear.0.forward.output.0"]
    assert frame["slot"].tolist() == [0, 1, 2, pd.NA, pd.NA, 0]
    assert list(frame["io"]) == ["input", "input", "input", "input", "input", "output"]
    assert set(frame["op_type"]) == {"Functional.linear"} and set(frame["direction"]) == {"forward"}
    # arguments as msprobe's CSV prints them: the int's value as its statistics, the bool's as text
    assert list(frame["npu_dtype"]) == ["float16", "float16", "python.int", "float16", "python.bool", "float16"]
    assert (frame["npu_max"].iloc[2], frame["golden_max"].iloc[2]) == (1.0, 1.0)
    assert (frame["npu_arg"].iloc[4], frame["golden_arg"].iloc[4]) == ("False", "False")
    assert frame["npu_arg"].drop(index=4).isna().all()
    out = frame.iloc[5]
    assert (out["npu_max"], out["golden_max"], out["max_rel_diff"]) == (3.0, 2.0, 0.5)
    assert (out["norm_rel_diff"], out["min_rel_diff"], out["mean_rel_diff"]) == (0.5, 0.0, 0.0)
    assert out["shape"] == out["golden_shape"] == "[4, 16]" and not out["shape_mismatch"]
    assert frame["cosine"].isna().all() and frame["max_abs_error"].isna().all()
    assert frame["verdict"].isna().all() and frame["md5_match"].isna().all()
    assert table.present_metrics == ["npu_mean", "golden_mean", "npu_max", "npu_min", "npu_norm", "golden_max",
                                     "golden_min", "golden_norm", "max_rel_diff", "min_rel_diff",
                                     "mean_rel_diff", "norm_rel_diff"]
    assert table.derived_metrics == ["max_rel_diff", "min_rel_diff", "mean_rel_diff", "norm_rel_diff"]
    assert set(frame["source_line"]) == {7}  # the line of the call's key in the target dump


def test_calls_pair_across_frameworks_by_normalised_name(tmp_path):
    bench = write_dump(tmp_path / "pt.json", {
        "Torch.matmul.0.forward": {"input_args": [tensor()], "output": [tensor()]},
        "NPU.npu_rms_norm.0.forward": {"input_args": [tensor()], "output": [tensor()]},
        "NPU.npu_fusion_attention.2.forward": {"input_args": [tensor()], "output": [tensor()]},
        "Module.module.encoder.layers.0.Linear.forward.0": {"input_args": [tensor()], "output": [tensor()]},
        "Module.module.encoder.layers.1.Linear.forward.0": {"input_args": [tensor()], "output": [tensor()]},
        "Torch.softmax.0.forward": {"input_args": [tensor()], "output": [tensor()]},
    })
    target = write_dump(tmp_path / "ms.json", framework="mindspore", data={
        "Mint.matmul.0.forward": {"input_args": [tensor("Float16")], "output": [tensor("BFloat16")]},
        "Primitive.norm.RmsNorm.0.forward": {"input_args": [tensor()], "output": [tensor()]},
        "Functional.flash_attention_score.2.forward": {"input_args": [tensor()], "output": [tensor()]},
        "Cell.network.encoder.layers.1.Dense.forward.0": {"input_args": [tensor()], "output": [tensor()]},
        "Cell.network.encoder.layers.0.Dense.forward.0": {"input_args": [tensor()], "output": [tensor()]},
        "Mint.gelu.0.forward": {"input_args": [tensor()], "output": [tensor()]},
    })
    frame = read_dump_pair(bench, target).frame
    pairs = dict(frame[["op_name", "golden_ops"]].dropna().drop_duplicates().itertuples(index=False))
    assert pairs == {
        "Mint.matmul.0.forward": "Torch.matmul.0.forward",                            # prefix
        "Primitive.norm.RmsNorm.0.forward": "NPU.npu_rms_norm.0.forward",             # npu_, "_", case
        "Functional.flash_attention_score.2.forward": "NPU.npu_fusion_attention.2.forward",  # alias
        "Cell.network.encoder.layers.1.Dense.forward.0": "Module.module.encoder.layers.1.Linear.forward.0",
        "Cell.network.encoder.layers.0.Dense.forward.0": "Module.module.encoder.layers.0.Linear.forward.0",
    }
    assert list(frame["npu_dtype"].iloc[:2]) == ["float16", "bfloat16"]  # MindSpore dtype names
    assert set(frame.loc[frame["npu_only"], "op_name"]) == {"Mint.gelu.0.forward"}
    assert set(frame.loc[frame["golden_only"], "golden_ops"]) == {"Torch.softmax.0.forward"}
    assert frame.loc[frame["golden_only"], "op_name"].isna().all()


def test_modules_of_one_class_pair_by_their_paths():
    target = ["Cell.net.layers.1.attention.Attention.forward.0", "Cell.net.layers.0.attention.Attention.forward.0"]
    bench = ["Module.module.layers.0.self_attn.Attention.forward.0",
             "Module.module.layers.1.self_attn.Attention.forward.0"]
    pairs = {p.target: p.bench for p in pair_calls(target, bench)}
    assert pairs == {target[0]: bench[1], target[1]: bench[0]}  # layers.1 with layers.1


def test_modules_of_other_classes_or_directions_do_not_pair():
    pairs = pair_calls(["Cell.a.FusedRMSNorm.backward.0", "Cell.b.Dropout.forward.0"],
                       ["Module.a.RMSNorm.forward.0", "Module.b.LayerNorm.forward.0"])
    assert all(p.target is None or p.bench is None for p in pairs)


def test_counters_pair_only_when_each_side_spells_the_api_one_way():
    # Torch.add and Tensor.add count separately: the k-th add pairs with the k-th add
    pairs = pair_calls(["Mint.add.0.forward", "Mint.add.1.forward", "Mint.add.2.forward"],
                       ["Torch.add.0.forward", "Tensor.add.0.forward", "Torch.add.1.forward"])
    assert [(p.target, p.bench) for p in pairs] == [
        ("Mint.add.0.forward", "Torch.add.0.forward"), ("Mint.add.1.forward", "Tensor.add.0.forward"),
        ("Mint.add.2.forward", "Torch.add.1.forward")]


def test_when_the_rules_do_not_decide_calls_stay_unpaired():
    pairs = pair_calls(["Mint.add.0.forward", "Mint.add.1.forward"],
                       ["Torch.add.0.forward", "Tensor.add.0.forward", "Torch.add.1.forward"])
    assert all(p.target is None or p.bench is None for p in pairs)
    assert len(pairs) == 5


def test_bench_only_calls_come_after_the_pair_before_them():
    pairs = pair_calls(["a.relu.0.forward", "a.add.0.forward"],
                       ["a.relu.0.forward", "a.dropout.0.forward", "a.add.0.forward"])
    assert [(p.target, p.bench) for p in pairs] == [
        ("a.relu.0.forward", "a.relu.0.forward"), (None, "a.dropout.0.forward"),
        ("a.add.0.forward", "a.add.0.forward")]


def test_backward_calls_parameters_and_nested_outputs(tmp_path):
    data = {
        "Module.fc.Linear.forward.0": {"input_args": [tensor()], "input_kwargs": {},
                                       "output": [[tensor(), tensor(max_=3.0)]],
                                       "parameters": {"weight": tensor(), "bias": tensor()}},
        "Module.fc.Linear.backward.0": {"input": [tensor()], "output": [tensor(), None]},
        "Module.fc.Linear.parameters_grad": {"weight": tensor(), "bias": tensor()},
    }
    path = write_dump(tmp_path / "dump.json", data)
    frame = read_dump_pair(path, path).frame
    assert list(frame["tensor_id"]) == [
        "Module.fc.Linear.forward.0.input.0", "Module.fc.Linear.forward.0.output.0.0",
        "Module.fc.Linear.forward.0.output.0.1", "Module.fc.Linear.forward.0.parameters.weight",
        "Module.fc.Linear.forward.0.parameters.bias", "Module.fc.Linear.backward.0.input.0",
        "Module.fc.Linear.backward.0.output.0", "Module.fc.Linear.parameters_grad.weight",
        "Module.fc.Linear.parameters_grad.bias"]
    assert list(frame["io"]) == ["input", "output", "output", "parameter", "parameter", "input", "output",
                                 "parameter_grad", "parameter_grad"]
    assert list(frame["direction"]) == ["forward"] * 5 + ["backward"] * 4
    assert set(frame["op_type"]) == {"Module.Linear"}
    assert list(frame["op_index"]) == [0] * 5 + [1, 1, 2, 2]
    assert (frame["norm_rel_diff"] == 0).all()


def test_bool_and_null_statistics(tmp_path):
    mask = {"type": "torch.Tensor", "dtype": "torch.bool", "shape": [4], "Max": True, "Min": False,
            "Mean": None, "Norm": None}
    path = write_dump(tmp_path / "dump.json", {"Tensor.__or__.0.forward": {"input_args": [mask], "output": [mask]}})
    frame = read_dump_pair(path, path).frame
    assert list(frame["npu_max"]) == [1.0, 1.0] and list(frame["npu_min"]) == [0.0, 0.0]
    assert frame["npu_mean"].isna().all() and frame["mean_rel_diff"].isna().all()
    assert list(frame["npu_dtype"]) == ["bool", "bool"]


def test_md5_dumps_compare_digests_and_shapes_are_compared(tmp_path):
    bench = write_dump(tmp_path / "a.json", {"Torch.mul.0.forward": {
        "input_args": [tensor(md5="aa11"), tensor(md5="bb22")], "output": [tensor(shape=(2, 3), md5="cc33")]}})
    target = write_dump(tmp_path / "b.json", {"Torch.mul.0.forward": {
        "input_args": [tensor(md5="aa11"), tensor(md5="ff00")], "output": [tensor(shape=(3, 2), md5="cc34")]}})
    frame = read_dump_pair(bench, target).frame
    assert frame["md5_match"].tolist() == [True, False, False]
    assert frame["shape_mismatch"].tolist() == [False, False, True]


def test_unpaired_tensors_of_a_paired_call(tmp_path):
    bench = write_dump(tmp_path / "a.json", {"Torch.split.0.forward": {
        "input_args": [tensor()], "output": [tensor(), tensor(), tensor()]}})
    target = write_dump(tmp_path / "b.json", {"Torch.split.0.forward": {
        "input_args": [tensor(), tensor()], "output": [tensor(), tensor()]}})
    frame = read_dump_pair(bench, target).frame
    assert list(frame["tensor_id"]) == ["Torch.split.0.forward.input.0", "Torch.split.0.forward.input.1",
                                        "Torch.split.0.forward.output.0", "Torch.split.0.forward.output.1",
                                        "Torch.split.0.forward.output.2"]
    assert frame["npu_only"].tolist() == [False, True, False, False, False]
    assert frame["golden_only"].tolist() == [False, False, False, False, True]
    assert frame["golden_ops"].notna().all() and pd.isna(frame.at[4, "op_name"])


def test_bad_inputs_are_one_line_errors_naming_the_file(tmp_path):
    good = write_dump(tmp_path / "good.json", {"Torch.relu.0.forward": {"output": [tensor()]}})
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "data": {\n    "Torch.relu.0.forward": [1,\n}', encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_dump_pair(good, broken)
    assert caught.value.path == str(broken) and caught.value.line == 4 and "not valid JSON" in str(caught.value)

    no_data = tmp_path / "no_data.json"
    no_data.write_text('{"task": "statistics"}', encoding="utf-8")
    with pytest.raises(InputFormatError, match="no 'data' object") as caught:
        read_dump_pair(no_data, good)
    assert caught.value.field == "data"

    bad_stat = write_dump(tmp_path / "bad.json", {"Torch.relu.0.forward": {"output": [tensor(max_="big")]}})
    with pytest.raises(InputFormatError, match="bad number 'big'") as caught:
        read_dump_pair(good, bad_stat)
    assert caught.value.field == "Torch.relu.0.forward.output.0.Max"

    with pytest.raises(InputFormatError, match="file not found"):
        read_dump_pair(tmp_path / "missing.json", good)


def test_a_binary_pickle_is_never_unpickled(tmp_path):
    path = tmp_path / "npu.pkl"
    path.write_bytes(pickle.dumps({"Functional_linear_0_forward_input.0": [1.0]}))
    with pytest.raises(InputFormatError, match="never unpickles"):
        read_dump_pair(path, path)


def test_old_pkl_text_pairs_with_a_current_dump_json(tmp_path):
    pkl = tmp_path / "npu.pkl"
    pkl.write_text('["Torch_relu_0_forward_input.0", 1, [], "torch.float16", [2, 3], [1.0, -1.0, 0.0]]\n'
                   '["Torch_relu_0_forward_output", 1, [], "torch.float16", [2, 3], [1.0, 0.0, 0.5]]\n',
                   encoding="utf-8")
    bench = write_dump(tmp_path / "dump.json", {"Torch.relu.0.forward": {
        "input_args": [tensor()], "output": [tensor(max_=1.0, min_=0.0, mean=0.25)]}})
    frame = read_dump_pair(bench, pkl).frame
    assert list(frame["golden_ops"]) == ["Torch.relu.0.forward"] * 2
    assert not frame["npu_only"].any() and not frame["golden_only"].any()
    assert list(frame["mean_rel_diff"]) == [0.0, 1.0]
    assert list(frame["source_line"]) == [1, 2]
    assert np.isnan(frame.at[0, "npu_norm"])


def test_read_comparison_points_a_dump_json_to_the_pair_reader(tmp_path):
    path = write_dump(tmp_path / "dump.json", {"Torch.relu.0.forward": {"output": [tensor()]}})
    with pytest.raises(InputFormatError, match="--bench BENCH/dump.json --target TARGET/dump.json"):
        read_comparison(path)
    with pytest.raises(UsageError, match="compares two dump.json files"):
        read_comparison(path, format="msprobe-dump")


def test_a_call_given_twice_is_refused_not_silently_dropped(tmp_path):
    path = tmp_path / "dump.json"
    path.write_text('{"data": {\n "Torch.relu.0.forward": {"output": []},\n "Torch.relu.0.forward": {"output": []}}}',
                    encoding="utf-8")
    with pytest.raises(InputFormatError, match="given twice") as caught:
        read_dump_pair(path, path)
    assert (caught.value.line, caught.value.field) == (3, "data.Torch.relu.0.forward")


def test_a_call_spelt_with_escapes_has_its_line_and_a_huge_integer_is_infinite(tmp_path):
    path = tmp_path / "dump.json"
    data = {"Torch.r\u00e9lu.0.forward": {"input_kwargs": {"n": {"type": "int", "value": 10 ** 400}},
                                          "output": [tensor()]}}
    path.write_text(json.dumps({"task": "statistics", "data": data}, indent=1, ensure_ascii=True), encoding="utf-8")
    frame = read_dump_pair(path, path).frame
    assert list(frame["tensor_id"]) == ["Torch.r\u00e9lu.0.forward.input.n", "Torch.r\u00e9lu.0.forward.output.0"]
    assert set(frame["source_line"]) == {4}   # "Torch.r\\u00e9lu.0.forward" is on line 4
    assert frame.at[0, "npu_max"] == np.inf and bool(frame.at[0, "npu_nonfinite"])


READ_PAIR = """
import sys
from advisor.memory import release_freed_memory
release_freed_memory()   # as the command line does
from advisor.ingest import read_dump_pair

def mib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024

before = mib("VmRSS")
open("/proc/self/clear_refs", "w").write("5")   # the peak from here on
table = read_dump_pair(sys.argv[1], sys.argv[2])
print(len(table), mib("VmHWM") - before)
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="the kernel's peak RSS (Linux)")
def test_a_dump_pair_is_read_in_less_memory_than_its_files(tmp_path):
    """A large model's dump.json is read call by call into columns: reading a pair takes about as much
    memory as the two files (1.3x here, 1.1x at 311 MiB). Holding the documents and a Python object per
    tensor took 3.8x (3.7x at 311 MiB)."""
    from benchmarks._msprobe_replica import replicate_dump_json

    source = Path(__file__).parents[1] / "data" / "msprobe_faults"   # msprobe 26.2's own dumps, replicated
    files = [tmp_path / f"{side}_dump.json" for side in ("bench", "target")]
    for side, path in zip(("bench", "target"), files, strict=True):
        replicate_dump_json(source / f"fp16_overflow_{side}_dump.json", path, calls=20_000)
    size_mib = sum(path.stat().st_size for path in files) / 2**20
    out = subprocess.run([sys.executable, "-c", READ_PAIR, *map(str, files)], capture_output=True, text=True,
                         check=True).stdout
    rows, grown_mib = out.split()
    assert int(rows) == 68_000 and size_mib > 30
    assert float(grown_mib) < 2 * size_mib, f"reading {size_mib:.0f} MiB of dumps took {grown_mib} MiB more"
