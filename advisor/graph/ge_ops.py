"""GE's graph IR (``ge_ir.proto``: ModelDef > GraphDef > OpDef, AttrDef) -> ``Graph``.

Shared by the protobuf-text dumps (``ge_proto_*_Build.txt``) and the OM model JSON (``atc --mode=1``):
both spell the same messages, the text as parsed by ``protobuf_text`` (a field seen once is a bare
value) and the JSON as lists. ``many``/``one`` read either.

Fusion evidence lives in op attributes: ``_datadump_original_op_names`` (repeats allowed),
``pass_name`` / ``pass_name_ub`` / ``_single_op_ub_pass_name`` (a scalar in some CANN versions, a list
in others), ``fusion_scope``, ``_datadump_origin_name``, ``_datadump_origin_format`` and
``_datadump_origin_data_type``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from advisor.dtypes import normalise_dtype
from advisor.graph.model import Edge, Graph, Node, TensorDesc
from advisor.graph.protobuf_text import many, one

ORIGINAL_NAMES = "_datadump_original_op_names"


class MalformedGraph(ValueError):
    """A well-formed file whose graph is not: names the op (``op``) when one is to blame."""

    def __init__(self, message: str, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op

PASS_KEYS = ("pass_name", "pass_name_ub", "_single_op_ub_pass_name")
_LIST_KEYS = ("s", "i", "f", "b", "bt", "dt", "td", "t", "g", "na")
DESC_ATTRS = frozenset({"origin_format", "origin_data_type", "origin_shape"})


# --- attributes -------------------------------------------------------------------------------------

class DecodedAttrs(dict):
    """An attribute map a reader already decoded to plain values (``ge_scan``): taken as it is."""

    __slots__ = ()


def attr_map(entries: Any) -> dict[str, Any]:
    """``attr { key value }`` entries (a proto map) -> {key: plain Python value}."""
    if entries is None:
        return {}
    if type(entries) is DecodedAttrs:
        return entries
    if type(entries) is dict:
        entries = (entries,)
    out = {}
    for entry in entries:
        key, value = attr_entry(entry)
        out[key] = value
    return out


def attr_entry(entry: dict[str, Any]) -> tuple[str, Any]:
    """One ``attr { key value }`` entry -> (key, plain Python value)."""
    key = entry.get("key", "")
    value = entry.get("value")
    return key if type(key) is str else str(one(key, "")), attr_value(
        value if type(value) is dict or value is None else one(value))


def attr_value(value: Any) -> Any:
    """One AttrDef -> str / int / float / bool / list / dict; None when unset. Checks run in order
    of frequency in real dumps: this runs once per attribute of every op."""
    if not value:
        return None
    if "s" in value:
        v = value["s"]
        return v if type(v) is str else _scalar("s", one(v))
    if "i" in value:
        v = value["i"]
        return v if type(v) is int else _scalar("i", one(v))
    if "b" in value:
        v = value["b"]
        return v if type(v) is bool else _scalar("b", one(v))
    if "list" in value:
        items = one(value["list"]) or {}
        for key in _LIST_KEYS:
            if key in items:
                return [_scalar(key, item) for item in many(items[key])]
        return []
    for key in ("f", "bt", "dt"):
        if key in value:
            return _scalar(key, one(value[key]))
    if "list_list_int" in value:
        rows = many((one(value["list_list_int"]) or {}).get("list_list_i"))
        return [[int(x) for x in many(row.get("list_i"))] for row in rows]
    if "list_list_float" in value:
        rows = many((one(value["list_list_float"]) or {}).get("list_list_f"))
        return [[float(x) for x in many(row.get("list_f"))] for row in rows]
    if "func" in value:
        func = one(value["func"]) or {}
        return {"name": one(func.get("name"), ""), "attr": attr_map(func.get("attr"))}
    if "td" in value:
        return tensor_desc(one(value["td"]))._asdict()
    if "t" in value:  # a tensor: keep what it is, not its bytes
        return {"desc": tensor_desc(one(one(value["t"]).get("desc")) or {})._asdict()}
    if "g" in value:
        return {"graph": one(one(value["g"]).get("name"), "")}
    return None


def _scalar(key: str, item: Any) -> Any:
    if key == "s":
        return str(item)
    if key in ("i", "dt"):
        return int(item)
    if key == "f":
        return float(item)
    if key == "b":
        return item if isinstance(item, bool) else str(item).lower() == "true"
    if key == "td":
        return tensor_desc(item)._asdict()
    if key == "t":
        return {"desc": tensor_desc(item.get("desc") or {})._asdict()}
    if key == "g":
        return {"graph": one(item.get("name"), "")}
    if key == "na":
        return {"name": one(item.get("name"), ""), "attr": attr_map(item.get("attr"))}
    return item  # bt: bytes, as the file spells them


def as_list(value: Any) -> list:
    """A scalar-or-list attribute as a list (``pass_name`` is either, depending on the CANN version)."""
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


def _unique(values: list) -> tuple[str, ...]:
    if not values:
        return ()
    return tuple(dict.fromkeys([v if type(v) is str else str(v) for v in values if v is not None and v != ""]))


_NO_FUSION: dict[str, Any] = {"fused_from": (), "passes": (), "fusion_scope": None, "origin_name": None,
                              "origin_formats": (), "origin_dtypes": ()}
_FUSION_KEYS = frozenset({ORIGINAL_NAMES, *PASS_KEYS, "fusion_scope", "_datadump_origin_name",
                          "_datadump_origin_format", "_datadump_origin_data_type"})


def fusion_fields(attrs: dict[str, Any]) -> dict[str, Any]:
    """The fusion evidence of one op, normalised (see the module docstring)."""
    if _FUSION_KEYS.isdisjoint(attrs):
        return _NO_FUSION
    origin_name = attrs.get("_datadump_origin_name")
    return {
        "fused_from": _unique(as_list(attrs.get(ORIGINAL_NAMES))),
        "passes": _unique([name for key in PASS_KEYS for name in as_list(attrs.get(key))]),
        "fusion_scope": attrs.get("fusion_scope"),
        "origin_name": str(origin_name) if origin_name not in (None, "", []) else None,
        "origin_formats": tuple(str(v) for v in as_list(attrs.get("_datadump_origin_format"))),
        "origin_dtypes": tuple(dtype_name(v) for v in as_list(attrs.get("_datadump_origin_data_type"))),
    }


# --- tensors -----------------------------------------------------------------------------------------

def dtype_name(value: Any) -> str | None:
    """``DT_FLOAT16`` -> ``float16``; None for unset, ``DT_UNDEFINED`` and numeric codes (ge::DataType
    numbers differ from the proto enum's: do not guess)."""
    return _dtype_name(value) if type(value) is str and value else None


@lru_cache(maxsize=256)  # a graph holds a handful of distinct dtype names, spelled thousands of times
def _dtype_name(value: str) -> str | None:
    return None if value.upper() in ("DT_UNDEFINED", "UNDEFINED") else normalise_dtype(value)


def _shape(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(d) for d in value)


def tensor_desc(desc: Any) -> TensorDesc:
    """A TensorDescriptor -> TensorDesc (origin_* from its attrs)."""
    if not desc:
        return TensorDesc()
    if type(desc) is TensorDesc:  # already decoded (ge_scan)
        return desc
    extra = {}
    for entry in many(desc.get("attr")):
        key = one(entry.get("key"))
        if key in DESC_ATTRS:
            extra[key] = attr_value(one(entry.get("value")))
    shape = desc.get("shape")
    return desc_of(one(desc.get("dtype")), None if shape is None else many((one(shape) or {}).get("dim")),
                   one(desc.get("layout")), extra)


def desc_of(dtype: Any, dims: list | None, layout: Any, extra: dict[str, Any]) -> TensorDesc:
    """TensorDesc from a descriptor's fields: ``dims`` None when it has no shape, ``extra`` its
    ``DESC_ATTRS`` attributes decoded."""
    return TensorDesc(
        dtype=dtype_name(dtype),
        shape=None if dims is None else _shape(dims),
        format=layout,
        origin_dtype=dtype_name(extra.get("origin_data_type")),
        origin_format=extra.get("origin_format") or None,
        origin_shape=_shape(extra.get("origin_shape")),
    )


# --- ops and graphs ----------------------------------------------------------------------------------

def parse_ref(ref: str) -> tuple[str, int]:
    """``"src:idx"`` -> (src, idx); idx -1 marks a control edge. A ref without an index means slot 0."""
    source, sep, slot = ref.rpartition(":")
    if sep:
        try:
            return source, int(slot)
        except ValueError:
            pass
    return ref, 0


def build_node(op: dict[str, Any], graph: str, parent: str | None) -> Node:
    get = op.get
    name = get("name", "")
    if type(name) is not str:
        name = str(one(name, ""))
    attrs = attr_map(get("attr"))
    refs = many(get("input"))
    if not refs and "src_name" in op:  # older dumps spell inputs only as src_name/src_index
        refs = [f"{s}:{i}" for s, i in zip(many(get("src_name")), many(get("src_index")), strict=False)]
    inputs, controls = [], []
    for ref in refs:
        if not ref:
            continue  # Data/Variable ops carry one empty input
        ref = str(ref)
        source, slot = parse_ref(ref)
        if slot < 0:
            controls.append(source)
        else:
            inputs.append(Edge(source, slot, ref))
    output_descs = tuple([tensor_desc(d) for d in many(get("output_desc"))])
    op_id = get("id", 0)  # proto3: an absent id is 0
    return Node(
        name=name,
        op_type=str(one(get("type"), "")),
        inputs=tuple(inputs),
        control_inputs=tuple(controls),
        outputs=tuple([f"{name}:{i}" for i in range(len(output_descs))]),
        attributes=attrs,
        input_descs=tuple([tensor_desc(d) for d in many(get("input_desc"))]),
        output_descs=output_descs,
        op_id=op_id if type(op_id) is int else int(one(op_id, 0)),
        graph=graph,
        parent=parent,
        subgraphs=tuple([str(s) for s in many(get("subgraph_name")) if s]) if "subgraph_name" in op else (),
        **fusion_fields(attrs),
    )


def build_graph(model: dict[str, Any], *, source: Path, format: str) -> Graph:
    """A ModelDef (``graph`` repeated, ``attr`` map, optional ``name``) -> Graph. The first graph is
    the root; the others are subgraphs, attached to the op whose ``subgraph_name`` names them."""
    graphs = many(model.get("graph"))
    if not graphs or not all(isinstance(g, dict) for g in graphs):
        raise MalformedGraph("no graph message (expected graph { op { ... } })")
    parents: dict[str, str] = {}
    for graph in graphs:
        for op in many(graph.get("op")):
            for sub in many(op.get("subgraph_name") if isinstance(op, dict) else None):
                if sub:
                    parents.setdefault(str(sub), str(one(op.get("name"), "")))
    nodes: list[Node] = []
    root_nodes: list[Node] = []
    subgraphs: dict[str, str | None] = {}
    for position, graph in enumerate(graphs):
        graph_name = str(one(graph.get("name"), ""))
        parent = parents.get(graph_name)
        if position:
            subgraphs[graph_name] = parent
        for position_in_graph, op in enumerate(many(graph.get("op"))):
            if not isinstance(op, dict):
                raise MalformedGraph(f"op #{position_in_graph} of graph {graph_name!r} is not a message")
            try:
                nodes.append(build_node(op, graph_name, parent))
            except (ValueError, TypeError, AttributeError) as exc:
                name = str(one(op.get("name"), ""))
                raise MalformedGraph(f"op {name!r} of graph {graph_name!r}: {exc}", op=name) from None
        if not position:
            root_nodes = list(nodes)
    root = graphs[0]
    root_name = str(one(root.get("name"), ""))
    inputs = [str(r) for r in many(root.get("input")) if r] or [
        f"{n.name}:0" for n in root_nodes if n.op_type in ("Data", "RefData")]
    outputs = [str(r) for r in many(root.get("output")) if r] or [
        e.tensor for n in root_nodes if n.op_type == "NetOutput" for e in n.inputs]
    attributes = {**attr_map(root.get("attr")), **attr_map(model.get("attr"))}
    return Graph(nodes, name=str(one(model.get("name"), "") or root_name), format=format, source=source,
                 inputs=inputs, outputs=outputs, attributes=attributes, subgraphs=subgraphs,
                 links=subgraph_links(nodes))


def subgraph_links(nodes: list[Node]) -> list[tuple[str, str]]:
    """Data flow across subgraph boundaries: parent input k -> the subgraph Data op with
    ``_parent_node_index`` k; the subgraph NetOutput -> the parent."""
    by_name = {n.name: n for n in nodes}
    links = []
    for node in nodes:
        parent = by_name.get(node.parent) if node.parent else None
        if parent is None:
            continue
        if node.op_type == "NetOutput":
            links.append((node.name, parent.name))
        k = node.attributes.get("_parent_node_index")
        if node.op_type in ("Data", "RefData") and isinstance(k, int) and 0 <= k < len(parent.inputs):
            links.append((parent.inputs[k].source, node.name))
    return links
