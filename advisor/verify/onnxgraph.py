"""The ONNX model the checks run: nodes, float tensors, shapes, weights, and the target's fused groups.

Weights are kept as numpy arrays beside a graph without initializers (the *skeleton*): every emulated
variant of the model (rounded, quantised, with a remedy step) is the skeleton's nodes rewired plus the
weights it reads, fed to ONNX Runtime as inputs. So a 200 MB model is parsed once and never copied
into another protobuf.

A target op fused from several golden ops (``Conv_3,PRelu_4`` in the comparison's GroundTruth) is a
*group*: its inner tensors stay unrounded on the target, its last op's output is what it stores.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..graph.onnx_external import load_external
from ..graph.onnx_file import load_model
from ..tensors.dump_names import safe_name

FLOAT_TYPES = frozenset({1, 10, 11, 16})     # FLOAT, FLOAT16, DOUBLE, BFLOAT16 (onnx.TensorProto)


@dataclass(frozen=True)
class Group:
    """The golden nodes one target op computes, in order; ``name`` is the target op's name."""

    name: str
    index: int | None
    nodes: tuple[str, ...]


class OnnxModel:
    """A loaded ONNX model (``onnx`` and ``numpy_helper`` are imported by the caller's first use)."""

    def __init__(self, proto: Any, path: Path) -> None:
        import onnx
        from onnx import numpy_helper

        self.path = Path(path)
        self.proto = proto
        graph = self.proto.graph
        self.opset = next((o.version for o in self.proto.opset_import if o.domain in ("", "ai.onnx")), 13)
        self.weights: dict[str, np.ndarray] = {i.name: np.asarray(numpy_helper.to_array(i)) for i in graph.initializer}
        self.inputs = [i.name for i in graph.input if i.name not in self.weights]
        self.outputs = [o.name for o in graph.output]
        self.nodes = list(graph.node)
        self.keys = [node.name or node.output[0] for node in self.nodes]
        self.by_key = {key: n for n, key in enumerate(self.keys)}
        self._safe = {safe_name(key): key for key in self.keys}
        self.producer = {out: n for n, node in enumerate(self.nodes) for out in node.output if out}
        self.types, self.shapes, inferred = _value_info(onnx, self.proto)
        # What inference found is kept on the model: extracting a subgraph needs the types of its inputs.
        known = {v.name for v in graph.value_info} | {v.name for v in graph.input} | {v.name for v in graph.output}
        graph.value_info.extend(v for v in inferred if v.name not in known)
        for name, array in self.weights.items():
            self.shapes[name] = tuple(int(d) for d in array.shape)

    @classmethod
    def load(cls, path: Path) -> OnnxModel:
        """The model read as advisor reads every ONNX file: through its file-opening path, external
        weights only from inside the model's folder (graph/onnx_external.py)."""
        import onnx
        model = load_model(onnx, path)
        load_external(list(model.graph.initializer), path)
        return cls(model, path)

    def key_of(self, name: str) -> str | None:
        """The node a golden op name means (the name as written, or in its dump-file form)."""
        if name in self.by_key:
            return name
        return self._safe.get(safe_name(name))

    def is_float(self, tensor: str) -> bool:
        if tensor in self.weights:
            return self.weights[tensor].dtype.kind == "f"
        return self.types.get(tensor) in FLOAT_TYPES

    def input_types(self) -> dict[str, Any]:
        """Graph input -> numpy dtype ONNX Runtime expects."""
        from onnx import helper
        return {i.name: helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
                for i in self.proto.graph.input if i.name in self.inputs}

    def tensor_of(self, op: str, slot: int) -> str | None:
        """The tensor a golden dump ``<op>.<slot>`` holds: a node's output, or a network input."""
        key = self.key_of(op)
        if key is not None:
            outputs = self.nodes[self.by_key[key]].output
            return outputs[slot] if slot < len(outputs) else None
        return next((i for i in self.inputs if safe_name(i) == safe_name(op)), None)


def groups_of(model: OnnxModel, ops: pd.DataFrame) -> list[Group]:
    """Each target op's golden nodes (the comparison's ``golden_ops``), then every node no target op
    names as a group of its own, in model order."""
    groups: list[Group] = []
    taken: set[str] = set()
    for index, row in ops.iterrows():
        text = row.get("golden_ops")
        if not isinstance(text, str) or text in ("", "*"):
            continue
        keys = [k for k in (model.key_of(n.strip()) for n in text.split(",")) if k is not None and k not in taken]
        keys = sorted(dict.fromkeys(keys), key=model.by_key.__getitem__)
        if keys:
            groups.append(Group(str(row["op"]), int(index), tuple(keys)))
            taken.update(keys)
    groups += [Group(key, None, (key,)) for key in model.keys if key not in taken]
    return groups


def group_inputs(model: OnnxModel, group: Group) -> list[str]:
    """The activations a group reads from outside itself, in order of first use (weights excluded)."""
    inner = {out for key in group.nodes for out in model.nodes[model.by_key[key]].output}
    found: list[str] = []
    for key in group.nodes:
        for tensor in model.nodes[model.by_key[key]].input:
            if tensor and tensor not in inner and tensor not in model.weights and tensor not in found:
                if tensor in model.producer and model.nodes[model.producer[tensor]].op_type == "Constant":
                    continue
                found.append(tensor)
    return found


def group_output(model: OnnxModel, group: Group) -> str:
    return model.nodes[model.by_key[group.nodes[-1]]].output[0]


def consumers(model: OnnxModel) -> dict[str, list[tuple[int, int]]]:
    """Tensor -> (node position, input slot) of every read."""
    table: dict[str, list[tuple[int, int]]] = {}
    for n, node in enumerate(model.nodes):
        for slot, tensor in enumerate(node.input):
            if tensor:
                table.setdefault(tensor, []).append((n, slot))
    return table


def _value_info(onnx: Any, proto: Any) -> tuple[dict[str, int], dict[str, tuple[int, ...] | None], list[Any]]:
    """Element type and static shape of every value ONNX shape inference can tell (weights left out of
    the copy it makes: only their shapes matter)."""
    graph = proto.graph
    declared = {i.name for i in graph.input}
    inputs = list(graph.input) + [onnx.helper.make_tensor_value_info(i.name, i.data_type, i.dims)
                                  for i in graph.initializer if i.name not in declared]
    skeleton = onnx.helper.make_model(
        onnx.helper.make_graph(graph.node, graph.name, inputs, graph.output, value_info=graph.value_info),
        opset_imports=proto.opset_import, ir_version=proto.ir_version)
    try:
        inferred = onnx.shape_inference.infer_shapes(skeleton).graph
    except Exception:  # noqa: BLE001 - a model inference cannot follow: the types ORT reports are used instead
        inferred = skeleton.graph
    types: dict[str, int] = {}
    shapes: dict[str, tuple[int, ...] | None] = {}
    for info in _infos(inferred.input, inferred.value_info, inferred.output):
        tensor = info.type.tensor_type
        types[info.name] = tensor.elem_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        shapes[info.name] = tuple(dims) if tensor.HasField("shape") and None not in dims else None
    return types, shapes, list(inferred.value_info)


def _infos(*lists: Iterable[Any]) -> Iterable[Any]:
    for values in lists:
        yield from values
