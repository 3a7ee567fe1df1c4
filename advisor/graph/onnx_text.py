"""ONNX models held as plain dicts -> ``Graph``: GE's ONNX-text dumps (``ge_onnx_*.pbtxt``, parsed by
``protobuf_text``) and ONNX models or graphs saved as JSON (``json_format``). No ``onnx`` import.

GE's ONNX form differs from ONNX proper in three ways handled here: op types are ``ge:Conv2D``;
tensor descriptors are flattened into attributes (``output_desc_dtype:0``, ``input_desc_shape:1``...);
and each subgraph is a pseudo node of type ``subgraph`` whose ``graph`` attribute holds it. The
pseudo node is not an op: its ops are added with ``Node.graph`` = the subgraph and ``Node.parent`` =
the op calling it, found by GE's naming (``<subgraph>_PartitionedCall_<n>``), since the ONNX form
drops ``subgraph_name``.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

from advisor.graph.ge_ops import dtype_name, subgraph_links
from advisor.graph.model import Graph, InitializerStats, TensorDesc
from advisor.graph.onnx_nodes import ELEM_TYPES, NodeRecord, assemble, elem_dtype
from advisor.graph.protobuf_text import many, one

_ATTR_TYPES = {1: "FLOAT", 2: "INT", 3: "STRING", 4: "TENSOR", 5: "GRAPH", 6: "FLOATS", 7: "INTS", 8: "STRINGS",
               9: "TENSORS", 10: "GRAPHS", 11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS", 13: "TYPE_PROTO",
               14: "TYPE_PROTOS"}
_TYPE_FIELD = {"FLOAT": "f", "INT": "i", "STRING": "s", "TENSOR": "t", "GRAPH": "g", "FLOATS": "floats",
               "INTS": "ints", "STRINGS": "strings", "TENSORS": "tensors", "GRAPHS": "graphs",
               "SPARSE_TENSOR": "sparse_tensor", "SPARSE_TENSORS": "sparse_tensors", "TYPE_PROTO": "tp",
               "TYPE_PROTOS": "type_protos"}
_DESC_KEY = re.compile(r"(input|output)_desc_(dtype|shape|layout|origin_dtype|origin_layout|origin_shape):(\d+)$")
_CONTROL_FLOW = ("PartitionedCall", "StatefulPartitionedCall", "If", "Case", "While", "For")


def snake_keys(value: Any) -> Any:
    """JSON from ``json_format`` uses lowerCamelCase field names by default: opType -> op_type."""
    if isinstance(value, dict):
        return {_snake(k): snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower() if key[:1].islower() else key


def build_graph(document: dict[str, Any], *, source: Path, format: str, from_json: bool = False) -> Graph:
    """A ModelProto (or a bare GraphProto) as a dict -> Graph."""
    graph = one(document.get("graph")) if "graph" in document else document
    if not isinstance(graph, dict):
        raise ValueError("'graph' is not a message")
    ge_style = one(document.get("producer_name")) == "GE" or any(
        str(one(n.get("op_type"), "")).startswith("ge:") for n in many(graph.get("node")))
    reader = _Reader(from_json=from_json, ge_style=ge_style)
    reader.walk(graph, graph_name=str(one(graph.get("name"), "")), parent=None)
    reader.attach_ge_subgraphs()
    initializers = {}
    for init in many(graph.get("initializer")):
        name = str(one(init.get("name"), ""))
        initializers[name] = InitializerStats(name=name, shape=tuple(int(d) for d in many(init.get("dims"))),
                                              dtype=elem_dtype(one(init.get("data_type"))) or "")
    inputs = [str(one(v.get("name"), "")) for v in many(graph.get("input"))]
    attributes = {k: one(document[k]) for k in ("ir_version", "producer_name", "producer_version")
                  if k in document}
    outputs = [str(one(v.get("name"), "")) for v in many(graph.get("output"))]
    nodes = assemble(reader.records, ge_style=ge_style, value_types=reader.value_types)
    if ge_style:  # GE's ONNX dumps list no graph inputs/outputs: its Data and NetOutput ops are them
        root = [n for n in nodes if n.parent is None and n.graph == str(one(graph.get("name"), ""))]
        inputs = inputs or [f"{n.name}:0" for n in root if n.op_type in ("Data", "RefData")]
        outputs = outputs or [e.tensor for n in root if n.op_type == "NetOutput" for e in n.inputs]
    return Graph(nodes, links=subgraph_links(nodes) if ge_style else (),
                 name=str(one(graph.get("name"), "")), format=format, source=source,
                 inputs=[i for i in inputs if i not in initializers], outputs=outputs,
                 initializers=initializers, attributes=attributes, subgraphs=reader.subgraphs)


class _Reader:
    def __init__(self, *, from_json: bool, ge_style: bool) -> None:
        self.from_json = from_json
        self.ge_style = ge_style
        self.records: list[NodeRecord] = []
        self.subgraphs: dict[str, str | None] = {}
        self.value_types: dict[str, TensorDesc] = {}

    def walk(self, graph: dict[str, Any], *, graph_name: str, parent: str | None) -> None:
        for key in ("input", "output", "value_info"):
            for value in many(graph.get(key)):
                self.value_types[str(one(value.get("name"), ""))] = _value_desc(value)
        for node in many(graph.get("node")):
            op_type = str(one(node.get("op_type"), ""))
            name = str(one(node.get("name"), ""))
            attributes, graphs = self.attributes(node)
            if self.ge_style and op_type == "subgraph":
                for _, inner in graphs:
                    sub_name = str(one(inner.get("name"), "")) or name
                    self.subgraphs[sub_name] = None  # the caller is found by name later
                    self.walk(inner, graph_name=sub_name, parent=None)
                continue
            record = NodeRecord(name=name, op_type=op_type.removeprefix("ge:"),
                                inputs=[str(t) for t in many(node.get("input"))],
                                outputs=[str(t) for t in many(node.get("output"))],
                                attributes=attributes, graph=graph_name, parent=parent)
            if not record.name:  # named now (as assemble() would) because its subgraphs need a parent
                record.name = next((o for o in record.outputs if o), f"{record.op_type}_{len(self.records)}")
            if self.ge_style:
                self.split_descs(record)
            self.records.append(record)
            for attr_name, inner in graphs:  # If/Loop bodies: named <op>/<attribute> like the binary reader
                sub_name = f"{record.name}/{attr_name}"
                self.subgraphs[sub_name] = record.name
                record.subgraphs += (sub_name,)
                self.walk(inner, graph_name=sub_name, parent=record.name)

    def attributes(self, node: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        """Attribute values, and the subgraphs held by GRAPH/GRAPHS attributes as (name, graph)."""
        values: dict[str, Any] = {}
        graphs: list[tuple[str, dict[str, Any]]] = []
        for attr in many(node.get("attribute")):
            kind = one(attr.get("type"))
            kind = _ATTR_TYPES.get(kind, kind) if kind is not None else _guess_type(attr)
            field = _TYPE_FIELD.get(str(kind))
            raw = attr.get(field) if field else None
            name = str(one(attr.get("name"), ""))
            if kind == "GRAPH":
                graphs.extend((name, g) for g in many(raw) if isinstance(g, dict))
                value: Any = {"graph": one(one(raw, {}).get("name"), "")}
            elif kind == "GRAPHS":
                graphs.extend((f"{name}[{i}]", g) for i, g in enumerate(many(raw)) if isinstance(g, dict))
                value = [{"graph": one(g.get("name"), "")} for g in many(raw)]
            else:
                value = self.value(str(kind), raw)
            values[name] = value
        return values, graphs

    def value(self, kind: str, raw: Any) -> Any:
        """proto3 prints no defaults: an INT attribute without ``i`` is 0, INTS without ``ints`` is []."""
        if kind == "INT":
            return int(one(raw, 0))
        if kind == "FLOAT":
            return float(one(raw, 0.0))
        if kind == "STRING":
            return self.text(one(raw, ""))
        if kind == "INTS":
            return [int(v) for v in many(raw)]
        if kind == "FLOATS":
            return [float(v) for v in many(raw)]
        if kind == "STRINGS":
            return [self.text(v) for v in many(raw)]
        if kind in ("TENSOR", "SPARSE_TENSOR"):
            tensor = one(raw, {})
            return {"dims": [int(d) for d in many(tensor.get("dims"))],
                    "dtype": elem_dtype(one(tensor.get("data_type")))}
        if kind in ("TENSORS", "SPARSE_TENSORS"):
            return [{"dims": [int(d) for d in many(t.get("dims"))]} for t in many(raw)]
        return None

    def text(self, value: Any) -> str:
        """``bytes`` fields are base64 in JSON and escaped text in protobuf text."""
        if self.from_json and isinstance(value, str):
            try:
                return base64.b64decode(value, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return value
        return str(value)

    def split_descs(self, record: NodeRecord) -> None:
        """GE flattens tensor descriptors into ``<io>_desc_<field>:<slot>`` attributes: rebuild them."""
        slots: dict[str, dict[int, dict[str, Any]]] = {"input": {}, "output": {}}
        for key in [k for k in record.attributes if "_desc_" in k]:
            m = _DESC_KEY.match(key)
            if m:
                slots[m.group(1)].setdefault(int(m.group(3)), {})[m.group(2)] = record.attributes[key]
            if key.startswith(("input_desc_", "output_desc_")):
                del record.attributes[key]
        record.input_descs = _descs(slots["input"])
        record.output_descs = _descs(slots["output"])
        if "id" in record.attributes:
            record.op_id = int(record.attributes["id"])

    def attach_ge_subgraphs(self) -> None:
        """GE names a subgraph's caller ``<subgraph>_PartitionedCall_<n>``: link them by that."""
        callers = [r for r in self.records if r.op_type in _CONTROL_FLOW]
        for sub_name, parent in list(self.subgraphs.items()):
            if parent is not None:
                continue
            caller = next((r for r in callers if r.name.startswith(sub_name + "_")), None)
            if caller is None:
                continue
            self.subgraphs[sub_name] = caller.name
            caller.subgraphs += (sub_name,)
            for record in self.records:
                if record.graph == sub_name:
                    record.parent = caller.name


