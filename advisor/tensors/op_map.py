"""Which golden op and argument a target op's tensor stands for when the two runs name them differently.

PyTorch 1.5 on Ascend renames ops and arguments when a network moves from the GPU
(``CudnnConvolutionBackward`` -> ``NpuConvolutionBackward``, ``self`` -> ``input``);
``torch.utils.get_op_map()`` returns the two maps, ``(ir_map, param_map)``. ``advisor compare
--op-map FILE`` reads them in either form (JSON or YAML):

- as ``get_op_map`` returns them, saved with ``json.dump(torch.utils.get_op_map(), f)``: a list of
  the two dicts, or ``{"ir_map": {...}, "param_map": {...}}``. Both maps list each pair in both
  directions; the entry of the target's name is used;
- advisor's own form: ``{"ops": {TARGET_OP: GOLDEN_OP}, "arguments": {TARGET_OP: {TARGET_ARG: GOLDEN_ARG}}}``.

An op name here is an op *type* (the IR name of an ``aten`` dump, the API of an msprobe dump, the
op name of an Ascend or TF dump). Tensors pair by a key: the golden op name, the k-th execution of
that op (``aten`` dumps: the vendor's rule, since the two runs number their ops differently), the
direction and the argument or slot.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFormatError
from ..yamlfile import load_yaml
from .dump_names import DumpName


@dataclass(frozen=True)
class OpMap:
    ops: dict[str, str] = field(default_factory=dict)                    # target op -> golden op
    arguments: dict[str, dict[str, str]] = field(default_factory=dict)   # target op -> target arg -> golden arg

    def op(self, name: str) -> str:
        return self.ops.get(name, name)

    def argument(self, op: str, name: str) -> str:
        head, _, rest = name.partition(".")
        mapped = self.arguments.get(op, {}).get(head, head)
        return f"{mapped}.{rest}" if rest else mapped


def load_op_map(path: Path) -> OpMap:
    data = load_yaml(path, InputFormatError)
    if isinstance(data, list) and len(data) == 2:
        data = {"ir_map": data[0], "param_map": data[1]}
    if not isinstance(data, dict):
        raise InputFormatError("an op map is get_op_map's (ir_map, param_map) or {ops: ..., arguments: ...}", path=path)
    ops = data.get("ops", data.get("ir_map", {}))
    arguments = data.get("arguments", data.get("param_map", {}))
    if not _strings(ops):
        raise InputFormatError("op names must map to op names (text to text)", path=path, field="ops")
    if not isinstance(arguments, dict) or not all(isinstance(v, dict) and _strings(v) for v in arguments.values()):
        raise InputFormatError("each op's arguments must map names to names", path=path, field="arguments")
    return OpMap({str(k): str(v) for k, v in ops.items()},
                 {str(op): {str(k): str(v) for k, v in names.items()} for op, names in arguments.items()})


def _strings(mapping: object) -> bool:
    return isinstance(mapping, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())


def pairing_keys(names: list[DumpName], op_map: OpMap | None) -> list[tuple]:
    """The key each dump pairs by, in the order given (the dump order). ``op_map`` for the target
    side (its names become the golden ones), None for the golden side."""
    op_map = op_map or OpMap()
    seen: dict[str, dict[str, int]] = defaultdict(dict)     # golden op type -> own op -> occurrence
    keys = []
    for name in names:
        if name.naming == "aten":
            kind = op_map.op(name.op_type or name.op)
            occurrence = seen[kind].setdefault(name.op, len(seen[kind]))
            keys.append((kind, occurrence, name.io, op_map.argument(name.op_type or "", name.slot)))
        elif name.naming == "msprobe" and name.op_type and op_map.ops:
            parts = name.op.split(".")
            parts = [op_map.op(p) if p == name.op_type else p for p in parts]
            keys.append((".".join(parts), name.io, op_map.argument(name.op_type, name.slot)))
        else:
            keys.append((op_map.op(name.op), name.io, op_map.argument(name.op, name.slot)))
    return keys
