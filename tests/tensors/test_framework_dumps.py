"""PyTorch 1.5 .h5 dumps (with get_op_map's maps) and tfdbg dump folders: the rows of the same tensors as .npy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.compare.runner import CompareOptions, compare_dumps
from advisor.errors import InputFormatError
from advisor.tensors.op_map import load_op_map

h5py = pytest.importorskip("h5py", reason="the .h5 reader needs h5py (pip install h5py)")

RNG = np.random.default_rng(5)
# Two executions of a convolution and a batch norm, as the GPU run (golden) and the NPU run name them.
GPU = [("CudnnConvolutionBackward", {"self": (1, 3, 6, 6), "weight": (4, 3, 3, 3)}, (1, 4, 4, 4)),
       ("CudnnBatchNormBackward", {"input": (1, 4, 4, 4)}, (1, 4, 4, 4)),
       ("AddBackward0", {"self": (1, 4, 4, 4), "other": (1, 4, 4, 4)}, (1, 4, 4, 4)),
       ("CudnnConvolutionBackward", {"self": (1, 4, 4, 4), "weight": (4, 4, 3, 3)}, (1, 4, 2, 2))]
NPU_NAMES = {"CudnnConvolutionBackward": "NpuConvolutionBackward",
             "CudnnBatchNormBackward": "NativeBatchNormBackward"}
NPU_ARGS = {"NpuConvolutionBackward": {"self": "input"}}
OP_MAP = [{**{v: k for k, v in NPU_NAMES.items()}, **NPU_NAMES},
          {"NpuConvolutionBackward": {"input": "self"}, "CudnnConvolutionBackward": {"self": "input"}}]


def write_h5(path, ops, first_seq, renamed, fp16):
    """As torch.utils.dumper writes it (Ascend/pytorch DumpUtils.cpp): /{ir}/{seq}/{io}/{arg}, float16 as float32."""
    with h5py.File(path, "w") as handle:
        for k, (ir, inputs, out_shape) in enumerate(ops):
            ir = NPU_NAMES.get(ir, ir) if renamed else ir
            group = f"/{ir}/{first_seq + 3 * k}"
            tensors = {f"input/{NPU_ARGS.get(ir, {}).get(a, a) if renamed else a}": s for a, s in inputs.items()}
            tensors["output/result"] = out_shape
            for name, shape in tensors.items():
                values = RNG.standard_normal(shape).astype(np.float16 if fp16 else np.float32)
                data = handle.create_dataset(f"{group}/{name}", data=values.astype(np.float32))
                data.attrs.create("Type", 0, dtype="<i4")
                data.attrs.create("DataType", 10 if fp16 else 1, dtype="<i4")
                data.attrs.create("DeviceType", 9 if renamed else 1, dtype="<i4")
                data.attrs.create("FormatType", 0, dtype="<i4")
            scalar = handle.create_dataset(f"{group}/input/alpha", data=np.float64(1.0))
            scalar.attrs.create("Type", 7, dtype="<i4")


def as_npy(h5_path, out):
    """The same tensors saved as .npy in the aten naming: {ir}.{seq}.{io}.{arg}.npy."""
    out.mkdir()
    with h5py.File(h5_path, "r") as handle:
        def visit(name, item):
            if isinstance(item, h5py.Dataset) and item.attrs["Type"] == 0:
                ir, seq, io, arg = name.split("/")
                dtype = np.float16 if item.attrs["DataType"] == 10 else np.float32
                np.save(out / f"{ir}.{seq}.{io}.{arg}.npy", item[()].astype(dtype))
        handle.visititems(visit)
    return out


def test_h5_dumps_with_the_op_map_give_the_rows_of_their_npy_tensors(tmp_path):
    write_h5(tmp_path / "gpu.h5", GPU, first_seq=10, renamed=False, fp16=False)
    write_h5(tmp_path / "npu.h5", GPU, first_seq=40, renamed=True, fp16=True)
    (tmp_path / "op_map.json").write_text(json.dumps(OP_MAP))     # json.dump(torch.utils.get_op_map(), f)
    (tmp_path / "ours.yaml").write_text("ops: {NpuConvolutionBackward: CudnnConvolutionBackward,\n"
                                        "      NativeBatchNormBackward: CudnnBatchNormBackward}\n"
                                        "arguments: {NpuConvolutionBackward: {input: self}}\n")
    h5 = compare_dumps(CompareOptions(tmp_path / "gpu.h5", tmp_path / "npu.h5", tmp_path / "h5.csv", jobs=1,
                                      progress=False, op_map=tmp_path / "op_map.json"))
    npy = compare_dumps(CompareOptions(as_npy(tmp_path / "gpu.h5", tmp_path / "g"),
                                       as_npy(tmp_path / "npu.h5", tmp_path / "t"), tmp_path / "npy.csv", jobs=1,
                                       progress=False, op_map=tmp_path / "ours.yaml"))
    text = h5.output.read_text()
    assert text == npy.output.read_text()
    lines = text.splitlines()
    assert len(lines) == 1 + 11                      # every tensor of the 4 ops paired, the scalar left out
    assert "NpuConvolutionBackward.40,Conv2D" not in text
    assert ",CudnnConvolutionBackward.10," in text and ",CudnnConvolutionBackward.19," in text
    assert ",*," not in text and "DT_FLOAT16" in text


def test_without_the_op_map_renamed_ops_stay_unpaired(tmp_path):
    write_h5(tmp_path / "gpu.h5", GPU, first_seq=10, renamed=False, fp16=False)
    write_h5(tmp_path / "npu.h5", GPU, first_seq=40, renamed=True, fp16=True)
    summary = compare_dumps(CompareOptions(tmp_path / "gpu.h5", tmp_path / "npu.h5", tmp_path / "r.csv", jobs=1,
                                           progress=False))
    rows = summary.output.read_text().splitlines()[1:]
    assert sum(",*," in row for row in rows) == 8    # only AddBackward0 pairs by its own name


def test_an_op_map_of_another_shape_is_refused_naming_the_field(tmp_path):
    (tmp_path / "bad.yaml").write_text("ops: {A: [B]}\n")
    with pytest.raises(InputFormatError, match="field 'ops'"):
        load_op_map(tmp_path / "bad.yaml")


@pytest.mark.scenarios     # tensorboard's protos come with the scenario extras (mindstudio-probe needs them)
def test_a_tfdbg_dump_folder_is_read_as_golden_dumps(tmp_path):
    event_pb2 = pytest.importorskip("tensorboard.compat.proto.event_pb2", reason="needs tensorboard's protos")
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2

    device = tmp_path / "tfdbg" / "_tfdbg_device_,job_localhost,replica_0,task_0,device_CPU_0"
    npy = tmp_path / "npy"
    npy.mkdir()
    for k, (node, dtype) in enumerate((("conv1/Conv2D", np.float32), ("conv1/Relu", np.float32),
                                        ("head/MatMul", np.float16))):
        value = RNG.standard_normal((2, 3, 4)).astype(dtype)
        stamp = 1714987110000066 + 40 * k
        proto = tensor_pb2.TensorProto(dtype={np.float32: 1, np.float16: 19}[dtype],
                                       tensor_shape=tensor_shape_pb2.TensorShapeProto(
                                           dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in value.shape]),
                                       tensor_content=value.tobytes())
        event = event_pb2.Event(wall_time=stamp / 1e6, step=0, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(node_name=f"{node}:0:DebugIdentity", tag=f"{node}:0:DebugIdentity",
                                      tensor=proto)]))
        folder = device / node.rsplit("/", 1)[0]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{node.rsplit('/', 1)[1]}_0_DebugIdentity_{stamp}").write_bytes(event.SerializeToString())
        np.save(npy / f"{node.replace('/', '_')}.0.{stamp}.npy", value)
        np.save(npy / f"{node.replace('/', '_')}.1.{stamp}.npy", value * 2)   # a second output, npy only
    (device.parent / "_tfdbg_graph_1").write_bytes(b"\x08\x01")
    target = tmp_path / "target"
    target.mkdir()
    for path in sorted(npy.glob("*.0.*.npy")):
        np.save(target / path.name, np.load(path) * 1.01)
    for path in npy.glob("*.1.*.npy"):
        path.unlink()
    from_tfdbg = compare_dumps(CompareOptions(tmp_path / "tfdbg", target, tmp_path / "a.csv", jobs=1, progress=False))
    from_npy = compare_dumps(CompareOptions(npy, target, tmp_path / "b.csv", jobs=1, progress=False))
    assert from_tfdbg.output.read_text() == from_npy.output.read_text()
    assert from_tfdbg.rows == 3


def test_advisor_run_handed_an_h5_dump_says_what_to_run(tmp_path, capsys):
    from advisor.cli import main

    write_h5(tmp_path / "npu.h5", GPU[:1], first_seq=1, renamed=True, fp16=True)
    assert main(["run", str(tmp_path / "npu.h5"), "-o", str(tmp_path / "out")]) == 2
    message = capsys.readouterr().err
    assert "PyTorch 1.5 .h5 dump" in message and "advisor compare --golden GPU.h5" in message
