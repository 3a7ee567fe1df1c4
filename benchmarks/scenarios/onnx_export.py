"""Export a traced golden graph to ONNX with the same node names the result CSV uses.

The exporter is ours (not ``torch.onnx``) so that every ONNX node is exactly one golden op, named
as in ``GroundTruth`` (``Conv_0``, ``Pow_4``...), and its output tensor carries the same name.
Parameters become initializers named after their module path. Opset 17.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.fx as fx

from benchmarks.scenarios.graph import GoldenGraph, GoldenOp

OPSET = 17


def export_onnx(graph: GoldenGraph, golden: dict[str, torch.Tensor], path: Path, name: str) -> Path:
    """Write ``path``; raises ImportError when the ``onnx`` package is missing."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    initializers: dict[str, np.ndarray] = {}
    nodes = []

    def constant(key: str, value) -> str:
        array = np.asarray(value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        initializers.setdefault(key, array)
        return key

    def tensor_of(arg, op: GoldenOp, slot: int) -> str:
        if isinstance(arg, fx.Node):
            if arg.op == "get_attr":
                return constant(arg.target, graph.constants[arg.target])
            return graph.node_to_tensor[arg.name]
        return constant(f"{op.name}_const_{slot}", np.asarray(arg, dtype=np.float32))

    for op in graph.ops:
        inputs, attrs = _lower(op, golden, tensor_of, constant)
        nodes.append(helper.make_node(op.op_type, inputs, [op.name], name=op.name, **attrs))

    def value_info(tensor: str) -> onnx.ValueInfoProto:
        value = golden[tensor]
        elem = TensorProto.INT64 if value.dtype == torch.int64 else TensorProto.FLOAT
        return helper.make_tensor_value_info(tensor, elem, list(value.shape))

    model_graph = helper.make_graph(
        nodes, name, [value_info(t) for t in graph.inputs], [value_info(t) for t in graph.outputs],
        [numpy_helper.from_array(a, k) for k, a in initializers.items()])
    model = helper.make_model(model_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="advisor-scenarios")
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path


def _pair(value) -> list[int]:
    return list(value) if isinstance(value, (tuple, list)) else [value, value]


def _lower(op: GoldenOp, golden: dict[str, torch.Tensor], tensor_of, constant) -> tuple[list[str], dict]:
    """ONNX inputs and attributes of one golden op."""
    node, module, kind = op.node, op.module, op.op_type
    args = list(node.args)
    x = tensor_of(args[0], op, 0) if args else None
    prefix = str(node.target) if node.op == "call_module" else op.name
    if kind == "Conv":
        return [x, constant(f"{prefix}.weight", module.weight), constant(f"{prefix}.bias", module.bias)], {
            "kernel_shape": list(module.kernel_size), "strides": list(module.stride),
            "pads": [*module.padding, *module.padding], "dilations": list(module.dilation),
            "group": module.groups}
    if kind == "PRelu":
        rank = golden[op.inputs[0]].dim()
        slope = module.weight.detach().reshape(-1, *([1] * (rank - 2)))
        return [x, constant(f"{prefix}.weight", slope)], {}
    if kind == "MaxPool":
        if module is not None:
            kernel, stride, ceil = module.kernel_size, module.stride, module.ceil_mode
        else:
            kw = node.kwargs
            kernel = args[1] if len(args) > 1 else kw["kernel_size"]
            stride = (args[2] if len(args) > 2 else kw.get("stride")) or kernel
            ceil = bool(args[4] if len(args) > 4 else kw.get("ceil_mode", False))
        return [x], {"kernel_shape": _pair(kernel), "strides": _pair(stride), "ceil_mode": int(ceil)}
    if kind == "BatchNormalization":
        return [x, *(constant(f"{prefix}.{k}", getattr(module, k))
                     for k in ("weight", "bias", "running_mean", "running_var"))], {"epsilon": module.eps}
    if kind == "Gemm":
        return [x, constant(f"{prefix}.weight", module.weight), constant(f"{prefix}.bias", module.bias)], {
            "transB": 1}
    if kind == "Softmax":
        axis = module.dim if module is not None else node.kwargs.get("dim", args[1] if len(args) > 1 else -1)
        return [x], {"axis": axis}
    if kind == "Gather":
        return [constant(f"{prefix}.weight", module.weight), x], {"axis": 0}
    if kind == "Pad":
        left, right, top, bottom = args[1]
        pads = np.array([0, 0, top, left, 0, 0, bottom, right], dtype=np.int64)
        return [x, constant(f"{op.name}_pads", pads)], {"mode": "constant"}
    if kind in ("Add", "Sub", "Mul", "Div", "MatMul", "Pow"):
        return [x, tensor_of(args[1], op, 1)], {}
    if kind == "ReduceMean":
        dim = args[1] if len(args) > 1 else node.kwargs["dim"]
        return [x], {"axes": [dim] if isinstance(dim, int) else list(dim),
                     "keepdims": int(node.kwargs.get("keepdim", False))}
    if kind == "Transpose":
        return [x], {"perm": list(args[1:])}
    if kind == "Reshape":
        shape = args[1:] if not isinstance(args[1], (tuple, list)) else args[1]
        return [x, constant(f"{op.name}_shape", np.array(shape, dtype=np.int64))], {}
    if kind == "Flatten":
        return [x], {"axis": args[1] if len(args) > 1 else 1}
    if kind in ("Relu", "Sigmoid", "Erf", "Sqrt", "Exp"):
        return [x], {}
    raise NotImplementedError(f"no ONNX lowering for {kind} ({op.name})")

