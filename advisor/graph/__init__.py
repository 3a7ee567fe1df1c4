"""Graph stage: model graphs and fusion reports -> ``Graph`` / ``FusionReport``.

``read_graph(path)`` recognises the format by content, not by file name:

========================  =================================================================
format                    what it is
========================  =================================================================
``onnx``                  binary ONNX model (needs ``pip install onnx``)
``onnx-json``             an ONNX model or graph saved as JSON
``onnx-text``             ONNX in protobuf text, e.g. GE's ``ge_onnx_*.pbtxt`` dumps
``ge-text``               GE graph dump in protobuf text (``ge_proto_*_Build.txt``)
``om-json``               OM model as JSON (``atc --mode=1``)
========================  =================================================================

``read_fusion_result(path)`` reads ``fusion_result.json`` (both layouts). Every unreadable input
raises ``advisor.errors.InputFormatError`` naming the file (and line, where the format has lines).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from advisor.errors import InputFormatError
from advisor.graph import ge_text, om_json, onnx_text
from advisor.graph.fusion_result import FusionReport, PassCount, fusion_report, is_fusion_result
from advisor.graph.model import Edge, Graph, InitializerStats, Node, TensorDesc, gc_paused
from advisor.inputfiles import open_input, read_input_text
from advisor.nesting import loads_json

__all__ = ["FORMATS", "Edge", "FusionReport", "Graph", "InitializerStats", "Node", "PassCount", "TensorDesc",
           "detect_format", "read_fusion_result", "read_graph"]

FORMATS = ("onnx", "onnx-json", "onnx-text", "ge-text", "om-json")
SNIFF_BYTES = 64 * 1024
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_OM_MAGIC = b"IMOD"
_OM_HINT = "convert it to JSON first: atc --mode=1 --om=MODEL.om --json=MODEL.json"


def read_graph(path: str | Path) -> Graph:
    """Read any supported graph file (see the module docstring)."""
    with gc_paused():
        return _read_graph(Path(path))


def _read_graph(path: Path) -> Graph:
    kind, document, text = _load(path)
    if kind == "onnx":
        from advisor.graph.onnx_file import read_onnx
        return read_onnx(path)
    if kind == "fusion-result":
        raise InputFormatError("this is a fusion_result.json (fusion pass counts), not a graph: "
                               "read it as the fusion report", path=path)
    if kind == "om-json":
        return om_json.from_document(document, path)
    if kind == "onnx-json":
        try:
            return onnx_text.build_graph(onnx_text.snake_keys(document), source=path, format=kind, from_json=True)
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputFormatError(f"malformed ONNX JSON: {exc}", path=path) from None
    return ge_text.from_document(document, path, text or "", kind)


def read_fusion_result(path: str | Path) -> FusionReport:
    """Read a fusion_result.json (list of sessions, or the older single-session dict)."""
    path = Path(path)
    kind, document, _ = _load(path)
    if kind != "fusion-result":
        raise InputFormatError(f"not a fusion_result.json: this file is a graph ({kind})", path=path)
    return fusion_report(document, path)


def detect_format(path: str | Path) -> str:
    """One of ``FORMATS`` or ``"fusion-result"``; text formats are parsed to be told apart."""
    return _load(Path(path))[0]


def _load(path: Path) -> tuple[str, Any, str | None]:
    """(format, parsed document or None for binary ONNX, text or None)."""
    if path.is_dir():
        raise InputFormatError("is a directory, expected a graph file", path=path)
    try:
        with open_input(path) as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputFormatError(f"cannot read the file: {exc.strerror or exc}", path=path) from None
    if not head.strip():
        raise InputFormatError("the file is empty", path=path)
    if head.startswith(_OM_MAGIC):
        raise InputFormatError(f"a binary OM model cannot be read directly: {_OM_HINT}", path=path)
    if _BINARY.search(head):
        if path.suffix.lower() == ".om":
            raise InputFormatError(f"a binary OM model cannot be read directly: {_OM_HINT}", path=path)
        return "onnx", None, None
    text = read_input_text(path, encoding="utf-8-sig", errors="replace", what="graph")
    if text.lstrip()[:1] in ("{", "["):
        return _classify_json(path, text)
    document = ge_text.parse_document(path, text)
    return ge_text.require_kind(document, path), document, text


def _classify_json(path: Path, text: str) -> tuple[str, Any, str]:
    document = loads_json(text, path, InputFormatError)
    if is_fusion_result(document):
        return "fusion-result", document, text
    if om_json.is_om_json(document):
        return "om-json", document, text
    if isinstance(document, dict) and _is_onnx_json(document):
        return "onnx-json", document, text
    found = ("keys " + ", ".join(sorted(document)[:8])) if isinstance(document, dict) else type(document).__name__
    raise InputFormatError("unknown JSON layout: expected an OM model JSON (attr, graph: [{op: [...]}], name), an "
                           f"ONNX model or graph as JSON (graph/node) or a fusion_result.json; found {found}",
                           path=path)


def _is_onnx_json(document: dict[str, Any]) -> bool:
    graph = document.get("graph")
    return (isinstance(document.get("node"), list) or (isinstance(graph, dict) and "node" in graph)
            or "irVersion" in document or "ir_version" in document)
