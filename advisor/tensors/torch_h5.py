"""PyTorch 1.5 on Ascend: the ``.h5`` dumps of ``torch.utils.dumper(use_dump=True, dump_path=...)``.

Layout (facts: ``src/aten/src/ATen/utils/DumpUtils.cpp`` of the public Ascend/pytorch repository,
and msaccucmp's ``pytorch_cmp/hdf5_parser.py`` in the mindstudio-probe wheel, which compares them):

- one group per op and execution: ``/{ir_name}/{seq_id}/input/{argument}`` and ``.../output/{name}``;
  a list argument is a group ``.../input/{argument}/{argument}_{i}``; ``seq_id`` counts every dumped
  op of the run, so it orders the ops;
- a dataset carries the attributes ``Type`` (0 for a tensor; scalars, sizes and options have other
  codes and are not compared), ``DataType`` (1 float32, 2 uint8, 3 int8, 5 int16, 6 int32, 7 int64,
  9 bool, 10 float16, 11 float64), ``FormatType`` (the NPU storage format; the values are written
  after copying to the host), ``DeviceType`` and ``Stride``;
- float16 tensors are stored as float32 (the values are exact): they are turned back into float16.

Each tensor becomes a dump in the ``aten`` naming (advisor/tensors/dump_names.py):
``{ir_name}.{seq_id}.{input|output}.{argument}.npy`` (a list element's argument is ``{name}.{i}``).
The vendor pairs two runs by the k-th execution of each op (after the op map, op_map.py); so does
advisor. h5py is an optional dependency: ``pip install h5py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputFormatError

TENSOR_TYPE = 0
DATA_TYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
              11: "float64"}


@dataclass(frozen=True)
class H5Tensor:
    ir_name: str
    seq_id: int
    io: str                  # input | output
    argument: str            # "self", "weight", a list element "tensors.1"
    values: np.ndarray

    @property
    def file_name(self) -> str:
        return f"{self.ir_name}.{self.seq_id}.{self.io}.{self.argument}.npy"


def h5py_module():
    try:
        import h5py
    except ImportError:
        return None
    return h5py


def read_h5_dump(path: Path) -> Iterator[H5Tensor]:
    """Every tensor of one dump file, in file order (raises InputFormatError naming the file)."""
    h5py = h5py_module()
    if h5py is None:
        raise InputFormatError("is a PyTorch 1.5 .h5 dump: reading it needs h5py (pip install h5py), or extract "
                               "each op with h5copy and save its datasets as .npy", path=path)
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise InputFormatError(f"not a readable HDF5 file ({exc})", path=path) from None
    with handle:
        for ir_name, executions in handle.items():
            if not isinstance(executions, h5py.Group):
                continue
            for seq, group in executions.items():
                if not seq.isdigit() or not isinstance(group, h5py.Group):
                    raise InputFormatError(f"/{ir_name}/{seq} is not a /<op>/<seq_id> group of torch.utils.dumper",
                                           path=path)
                yield from _tensors(h5py, path, ir_name, int(seq), group)


def _tensors(h5py, path: Path, ir_name: str, seq: int, group) -> Iterator[H5Tensor]:
    for io in ("input", "output"):
        if io not in group:
            continue
        for name, item in group[io].items():
            members = item.items() if isinstance(item, h5py.Group) else [(name, item)]
            for member, dataset in members:
                if not isinstance(dataset, h5py.Dataset) or int(dataset.attrs.get("Type", -1)) != TENSOR_TYPE:
                    continue
                argument = name if member == name else f"{name}.{member.rsplit('_', 1)[-1]}"
                yield H5Tensor(ir_name, seq, io, argument, _values(path, dataset))


def _values(path: Path, dataset) -> np.ndarray:
    values = np.asarray(dataset[()])
    code = int(dataset.attrs.get("DataType", 0))
    dtype = DATA_TYPES.get(code)
    if dtype is None:
        raise InputFormatError(f"{dataset.name}: DataType {code} is none torch.utils.dumper writes", path=path)
    if dtype == "bool":
        return values.astype(bool)
    return values.astype(dtype, copy=False)
