"""GE graph dumps in protobuf text (``ge_proto_<n>_<stage>.txt``, written with DUMP_GE_GRAPH) and
GE's ONNX-text dumps (``ge_onnx_<n>_graph_<id>_<stage>.pbtxt``) -> ``Graph``.

Both are protobuf text; which one a file is shows in its structure after parsing: a ModelDef has
``graph { op { ... } }``, an ONNX ModelProto has ``ir_version`` / ``graph { node { ... } }``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.errors import InputFormatError
from advisor.graph import ge_ops, ge_scan, onnx_text
from advisor.graph.model import Graph, gc_paused
from advisor.graph.protobuf_text import ProtobufTextError, one, parse
from advisor.inputfiles import read_input_text

_ONNX_MODEL_FIELDS = ("ir_version", "producer_name", "opset_import", "model_version", "domain")


def parse_document(path: Path, text: str) -> dict[str, Any]:
    """The protobuf text document: in the layout GE prints (its graph and ONNX-text dumps) by
    ``ge_scan``, anything else (hand-edited or malformed files) by ``protobuf_text``, which says
    where it is wrong."""
    document = ge_scan.scan(text)
    if document is not None:
        return document
    try:
        return parse(text)
    except ProtobufTextError as exc:
        raise InputFormatError(f"not valid protobuf text: {exc.message}", path=path, line=exc.line) from None


def text_kind(document: dict[str, Any]) -> str | None:
    """'ge-text' for a GE ModelDef, 'onnx-text' for an ONNX ModelProto, None for anything else."""
    graph = one(document.get("graph"))
    if isinstance(graph, dict) and "op" in graph:
        return "ge-text"
    if isinstance(graph, dict) and "node" in graph or any(k in document for k in _ONNX_MODEL_FIELDS):
        return "onnx-text"
    if isinstance(graph, dict) and ("name" in graph or not graph):  # a graph with no ops yet
        return "ge-text"
    return None


def require_kind(document: dict[str, Any], path: Path) -> str:
    """``text_kind`` or an InputFormatError saying what was expected."""
    kind = text_kind(document)
    if kind is None:
        fields = ", ".join(list(document)[:6]) or "nothing"
        raise InputFormatError("protobuf text, but neither a GE graph dump (graph { op {...} }) nor an ONNX model "
                               f"(ir_version, graph {{ node {{...}} }}): top-level fields are {fields}", path=path)
    return kind


def from_document(document: dict[str, Any], path: Path, text: str, kind: str) -> Graph:
    try:
        if kind == "ge-text":
            return ge_ops.build_graph(document, source=path, format=kind)
        return onnx_text.build_graph(document, source=path, format=kind)
    except ge_ops.MalformedGraph as exc:
        raise InputFormatError(f"malformed GE graph: {exc}", path=path, line=_line_of_op(text, exc.op)) from None
    except (ValueError, TypeError, AttributeError) as exc:
        label = "GE graph" if kind == "ge-text" else "ONNX text model"
        raise InputFormatError(f"malformed {label}: {exc}", path=path) from None


def read_ge_text(path: str | Path, text: str | None = None) -> Graph:
    path = Path(path)
    if text is None:
        text = read_input_text(path, encoding="utf-8-sig", errors="replace", what="graph")
    with gc_paused():
        document = parse_document(path, text)
        return from_document(document, path, text, require_kind(document, path))


def _line_of_op(text: str, op: str | None) -> int | None:
    """Error path only: the line where op ``op`` is named, so the message can point at it."""
    if not op:
        return None
    at = text.find(f'name: "{op}"')
    return None if at < 0 else text.count("\n", 0, at) + 1


__all__ = ["from_document", "parse_document", "read_ge_text", "require_kind", "text_kind"]
