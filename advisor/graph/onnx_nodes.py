"""Turning ONNX-shaped node records into ``Node``s: shared by the binary ONNX reader (``onnx`` package)
and the dict-based one (GE's ONNX-text dumps, ONNX as JSON).

ONNX names tensors, not edges: an input is resolved to the node that outputs that tensor. GE's
ONNX dumps name tensors ``op:slot`` with ``op:-1`` for control edges, so for them the reference is
split instead (``ge_style``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.dtypes import normalise_dtype
from advisor.graph.ge_ops import fusion_fields, parse_ref
from advisor.graph.model import Edge, Node, TensorDesc

# onnx.TensorProto.DataType, so that ONNX text/JSON need not import onnx
ELEM_TYPES = {1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING",
              9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
              15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
              20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1"}


def elem_dtype(elem_type: Any) -> str | None:
    """ONNX elem_type (number or enum name) -> normalised dtype; None when unset."""
    if elem_type in (None, 0, "", "UNDEFINED"):
        return None
    name = ELEM_TYPES.get(elem_type) if isinstance(elem_type, int) else str(elem_type)
    return normalise_dtype(name) if name else str(elem_type)


@dataclass
class NodeRecord:
    """One ONNX node as read, before its inputs are resolved to producing nodes."""

    name: str
    op_type: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, Any]
    graph: str = ""
    parent: str | None = None
    subgraphs: tuple[str, ...] = ()
    input_descs: tuple[TensorDesc, ...] = ()
    output_descs: tuple[TensorDesc, ...] = ()
    op_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def assemble(records: list[NodeRecord], *, ge_style: bool,
             value_types: dict[str, TensorDesc] | None = None) -> list[Node]:
    """Resolve inputs to edges and build the nodes. Unnamed nodes take their first output's name."""
    value_types = value_types or {}
    producers: dict[str, tuple[str, int]] = {}
    for position, record in enumerate(records):
        if not record.name:
            record.name = next((o for o in record.outputs if o), f"{record.op_type}_{position}")
        for slot, tensor in enumerate(record.outputs):
            if tensor:
                producers.setdefault(tensor, (record.name, slot))
    nodes = []
    for record in records:
        inputs, controls = [], []
        for tensor in record.inputs:
            if not tensor:
                continue  # an omitted optional input
            if ge_style:
                source, slot = parse_ref(tensor)
                if slot < 0:
                    controls.append(source)
                    continue
            else:
                source, slot = producers.get(tensor, (tensor, 0))
            inputs.append(Edge(source, slot, tensor))
        outputs = tuple(o for o in record.outputs if not (ge_style and o.endswith(":-1")))
        output_descs = record.output_descs or tuple(value_types.get(o, TensorDesc()) for o in outputs)
        input_descs = record.input_descs or tuple(value_types.get(t, TensorDesc()) for t in record.inputs if t)
        nodes.append(Node(
            name=record.name, op_type=record.op_type, inputs=tuple(inputs), control_inputs=tuple(controls),
            outputs=outputs, attributes=record.attributes, input_descs=input_descs, output_descs=output_descs,
            op_id=record.op_id, graph=record.graph, parent=record.parent, subgraphs=record.subgraphs,
            **fusion_fields(record.attributes),
        ))
    return nodes
