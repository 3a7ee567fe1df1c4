"""The root cause's op in the model graph (``advisor run --graph``), as the report draws it
(advisor/report/graph_svg.py): its graph inputs, itself and its first successors, each with its output
cosine when the comparison has one. Built from the graph join of the facts (advisor/facts/graph_join.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..facts.builder import FactSet
from ..facts.graph_join import GraphJoin
from . import Finding, GraphNode, Neighbourhood

MAX_DRAWN = 6   # inputs and successors drawn around the root cause, each


def root_neighbourhood(facts: FactSet, root: Finding | None) -> Neighbourhood | None:
    """The root cause's op in the graph, when a graph was given and the op is in it."""
    if facts.join is None or root is None or root.index is None:
        return None
    try:
        position = facts.ops.index.get_loc(root.index)
    except KeyError:
        return None
    return neighbourhood(facts.join, int(position), facts.ops) if isinstance(position, (int, np.integer)) else None


def neighbourhood(join: GraphJoin, position: int, ops: pd.DataFrame) -> Neighbourhood | None:
    """The op at ``position`` of the per-op frame ``ops`` with its graph inputs and first successors."""
    own = join.nodes_of(position)
    if not own:
        return None
    graph = join.graph
    nodes = graph.nodes
    own_set = set(own)
    inputs = list(dict.fromkeys(j for i in own for j in graph.predecessor_indices(i) if j not in own_set))
    outputs = list(dict.fromkeys(j for i in own for j in graph.successor_indices(i) if j not in own_set))
    source_names = [e.source for i in own for e in nodes[i].inputs
                    if e.source in join.graph_inputs and e.source not in graph.index]
    cosine = ops["out_cosine"].to_numpy(dtype=float)
    deviates = ops["out_deviates"].to_numpy(dtype=bool)
    compared = (ops["out_cosine"].notna() | ops["out_nonfinite"]).to_numpy(dtype=bool)

    def numbers(p: int | None) -> tuple[float | None, bool | None]:
        if p is None or not compared[p]:
            return None, None
        value = float(cosine[p])
        return (value if np.isfinite(value) else None), bool(deviates[p])

    def drawn(i: int, role: str) -> GraphNode:
        node = nodes[i]
        cos, dev = numbers(join.op_of_node.get(i))
        return GraphNode(name=node.name, op_type=node.op_type, role=role,
                         fused_from=list(node.fused_from) if len(node.fused_from) > 1 else [],
                         passes=list(node.passes), cosine=cos, deviates=dev)

    focus_name = str(ops["op"].iloc[position])
    fused = ops["fused_from"].iloc[position] if "fused_from" in ops else None
    passes = ops["fusion_passes"].iloc[position] if "fusion_passes" in ops else None
    cos, dev = numbers(position)
    op_type = ops["op_type"].iloc[position]   # NA (NaN in a coded column) or "": the graph's type
    if not (isinstance(op_type, str) and op_type):
        op_type = nodes[own[0]].op_type
    focus = GraphNode(name=focus_name, op_type=op_type,
                      role="focus", fused_from=str(fused).split(",") if isinstance(fused, str) else [],
                      passes=str(passes).split(",") if isinstance(passes, str) else [], cosine=cos, deviates=dev)
    drawn_nodes: list[GraphNode] = []
    edges: list[tuple[str, str]] = []
    for name in source_names[:MAX_DRAWN]:
        cos_in, dev_in = numbers(join.op_of_name.get(name))
        drawn_nodes.append(GraphNode(name=name, op_type="input", role="input", cosine=cos_in, deviates=dev_in))
        edges.append((name, focus_name))
    for i in inputs[:max(0, MAX_DRAWN - len(drawn_nodes))]:
        drawn_nodes.append(drawn(i, "input"))
        edges.append((nodes[i].name, focus_name))
    drawn_nodes.append(focus)
    for i in outputs[:MAX_DRAWN]:
        drawn_nodes.append(drawn(i, "output"))
        edges.append((focus_name, nodes[i].name))
    shown_inputs = sum(1 for n in drawn_nodes if n.role == "input")
    return Neighbourhood(focus=focus_name, nodes=drawn_nodes, edges=edges,
                         graph=str(graph.source) if graph.source else graph.name, side=join.side,
                         more_inputs=len(inputs) + len(source_names) - shown_inputs,
                         more_outputs=max(0, len(outputs) - MAX_DRAWN))
