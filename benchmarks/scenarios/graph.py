"""A traced network as the golden side sees it: ops in execution order with ONNX-style names.

``trace`` runs ``torch.fx`` on a module and keeps one :class:`GoldenOp` per tensor-producing node,
named ``<OnnxType>_<k>`` with one running counter (``Conv_0``, ``PRelu_1``, ``MaxPool_2``...), the
names an ONNX export gives and msaccucmp shows in ``GroundTruth``. Parameters read with
``get_attr`` are constants, not ops. Every op has one output tensor, named after the op.

``GoldenOp.evaluate`` runs a node on given argument values, so the golden run and the emulated
target run (:mod:`emulation`) execute exactly the same code.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn

_MODULE_TYPES: dict[type, str] = {
    nn.Conv2d: "Conv", nn.PReLU: "PRelu", nn.MaxPool2d: "MaxPool", nn.BatchNorm2d: "BatchNormalization",
    nn.Linear: "Gemm", nn.Softmax: "Softmax", nn.Embedding: "Gather", nn.ReLU: "Relu",
}
_FUNCTION_TYPES: dict[Callable, str] = {
    F.pad: "Pad", F.relu: "Relu", torch.relu: "Relu", F.max_pool2d: "MaxPool", torch.sigmoid: "Sigmoid",
    torch.softmax: "Softmax", F.softmax: "Softmax", operator.add: "Add", operator.sub: "Sub",
    operator.mul: "Mul", operator.truediv: "Div", operator.matmul: "MatMul", torch.matmul: "MatMul",
    torch.erf: "Erf", torch.sqrt: "Sqrt", torch.exp: "Exp", torch.flatten: "Flatten",
}
_METHOD_TYPES: dict[str, str] = {
    "permute": "Transpose", "reshape": "Reshape", "view": "Reshape", "mean": "ReduceMean", "pow": "Pow",
    "sqrt": "Sqrt", "flatten": "Flatten", "softmax": "Softmax", "exp": "Exp",
}


@dataclass
class GoldenOp:
    """One op of the golden graph."""

    name: str                       # "Conv_3"
    op_type: str                    # ONNX op type
    node: fx.Node
    inputs: list[str]               # tensors consumed (op names or graph input names), in arg order
    module: nn.Module | None = None

    def evaluate(self, values: dict[str, torch.Tensor], module: nn.Module | None = None,
                 constants: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Run the node with tensor arguments taken from ``values`` (by fx node name).

        ``module`` replaces the traced submodule (the emulator passes a copy with rounded weights);
        ``constants`` replaces ``get_attr`` parameters the same way.
        """
        def lookup(node: fx.Node) -> torch.Tensor:
            if node.op == "get_attr":
                return (constants or {}).get(node.target, values.get(node.name))
            return values[node.name]

        args = fx.node.map_arg(self.node.args, lookup)
        kwargs = fx.node.map_arg(self.node.kwargs, lookup)
        if self.node.op == "call_module":
            return (module or self.module)(*args, **kwargs)
        if self.node.op == "call_function":
            return self.node.target(*args, **kwargs)
        return getattr(args[0], self.node.target)(*args[1:], **kwargs)


@dataclass
class GoldenGraph:
    """The traced network: graph inputs, ops in execution order, network outputs."""

    module: fx.GraphModule
    inputs: list[str]                       # graph input names, e.g. ["images"]
    ops: list[GoldenOp]
    outputs: list[str]                      # op names whose tensors are the network outputs
    node_to_tensor: dict[str, str] = field(default_factory=dict)   # fx node name -> tensor name
    constants: dict[str, torch.Tensor] = field(default_factory=dict)  # get_attr target -> value

    def op(self, name: str) -> GoldenOp:
        return next(op for op in self.ops if op.name == name)

    def consumers(self, tensor: str) -> list[GoldenOp]:
        return [op for op in self.ops if tensor in op.inputs]

    def ops_of_type(self, op_type: str) -> list[GoldenOp]:
        return [op for op in self.ops if op.op_type == op_type]


def _op_type(node: fx.Node, module: fx.GraphModule) -> str:
    if node.op == "call_module":
        submodule = module.get_submodule(node.target)
        for cls, name in _MODULE_TYPES.items():
            if isinstance(submodule, cls):
                return name
        raise TypeError(f"no ONNX type for module {type(submodule).__name__} ({node.target})")
    if node.op == "call_function":
        if node.target in _FUNCTION_TYPES:
            return _FUNCTION_TYPES[node.target]
        raise TypeError(f"no ONNX type for function {node.target}")
    if node.target in _METHOD_TYPES:
        return _METHOD_TYPES[node.target]
    raise TypeError(f"no ONNX type for tensor method .{node.target}()")


def trace(module: nn.Module, input_names: list[str]) -> GoldenGraph:
    """Trace ``module`` into a :class:`GoldenGraph` whose inputs are called ``input_names``."""
    traced = fx.symbolic_trace(module)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(input_names):
        raise ValueError(f"module takes {len(placeholders)} inputs, {len(input_names)} names given")
    node_to_tensor = {p.name: name for p, name in zip(placeholders, input_names, strict=True)}
    ops: list[GoldenOp] = []
    constants: dict[str, torch.Tensor] = {}
    outputs: list[str] = []
    for node in traced.graph.nodes:
        if node.op == "get_attr":
            constants[node.target] = _fetch_attr(traced, node.target)
        elif node.op in ("call_module", "call_function", "call_method"):
            op_type = _op_type(node, traced)
            name = f"{op_type}_{len(ops)}"
            node_to_tensor[node.name] = name
            tensor_args = [a for a in node.all_input_nodes if a.op != "get_attr"]
            module_ref = traced.get_submodule(node.target) if node.op == "call_module" else None
            ops.append(GoldenOp(name, op_type, node, [node_to_tensor[a.name] for a in tensor_args],
                                module_ref))
        elif node.op == "output":
            result = node.args[0]
            flat = result if isinstance(result, (tuple, list)) else [result]
            outputs = [node_to_tensor[n.name] for n in flat]
    return GoldenGraph(traced, list(input_names), ops, outputs, node_to_tensor, constants)


def _fetch_attr(module: nn.Module, target: str) -> torch.Tensor:
    value = module
    for part in target.split("."):
        value = getattr(value, part)
    return value.detach()


def run_golden(graph: GoldenGraph, feeds: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Float32 reference run: every tensor (graph inputs and op outputs) by tensor name."""
    values: dict[str, torch.Tensor] = {}
    by_node: dict[str, torch.Tensor] = {}
    for node_name, tensor in graph.node_to_tensor.items():
        if tensor in feeds:
            by_node[node_name] = feeds[tensor]
            values[tensor] = feeds[tensor]
    with torch.no_grad():
        for op in graph.ops:
            out = op.evaluate(by_node, constants=graph.constants)
            by_node[op.node.name] = out
            values[op.name] = out
    return values
