"""Binary ONNX models (``.onnx``) -> ``Graph``, through the ``onnx`` package (an optional dependency).

Initializers are weights, not graph inputs: they are left out of ``Graph.inputs`` and described in
``Graph.initializers`` with value statistics (see ``weights.py``). Control-flow subgraphs (If, Loop,
Scan) are included: their ops carry ``Node.parent`` = the control-flow op.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from advisor.errors import InputFormatError
from advisor.graph.model import Graph, InitializerStats, TensorDesc
from advisor.graph.onnx_external import is_external, load_external
from advisor.graph.onnx_nodes import NodeRecord, assemble, elem_dtype
from advisor.graph.weights import channel_axes, weight_stats
from advisor.inputfiles import read_input

MAX_TENSOR_ATTRIBUTE = 4096  # elements: a larger tensor attribute is kept as {dims, dtype} only
MAX_SHAPE_INFERENCE_BYTES = 256 << 20  # shape inference copies the model: skip it for big ones


def import_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise InputFormatError("reading ONNX models needs the onnx package: pip install onnx") from None
    return onnx


def load_model(onnx: Any, path: Path) -> Any:
    """The model's protobuf, read through advisor's file-opening path; external data not loaded."""
    data = read_input(path, what="model")
    try:
        return onnx.load_model_from_string(data)
    except Exception as exc:  # onnx raises DecodeError, ValueError... depending on the damage
        raise InputFormatError(f"not a readable ONNX model ({type(exc).__name__}: {exc})", path=path) from None


def read_onnx(path: Path) -> Graph:
    onnx = import_onnx()
    warnings: list[str] = []
    model = load_model(onnx, path)
    if not model.ir_version or not model.HasField("graph"):  # protobuf parses much binary junk "successfully"
        raise InputFormatError("binary, but not an ONNX model (no ir_version or graph)", path=path)
    warnings += load_external(list(model.graph.initializer), path)
    graph = model.graph
    reader = _Reader(onnx)
    reader.walk(graph, graph_name=graph.name, parent=None)
    value_types = {value.name: _value_desc(value) for value in _typed_values(onnx, model)}
    nodes = assemble(reader.records, ge_style=False, value_types=value_types)
    initializers = _initializers(onnx, graph, nodes, warnings)
    attributes = {"ir_version": model.ir_version, "producer_name": model.producer_name,
                  "producer_version": model.producer_version,
                  "opset": {op.domain or "ai.onnx": op.version for op in model.opset_import}}
    return Graph(nodes, name=graph.name, format="onnx", source=path,
                 inputs=[v.name for v in graph.input if v.name not in initializers],
                 outputs=[v.name for v in graph.output], initializers=initializers,
                 attributes=attributes, subgraphs=reader.subgraphs, warnings=warnings)


class _Reader:
    def __init__(self, onnx: Any) -> None:
        self.onnx = onnx
        self.records: list[NodeRecord] = []
        self.subgraphs: dict[str, str | None] = {}

    def walk(self, graph: Any, *, graph_name: str, parent: str | None) -> None:
        for node in graph.node:
            record = NodeRecord(name=node.name, op_type=node.op_type, inputs=list(node.input),
                                outputs=list(node.output), attributes={}, graph=graph_name, parent=parent)
            self.records.append(record)
            inner = []
            for attr in node.attribute:
                record.attributes[attr.name] = self.value(attr, inner)
            if not record.name:  # assemble() would name it later; subgraph parents need it now
                record.name = next((o for o in record.outputs if o), f"{node.op_type}_{len(self.records) - 1}")
            for attr_name, sub in inner:
                sub_name = f"{record.name}/{attr_name}"
                self.subgraphs[sub_name] = record.name
                record.subgraphs += (sub_name,)
                self.walk(sub, graph_name=sub_name, parent=record.name)

    def value(self, attr: Any, inner: list) -> Any:
        """An AttributeProto -> plain Python; subgraphs are queued in ``inner`` and named."""
        onnx = self.onnx
        kind = attr.type
        A = onnx.AttributeProto
        if kind == A.GRAPH:
            inner.append((attr.name, attr.g))
            return {"graph": attr.g.name}
        if kind == A.GRAPHS:
            inner.extend((f"{attr.name}[{i}]", g) for i, g in enumerate(attr.graphs))
            return [{"graph": g.name} for g in attr.graphs]
        if kind == A.TENSOR:
            return self.tensor(attr.t)
        if kind == A.TENSORS:
            return [self.tensor(t) for t in attr.tensors]
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if isinstance(value, list):
            return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        if isinstance(value, int | float | str):
            return value
        return str(value)  # sparse tensors, type protos: rare, kept readable

    def tensor(self, tensor: Any) -> Any:
        dims = list(tensor.dims)
        if int(np.prod(dims, dtype=np.int64)) <= MAX_TENSOR_ATTRIBUTE and not is_external(tensor):
            try:
                return self.onnx.numpy_helper.to_array(tensor).tolist()
            except Exception:  # external or malformed data: describe it instead
                pass
        return {"dims": dims, "dtype": elem_dtype(tensor.data_type)}


def _typed_values(onnx: Any, model: Any) -> list:
    """Graph inputs, outputs and value_info; with ONNX shape inference when the file has no
    intermediate types (exporters often omit them), so every op gets its output dtype and shape."""
    graph = model.graph
    values = [*graph.input, *graph.output, *graph.value_info]
    if not graph.value_info and model.ByteSize() < MAX_SHAPE_INFERENCE_BYTES:
        try:
            values += list(onnx.shape_inference.infer_shapes(model).graph.value_info)
        except Exception:  # custom domains, invalid models: the types are a bonus, not a requirement
            pass
    return values


def _value_desc(value: Any) -> TensorDesc:
    if not value.type.HasField("tensor_type"):
        return TensorDesc()
    tensor = value.type.tensor_type
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim)
    return TensorDesc(dtype=elem_dtype(tensor.elem_type), shape=shape)


def _initializers(onnx: Any, graph: Any, nodes: list, warnings: list[str]) -> dict[str, InitializerStats]:
    axes = channel_axes(nodes)
    stats = {}
    failed = []
    for init in graph.initializer:
        try:
            if is_external(init):        # its file is missing: to_array would look in the current folder
                raise ValueError("external data not loaded")
            array = onnx.numpy_helper.to_array(init)
        except Exception:  # missing external file, truncated raw_data
            failed.append(init.name)
            stats[init.name] = InitializerStats(name=init.name, shape=tuple(init.dims),
                                                dtype=elem_dtype(init.data_type) or "")
            continue
        stats[init.name] = weight_stats(init.name, array, axes.get(init.name))
    if failed:
        warnings.append(f"{len(failed)} initializers could not be decoded, e.g. {failed[0]!r}")
    return stats


def read_onnx_weights(path: Path, names: set[str]) -> dict[str, np.ndarray]:
    """The arrays of the initializers named ``names`` (those present and decodable). The graph keeps
    only statistics of its weights; evidence that re-quantises a layer needs the values."""
    onnx = import_onnx()
    model = load_model(onnx, path)
    wanted = [init for init in model.graph.initializer if init.name in names]
    load_external(wanted, path)                   # weights whose file is missing stay undecodable below
    arrays = {}
    for init in wanted:
        if is_external(init):
            continue
        try:
            arrays[init.name] = onnx.numpy_helper.to_array(init)
        except Exception:
            continue
    return arrays
