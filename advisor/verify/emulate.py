"""The target's numerics emulated on ONNX Runtime's CPU provider, from the float32 ONNX model.

Every tensor the target stores (each target op's output, the network inputs after the input Cast) is
rounded to the storage dtype with an explicit Cast pair (float32 -> float16/bfloat16 -> float32), and
the model runs with graph optimisation off: ONNX Runtime's CPU provider otherwise computes float16
nodes that lack a float16 kernel in float32 and drops the casts between them, so an intermediate
that overflows float16 on the target comes out finite (docs/verify.md). Ops compute in float32,
as cube and vector units accumulate. On top of that:

- weights are rounded to the storage dtype (an op kept in float32 reads them unrounded);
- a fused target op (a group) stores only its last op's output: its inner tensors stay unrounded;
- ReduceMean accumulates in float16: its sum is rounded before the division (ReduceMeanD), so a sum
  beyond 65504 overflows even when each term does not;
- saturation mode: values beyond +-65504 clamp there instead of becoming inf (a Clip before each
  float16 Cast);
- int8 layers (advisor.verify.qdq): weights fake-quantised as the build says, activations through
  QuantizeLinear/DequantizeLinear with the build's ranges, granularity and symmetry;
- an op a remedy keeps in float32 computes and stores unrounded; an op reading its output in the
  storage dtype rounds it first (the Cast a compiler inserts).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import FP16_MAX
from .numerics import Numerics
from .onnxgraph import Group, OnnxModel, consumers
from .qdq import QuantPlan

#: ONNX TensorProto element types of the storage dtypes
_ELEM = {"float16": 10, "bfloat16": 16}
_FLOAT = 1


@dataclass
class Rewrite:
    """An emulated graph under construction: nodes in order, extra weights, names taken."""

    nodes: list[Any] = field(default_factory=list)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    count: int = 0

    def name(self, base: str, what: str) -> str:
        self.count += 1
        return f"{base}__{what}{self.count}"


def round_array(array: np.ndarray, storage: str, saturate: bool = False) -> np.ndarray:
    """A float32 array rounded to the storage dtype and back (round to nearest even, as Cast does)."""
    values = np.asarray(array, dtype=np.float32)
    if storage == "float16":
        if saturate:
            values = np.clip(values, -FP16_MAX, FP16_MAX)
        with np.errstate(over="ignore"):
            return values.astype(np.float16).astype(np.float32)
    if storage == "bfloat16":
        bits = values.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        out = rounded.view(np.float32)
        return np.where(np.isnan(values), values, out).reshape(values.shape)
    return values


class Emulator:
    """Builds and runs emulated variants of one model on fixed inputs (the golden network inputs)."""

    def __init__(self, model: OnnxModel, groups: Sequence[Group], feeds: dict[str, np.ndarray],
                 quant: QuantPlan | None = None) -> None:
        self.model, self.groups, self.feeds = model, list(groups), feeds
        self.quant = quant
        self.group_of = {key: g for g in self.groups for key in g.nodes}
        self.readers = consumers(model)
        self._rounded: dict[tuple[str, str, bool], np.ndarray] = {}
        self._float: dict[str, np.ndarray] | None = None

    # --- running ------------------------------------------------------------------------------

    def float_run(self) -> dict[str, np.ndarray]:
        """The model as it is (float32), every node output: the golden run as ONNX Runtime computes it."""
        if self._float is None:
            self._float = self.run(None)
        return self._float

    def run(self, numerics: Numerics | None, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Every node output (or only ``outputs``) of the model emulated with ``numerics`` (None: as it is)."""
        import onnxruntime as ort
        from onnx import helper

        rewrite = self._rewrite(numerics) if numerics is not None else Rewrite(list(self.model.nodes))
        wanted = list(outputs) if outputs is not None else self._node_outputs()
        weights = {**self.model.weights, **rewrite.weights}
        used = {t for node in rewrite.nodes for t in node.input if t in weights}
        graph = self.model.proto.graph
        inputs = [i for i in graph.input if i.name in self.model.inputs]
        inputs += [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(weights[name].dtype),
                                                 list(weights[name].shape)) for name in sorted(used)]
        outs = [helper.make_tensor_value_info(name, self.model.types.get(name, _FLOAT), None) for name in wanted]
        proto = helper.make_model(helper.make_graph(rewrite.nodes, "emulated", inputs, outs),
                                  opset_imports=self.model.proto.opset_import, ir_version=self.model.proto.ir_version)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = max(1, min(4, os.cpu_count() or 1))
        options.log_severity_level = 3
        session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feeds = {**self.feeds, **{name: np.asarray(weights[name]) for name in used}}
        values = session.run(wanted, feeds)
        return dict(zip(wanted, values, strict=True))

    def _node_outputs(self) -> list[str]:
        return [out for node in self.model.nodes for out in node.output
                if out and out in self.model.types and node.op_type != "Constant"]

    # --- rewriting ----------------------------------------------------------------------------

    def _rewrite(self, numerics: Numerics) -> Rewrite:
        from onnx import NodeProto

        model = self.model
        rewrite = Rewrite()
        kept = {key for g in self.groups if g.name in numerics.keep_fp32 for key in g.nodes}
        reads = _Reads()
        if numerics.rounds:
            for tensor in model.inputs:
                if model.is_float(tensor):
                    reads.inputs[tensor] = self._cast_pair(rewrite, tensor, numerics)
        quantised = self.quant.layers(self.groups, numerics) if self.quant is not None else {}
        for n, original in enumerate(model.nodes):
            key = model.keys[n]
            in_kept = key in kept
            node = NodeProto()
            node.CopyFrom(original)
            for slot, tensor in enumerate(original.input):
                node.input[slot] = self._read(rewrite, tensor, numerics, in_kept, reads)
            if key in quantised:
                self.quant.apply(rewrite, node, original, quantised[key], numerics.quant)
            if (numerics.storage == "float16" and numerics.fp16_accumulation and not in_kept
                    and node.op_type == "ReduceMean"):
                node = self._accumulate(rewrite, node, original, numerics) or node
            rewrite.nodes.append(node)
            self._store(rewrite, node, key, numerics, in_kept, kept, reads)
        return rewrite

    def _read(self, rewrite: Rewrite, tensor: str, numerics: Numerics, in_kept: bool, reads: _Reads) -> str:
        """The name a node reads ``tensor`` under: the rounded copy of a float weight (unless the node is
        kept in float32), the rounded copy of a tensor a kept op stored in float32 (unless the reader is
        kept too), a rounded network input."""
        if not tensor or not numerics.rounds:
            return tensor
        if tensor in self.model.weights:
            array = self.model.weights[tensor]
            if in_kept or array.dtype != np.float32:
                return tensor
            key = (tensor, numerics.storage, numerics.saturate)
            if key not in self._rounded:
                self._rounded[key] = round_array(array, numerics.storage, numerics.saturate)
            name = f"{tensor}__{numerics.storage}{'_sat' if numerics.saturate else ''}"
            rewrite.weights[name] = self._rounded[key]
            return name
        if tensor in reads.narrowed and not in_kept:
            return reads.narrowed[tensor]
        return reads.inputs.get(tensor, tensor)

    def _store(self, rewrite: Rewrite, node: Any, key: str, numerics: Numerics, in_kept: bool,
               kept: set[str], reads: _Reads) -> None:
        """Round what the node's group stores: its outputs read outside the group or by the network."""
        if not numerics.rounds:
            return
        group = self.group_of.get(key)
        for slot, tensor in enumerate(node.output):
            if not tensor or not self.model.is_float(tensor) or not self._stored(tensor, group):
                continue
            if not in_kept:
                raw = rewrite.name(tensor, "raw")
                node.output[slot] = raw
                self._cast_pair(rewrite, raw, numerics, out=tensor)
            elif any(self.model.keys[n] not in kept for n, _ in self.readers.get(tensor, ())):
                reads.narrowed[tensor] = self._cast_pair(rewrite, tensor, numerics)

    def _stored(self, tensor: str, group: Group | None) -> bool:
        if tensor in self.model.outputs or group is None:
            return True
        return any(self.model.keys[n] not in group.nodes for n, _ in self.readers.get(tensor, ()))

    def _cast_pair(self, rewrite: Rewrite, tensor: str, numerics: Numerics, out: str | None = None) -> str:
        """[Clip ->] Cast(storage) -> Cast(float32): the value of ``tensor`` as the target stores it."""
        from onnx import helper

        source = tensor
        if numerics.saturate and numerics.storage == "float16":
            low, high = rewrite.name(tensor, "lo"), rewrite.name(tensor, "hi")
            rewrite.weights[low] = np.array(-FP16_MAX, dtype=np.float32)
            rewrite.weights[high] = np.array(FP16_MAX, dtype=np.float32)
            clipped = rewrite.name(tensor, "sat")
            rewrite.nodes.append(helper.make_node("Clip", [source, low, high], [clipped]))
            source = clipped
        narrow = rewrite.name(tensor, numerics.storage)
        out = out or rewrite.name(tensor, "stored")
        rewrite.nodes.append(helper.make_node("Cast", [source], [narrow], to=_ELEM[numerics.storage]))
        rewrite.nodes.append(helper.make_node("Cast", [narrow], [out], to=_FLOAT))
        return out

    def _accumulate(self, rewrite: Rewrite, node: Any, original: Any, numerics: Numerics) -> Any | None:
        """ReduceMean as the target's ReduceMeanD: the float16 sum (appended to ``rewrite``), then the
        division, returned as the node that takes the ReduceMean's place. None when the reduced element
        count is unknown (the ReduceMean is left as it is)."""
        from onnx import helper

        shape = self.model.shapes.get(original.input[0])
        attrs = {a.name: helper.get_attribute_value(a) for a in original.attribute}
        if len(original.input) >= 2 and original.input[1]:
            if original.input[1] not in self.model.weights:
                return None
            axes = [int(a) for a in self.model.weights[original.input[1]].reshape(-1)]
        else:
            axes = [int(a) for a in attrs.get("axes", [])]
        if shape is None:
            return None
        reduced = [shape[a] for a in axes] if axes else list(shape)
        count = float(np.prod(reduced)) if reduced else 1.0
        total = rewrite.name(original.output[0], "sum")
        keepdims = int(attrs.get("keepdims", 1))
        if self.model.opset >= 13:
            inputs = [node.input[0]]
            if axes:
                inputs.append(rewrite.name(original.output[0], "axes"))
                rewrite.weights[inputs[1]] = np.array(axes, dtype=np.int64)
            rewrite.nodes.append(helper.make_node("ReduceSum", inputs, [total], keepdims=keepdims))
        else:
            rewrite.nodes.append(helper.make_node("ReduceSum", [node.input[0]], [total], keepdims=keepdims,
                                                  **({"axes": axes} if axes else {})))
        rounded = self._cast_pair(rewrite, total, numerics)
        divisor = rewrite.name(original.output[0], "count")
        rewrite.weights[divisor] = np.array(count, dtype=np.float32)
        return helper.make_node("Div", [rounded, divisor], [original.output[0]], name=node.name)


@dataclass
class _Reads:
    """What readers see instead of a tensor: a rounded network input; the rounded copy of a tensor a
    kept op stored in float32 (for readers that are not kept)."""

    inputs: dict[str, str] = field(default_factory=dict)
    narrowed: dict[str, str] = field(default_factory=dict)
