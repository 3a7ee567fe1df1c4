"""Dump file names: what each naming scheme says about the tensor a file holds (docs/formats.md).

Four schemes, recognised from the name alone (``.npy`` files; raw device dumps, PyTorch 1.5 ``.h5``
dumps and tfdbg folders are first extracted into these namings by advisor/tensors/staging.py):

==========  ======================================================================================
``npu``     Ascend dump converted to numpy:
            ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}.{input|output}.{n}.npy``
``golden``  TF-style golden npy: ``{op_name}.{output_index}.{timestamp}.npy``
``msprobe`` msprobe / ptdbg tensors: ``{api_type}.{api}.{count}.{forward|backward}.{input|output}.{n}.npy``
            and the cell form ``Cell.{path}.{Class}.forward.{count}.{input|output}.{n}.npy``;
            ``n`` may be ``1.0`` (an element of a list argument) or a keyword name
``aten``    PyTorch 1.5 dumper tensors (torch_h5.py): ``{ir_name}.{seq_id}.{input|output}.{argument}.npy``;
            ``argument`` is the ATen argument name (``self``, ``weight``, ``tensors.1``)
==========  ======================================================================================

In the first two, ``.``, ``/``, ``\\`` and spaces of op names were replaced by ``_`` when the file
was written, so the op name in a file name is already the "safe" form; :func:`safe_name` makes
names from a graph or a comparison comparable with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAMINGS: tuple[str, ...] = ("npu", "golden", "msprobe", "aten")

_NPU = re.compile(r"^(?P<op_type>[^.]+)\.(?P<op>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d+)"
                  r"\.(?P<io>input|output)\.(?P<slot>\d+)\.npy$")
_MSPROBE = re.compile(r"^(?P<op>.+?\.(?:forward|backward)(?:\.\d+)?)\.(?P<io>input|output)"
                      r"(?:\.(?P<slot>[A-Za-z0-9_.]+))?\.npy$")
_ATEN = re.compile(r"^(?P<ir>[A-Za-z_][A-Za-z0-9_]*)\.(?P<seq>\d+)\.(?P<io>input|output)"
                   r"\.(?P<slot>[A-Za-z0-9_.]+)\.npy$")
_GOLDEN = re.compile(r"^(?P<op>.+)\.(?P<slot>\d+)\.(?P<ts>\d+)\.npy$")
_UNSAFE = re.compile(r"[./\\ ]")


@dataclass(frozen=True)
class DumpName:
    """What a dump file name says about its tensor."""

    naming: str                  # "npu" | "golden" | "msprobe" | "aten"
    op: str                      # op name as written in the file name
    io: str                      # "input" | "output" (golden files hold outputs)
    slot: str                    # "0", "1"... (msprobe: also "1.0" or a keyword name)
    op_type: str | None = None   # npu: the op type; msprobe: the API / class name
    timestamp: int | None = None # aten: the seq id (execution order)
    task_id: int | None = None

    @property
    def tensor_key(self) -> tuple[str, str, str]:
        """(op, io, slot): the same tensor of the same op has the same key in every run."""
        return (self.op, self.io, self.slot)


def parse_dump_name(name: str) -> DumpName | None:
    """The meaning of a dump file name, or None when it follows none of the schemes."""
    match = _NPU.match(name)
    if match:
        return DumpName("npu", match["op"], match["io"], match["slot"], op_type=match["op_type"],
                        timestamp=int(match["ts"]), task_id=int(match["task"]))
    match = _MSPROBE.match(name)
    if match:
        return DumpName("msprobe", match["op"], match["io"], match["slot"] or "0",
                        op_type=_msprobe_api(match["op"]))
    match = _ATEN.match(name)
    if match:
        return DumpName("aten", f"{match['ir']}.{match['seq']}", match["io"], match["slot"], op_type=match["ir"],
                        timestamp=int(match["seq"]))
    match = _GOLDEN.match(name)
    if match:
        return DumpName("golden", match["op"], "output", match["slot"], timestamp=int(match["ts"]))
    return None


def _msprobe_api(op: str) -> str | None:
    """``Functional.linear.0.forward`` -> ``linear``; ``Cell.layer1.Conv2d.forward.0`` -> ``Conv2d``."""
    parts = op.split(".")
    direction = next((i for i, p in enumerate(parts) if p in ("forward", "backward")), None)
    if direction is None or direction < 2:
        return None
    if parts[0] == "Cell":
        return parts[direction - 1]
    return parts[direction - 2] if parts[direction - 1].isdigit() else parts[direction - 1]


def safe_name(op_name: str) -> str:
    """An op name as it appears in npu and golden dump file names."""
    return _UNSAFE.sub("_", op_name)
