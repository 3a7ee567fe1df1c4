"""Join a model graph (and a fusion report) to the per-op frame of the comparison, by op names.

The table's ``op_name`` is the target op; its ``golden_ops`` are the comma-joined golden (original)
names. A target graph (GE ``ge_proto_*_Build.txt``, OM JSON, or any graph whose ops carry fusion
evidence) is joined on ``op_name``; a golden graph (a plain ONNX model) on the golden names, then on
``op_name``.

Everything here is per *op*, never per row: a million-row comparison holds a few hundred thousand ops
at most, and each is mapped once with dict look-ups. Only ops without input rows walk the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..graph import FusionReport, Graph

TARGET_FORMATS = frozenset({"ge-text", "om-json"})
# How many graph nodes a predecessor walk visits through ops the comparison does not cover
# (Const, inserted TransData, ops dumped on one side only) before it gives up.
MAX_WALK = 64
MAX_LISTED = 20
NARROWING = {"float32": ("float16", "bfloat16", "int32", "int16", "int8", "uint8"),
             "float64": ("float32", "float16", "bfloat16", "int32", "int16", "int8", "uint8")}


@dataclass
class GraphJoin:
    """The graph as the op frame sees it: per op position, its graph nodes and graph predecessors."""

    graph: Graph
    side: str                                   # "target" or "golden"
    op_nodes: np.ndarray                        # op positions (sorted) ...
    node_ids: np.ndarray                        # ... and the graph node each maps to (one pair per node)
    size: int                                   # ops in the frame
    op_of_name: dict[str, int]                  # graph-input / op / golden name -> op position
    fusion: FusionReport | None = None
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._starts = np.searchsorted(self.op_nodes, np.arange(self.size + 1))
        order = np.argsort(self.node_ids, kind="stable")  # first op (lowest position) per node wins
        nodes, first = np.unique(self.node_ids[order], return_index=True)
        self._op_of_node = dict(zip(nodes.tolist(), self.op_nodes[order][first].tolist(), strict=True))

    @property
    def known(self) -> np.ndarray:
        """Per op: found in the graph."""
        return np.diff(self._starts) > 0

    @property
    def matched(self) -> int:
        return int(self.known.sum())

    @property
    def op_of_node(self) -> dict[int, int]:
        return self._op_of_node

    @property
    def first_node(self) -> np.ndarray:
        """Per op: its first graph node, -1 when none."""
        out = np.full(self.size, -1, dtype=np.int64)
        has = self.known
        out[has] = self.node_ids[self._starts[:-1][has]]
        return out

    def nodes_of(self, position: int) -> list[int]:
        return self.node_ids[self._starts[position]:self._starts[position + 1]].tolist()

    def predecessor_ops(self, position: int, compared: np.ndarray) -> list[int]:
        """Op positions whose compared outputs feed the op at ``position``: its graph predecessors,
        walking through nodes the comparison does not cover (unmapped or without compared outputs)."""
        return self._walk(self.nodes_of(position), position, compared)

    def _walk(self, start: list[int], position: int, compared: np.ndarray) -> list[int]:
        preds = self.graph.predecessor_indices
        nodes = self.graph.nodes
        inputs = self.graph_inputs
        seen = set(start)
        frontier = list(start)
        found: list[int] = []
        visited = 0
        while frontier and visited < MAX_WALK:
            following: list[int] = []
            for i in frontier:
                for edge in nodes[i].inputs:  # graph inputs (ONNX value names) feed through a Data row
                    if edge.source in inputs:
                        p = self.op_of_name.get(edge.source)
                        if p is not None and p != position and p not in found:
                            found.append(p)
                for j in preds(i):
                    if j in seen:
                        continue
                    seen.add(j)
                    visited += 1
                    p = self.op_of_node.get(j)
                    if p is not None and p != position and compared[p]:
                        if p not in found:
                            found.append(p)
                    else:
                        following.append(j)
            frontier = following
        return found

    @property
    def graph_inputs(self) -> set[str]:
        """Names of the graph's inputs that are no node (ONNX value names)."""
        if not hasattr(self, "_inputs_cache"):
            self._inputs_cache = {name for name in self.graph.inputs if name not in self.graph.index}
        return self._inputs_cache

    def output_ops(self, compared: np.ndarray) -> list[int]:
        """Op positions that produce the graph outputs (walking back to compared ops)."""
        graph = self.graph
        producer: dict[str, int] = {}
        wanted = set(graph.outputs)
        for i, node in enumerate(graph.nodes):
            for tensor in node.outputs:
                if tensor in wanted:
                    producer.setdefault(tensor, i)
        found: list[int] = []
        for tensor in graph.outputs:
            i = graph.index.get(tensor)
            if i is None:
                i = graph.index.get(tensor.rsplit(":", 1)[0]) if ":" in tensor else None
            if i is None:
                i = producer.get(tensor)
            if i is None:
                continue
            p = self.op_of_node.get(i)
            positions = [p] if p is not None and compared[p] else self._walk([i], -1, compared)
            found.extend(q for q in positions if q not in found)
        return found

    def fusion_columns(self, ops: pd.DataFrame) -> dict[str, Any]:
        """Per op: graph_known, fused_from, fusion_passes, is_fused: one pass over the graph's nodes,
        then array look-ups per op."""
        known = self.known
        golden = ops["golden_ops"].astype("string")
        fused_table = golden.where(golden.str.contains(",", regex=False).fillna(False) & known)
        if self.side == "target":
            nodes = self.graph.nodes
            node_fused = np.full(len(nodes) + 1, None, dtype=object)   # the extra last entry: no node (-1)
            node_passes = np.full(len(nodes) + 1, None, dtype=object)
            node_has_fusion = np.zeros(len(nodes) + 1, dtype=bool)
            for i, node in enumerate(nodes):
                if node.fused_from:
                    node_has_fusion[i] = True
                    if len(node.fused_from) > 1:
                        node_fused[i] = ",".join(node.fused_from)
                if node.passes:
                    node_passes[i] = ",".join(dict.fromkeys(node.passes))
            first = self.first_node
            fused = pd.array(node_fused[first], dtype="string")
            # A node without fusion evidence keeps what the table's golden_ops say.
            fused = pd.Series(fused).where(pd.Series(node_has_fusion[first]), fused_table.to_numpy()).array
            passes = pd.array(node_passes[first], dtype="string")
        else:
            fused = fused_table.array
            passes = pd.array([None] * len(ops), dtype="string")
        return {"graph_known": known, "fused_from": fused, "fusion_passes": passes,
                "is_fused": pd.Series(fused).notna().to_numpy(dtype=bool)}

    def cast_dtypes(self, position: int) -> tuple[str | None, str | None]:
        """(input dtype, output dtype) the graph states for the op's first node."""
        own = self.nodes_of(position)
        if not own:
            return None, None
        node = self.graph.nodes[own[0]]
        source = node.input_descs[0].dtype if node.input_descs else None
        target = node.output_descs[0].dtype if node.output_descs else None
        if target is None and "to" in node.attributes:
            target = _onnx_dtype(node.attributes["to"])
        return source, target

    def network_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"graph_known": True, "graph_format": self.graph.format,
                                  "graph_side": self.side, "graph_nodes": len(self.graph),
                                  "graph_ops_matched": self.matched}
        if self.fusion is not None:
            effective = list(self.fusion.effective_passes())
            fields["fusion_passes_effective"] = ",".join(effective[:MAX_LISTED])
            fields["fusion_passes_effective_count"] = len(effective)
        return fields