def _guess_type(attr: dict[str, Any]) -> str | None:
    for kind, field in _TYPE_FIELD.items():
        if field in attr:
            return kind
    return None


def _descs(slots: dict[int, dict[str, Any]]) -> tuple[TensorDesc, ...]:
    if not slots:
        return ()
    descs = []
    for slot in range(max(slots) + 1):
        d = slots.get(slot, {})
        descs.append(TensorDesc(
            dtype=dtype_name(d.get("dtype")), shape=_shape(d.get("shape")), format=d.get("layout") or None,
            origin_dtype=dtype_name(d.get("origin_dtype")), origin_format=d.get("origin_layout") or None,
            origin_shape=_shape(d.get("origin_shape"))))
    return tuple(descs)


def _shape(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(v) for v in value)


def _value_desc(value: dict[str, Any]) -> TensorDesc:
    tensor = one((one(value.get("type")) or {}).get("tensor_type")) or {}
    shape = one(tensor.get("shape"))
    dims = None if shape is None else tuple(
        int(one(d.get("dim_value"), -1)) if "dim_value" in d else -1 for d in many(shape.get("dim")))
    return TensorDesc(dtype=elem_dtype(one(tensor.get("elem_type"))), shape=dims)


__all__ = ["ELEM_TYPES", "build_graph", "snake_keys"]
