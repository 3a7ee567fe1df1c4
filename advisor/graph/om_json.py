"""OM offline models converted to JSON (``atc --mode=1 --om=model.om --json=model.json``) -> ``Graph``.

Layout: ``{"name", "version", "attr": [{key, value}], "graph": [{"name", "input", "attr", "op": [...]}]}``;
ops spell GE's OpDef (``input: ["src:idx"]``, ``attr``, ``input_desc``, ``output_desc``). The
model-level attrs hold ``atc_cmdline`` (``Graph.atc_cmdline``), ``soc_version`` and ``atc_version``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.errors import InputFormatError
from advisor.graph import ge_ops
from advisor.graph.model import Graph, gc_paused
from advisor.inputfiles import read_input_text
from advisor.nesting import loads_json


def is_om_json(document: Any) -> bool:
    graphs = document.get("graph") if isinstance(document, dict) else None
    return isinstance(graphs, list) and all(isinstance(g, dict) and ("op" in g or not g.get("node")) for g in graphs)


def from_document(document: dict[str, Any], path: Path) -> Graph:
    try:
        return ge_ops.build_graph(document, source=path, format="om-json")
    except ge_ops.MalformedGraph as exc:
        raise InputFormatError(f"malformed OM model JSON: {exc}", path=path) from None
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputFormatError(f"malformed OM model JSON: {exc}", path=path) from None


def read_om_json(path: str | Path) -> Graph:
    path = Path(path)
    document = loads_json(read_input_text(path, encoding="utf-8-sig", what="graph"), path, InputFormatError)
    if not is_om_json(document):
        raise InputFormatError("not an OM model JSON: expected {attr, graph: [{name, op: [...]}], name}", path=path)
    with gc_paused():
        return from_document(document, path)
