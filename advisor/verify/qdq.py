"""int8 layers in the emulated model: weights fake-quantised in numpy as the build says
(advisor.evidence.quant, the same arithmetic the quantisation evidence uses), activations through
QuantizeLinear -> DequantizeLinear with the build's range, granularity and symmetry.

Which layers: the ones the build config lists (by target or golden name; a listed op of a type without
weights, a Softmax, has its activation input quantised), else every target op whose main node is of a
type knowledge/ops/int8_quantisable.yaml lists; minus its float layers and the ops a remedy keeps in float.
An activation's range is the build's calibrated range for that input (``<op>:input:<n>``), else the
build's calibration applied to the golden activation (the float run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..catalogs import load_catalog
from ..evidence.quant import calibrated_range, fake_quantize
from ..evidence.quant_config import QuantSettings
from .numerics import Numerics
from .onnxgraph import Group, OnnxModel, group_inputs

_INT8 = 3      # onnx TensorProto.INT8


@dataclass(frozen=True)
class Layer:
    """A quantised target op: its group and the node that computes in int8."""

    group: Group
    node: str


class QuantPlan:
    """Where the int8 layers of a model are, and how to emulate them under some settings.

    ``activations``: the float run's tensors (tensor -> value), asked for only when a range must be
    calibrated on the data; ``axes``: each weight's output-channel axis (advisor.graph.weights)."""

    def __init__(self, model: OnnxModel, axes: dict[str, int], activations: Callable[[], dict[str, np.ndarray]],
                 percentile: float) -> None:
        """``percentile``: the one assumed when the build asks for percentile calibration without a
        value (the ``quant.percentile`` knob)."""
        self.model, self.axes, self.activations, self.percentile = model, axes, activations, percentile
        self.quantisable = set(load_catalog("int8_quantisable"))
        self._weights: dict[tuple[str, Any], np.ndarray] = {}

    def layers(self, groups: Sequence[Group], numerics: Numerics) -> dict[str, Layer]:
        """Main node key -> layer, for the int8 layers of ``numerics`` (none in a float build)."""
        quant = numerics.quant
        if quant is None or not quant.quantized:
            return {}
        listed, floating = set(quant.layers), set(quant.float_layers) | numerics.keep_float
        found: dict[str, Layer] = {}
        for group in groups:
            names = {group.name, *group.nodes}
            if (listed and not names & listed) or names & floating:
                continue
            main = next((k for k in group.nodes
                         if self.model.nodes[self.model.by_key[k]].op_type.lower() in self.quantisable), None)
            if main is None and listed:      # a listed op of another type (a Softmax): its activation input
                main = next((k for k in group.nodes if k in listed), group.nodes[0])
            if main is not None:
                found[main] = Layer(group, main)
        return found

    def apply(self, rewrite: Any, node: Any, original: Any, layer: Layer, quant: QuantSettings) -> None:
        """Rewire ``node`` (a copy of ``original``) to read int8 weights and quantised activations."""
        external = group_inputs(self.model, layer.group)
        matmul = original.op_type.lower() in load_catalog("matmul_like")
        for slot, tensor in enumerate(original.input):
            if not tensor:
                continue
            if tensor in self.model.weights:
                array = self.model.weights[tensor]
                if array.dtype.kind == "f" and array.ndim >= 2:
                    node.input[slot] = self._weight(rewrite, tensor, quant)
            elif self.model.is_float(tensor) and not quant.weight_only and (slot == 0 or (slot == 1 and matmul)):
                position = external.index(tensor) if tensor in external else slot
                low, high = self._range(tensor, quant, f"{layer.group.name}:input:{position}")
                node.input[slot] = _qdq(rewrite, node.input[slot], low, high,
                                        quant.activation_symmetric is not False)

    def _weight(self, rewrite: Any, tensor: str, quant: QuantSettings) -> str:
        scheme = quant.weight_scheme()
        key = (tensor, scheme)
        if key not in self._weights:
            array = self.model.weights[tensor]
            self._weights[key] = fake_quantize(array, scheme, self.axes.get(tensor)).astype(np.float32)
        name = f"{tensor}__int8_{'pc' if scheme.per_channel else 'pt'}{'' if scheme.symmetric else '_asym'}"
        rewrite.weights[name] = self._weights[key]
        return name

    def _range(self, tensor: str, quant: QuantSettings, key: str) -> tuple[float, float]:
        scheme = quant.activation_scheme(key, self.percentile)
        if scheme.calibration == "range" and scheme.high is not None:
            return calibrated_range(np.zeros(1), scheme)
        values = self.activations().get(tensor)
        if values is None:
            return calibrated_range(np.zeros(1), scheme)
        return calibrated_range(np.asarray(values, dtype=np.float64).reshape(-1), scheme)


def _qdq(rewrite: Any, tensor: str, low: float, high: float, symmetric: bool) -> str:
    """QuantizeLinear -> DequantizeLinear of ``tensor`` (per tensor), as advisor.evidence.quant codes it."""
    from onnx import helper

    if symmetric:
        scale, zero = max(abs(low), abs(high), 1e-30) / 127.0, 0
    else:
        low, high = min(low, 0.0), max(high, 0.0)
        scale = max(high - low, 1e-30) / 255.0
        zero = int(np.round(-low / scale) - 128)
    scale_name, zero_name = rewrite.name(tensor, "scale"), rewrite.name(tensor, "zero")
    rewrite.weights[scale_name] = np.array(scale, dtype=np.float32)
    rewrite.weights[zero_name] = np.array(zero, dtype=np.int8)
    codes, out = rewrite.name(tensor, "int8"), rewrite.name(tensor, "dq")
    rewrite.nodes.append(helper.make_node("QuantizeLinear", [tensor, scale_name, zero_name], [codes]))
    rewrite.nodes.append(helper.make_node("DequantizeLinear", [codes, scale_name, zero_name], [out]))
    return out