_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 10: "float16",
                11: "float64", 16: "bfloat16"}


def _onnx_dtype(value: Any) -> str | None:
    try:
        return _ONNX_DTYPES.get(int(value))
    except (TypeError, ValueError):
        return str(value).lower() if isinstance(value, str) else None


def graph_side(graph: Graph) -> str:
    """"target" when the graph is the compiled one (GE/OM, or ops carry fusion evidence), else "golden"."""
    if graph.format in TARGET_FORMATS or any(node.fused_from or node.passes for node in graph.nodes):
        return "target"
    return "golden"


def join_graph(ops: pd.DataFrame, graph: Graph, fusion: FusionReport | None = None) -> GraphJoin:
    """Map every op of ``ops`` (the per-op frame) to its graph nodes with column operations: the
    candidate names (golden names for a golden graph, then op names) are looked up in one ``map``."""
    side = graph_side(graph)
    n = len(ops)
    positions = np.arange(n)
    names = pd.Series(ops["op"].astype(object).to_numpy(), index=positions)
    parts = []
    if side == "golden":
        golden = ops["golden_ops"].astype(object).where(ops["golden_ops"].notna(), None)
        exploded = pd.Series(golden.to_numpy(), index=positions).dropna().str.split(",").explode().str.strip()
        parts.append(exploded)
    parts.append(names.dropna())
    candidates = pd.concat(parts) if len(parts) > 1 else parts[0]
    candidate_names = candidates.to_numpy(dtype=object)
    candidate_positions = candidates.index.to_numpy(dtype=np.int64)
    first = ~pd.Series(candidate_names).duplicated().to_numpy()
    op_of_name = dict(zip(candidate_names[first].tolist(), candidate_positions[first].tolist(), strict=True))
    node = pd.Series(candidate_names).map(graph.index).to_numpy(dtype=float)
    found = ~np.isnan(node)
    pairs = pd.DataFrame({"position": candidate_positions[found], "node": node[found].astype(np.int64)})
    pairs = pairs.drop_duplicates().sort_values("position", kind="stable")
    join = GraphJoin(graph=graph, side=side, op_nodes=pairs["position"].to_numpy(), node_ids=pairs["node"].to_numpy(),
                     size=n, op_of_name=op_of_name, fusion=fusion)
    if n and not join.matched:
        join.warnings.append(f"the graph {graph.source.name if graph.source else graph.name!r} shares no op "
                             "name with the comparison: graph facts are not used")
    return join


def narrowing(source: str | None, target: str | None) -> bool:
    return source in NARROWING and target in NARROWING[source]  # type: ignore[operator]
