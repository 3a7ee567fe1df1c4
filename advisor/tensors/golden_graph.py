"""The golden graph as pairing sees it: ops, the tensors they read and who reads what they write.

Built from an ONNX model read by :mod:`advisor.graph` (every name in its dump-file "safe" form, the
form golden dump files carry). A tensor is a :data:`Ref` ``(op, output slot)``; a graph input is
``(input name, 0)``. Weights (initializers) and the outputs of ``Constant`` nodes are *constants*:
no golden dump holds them, so an input that reads one is ``None``. ``Constant`` nodes are not ops.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..graph import Graph
from .dump_names import safe_name

Ref = tuple[str, int]
CONSTANT_OPS = frozenset({"constant"})


@dataclass
class GoldenOp:
    name: str
    op_type: str
    inputs: list[Ref | None]        # None: a constant (weights, a Constant node's output)
    outputs: list[Ref]


@dataclass
class GoldenGraph:
    ops: dict[str, GoldenOp]                            # in execution (file) order
    inputs: list[str]                                   # network inputs
    outputs: list[Ref]                                  # network outputs, in graph order
    readers: dict[Ref, list[str]] = field(default_factory=dict)   # tensor -> ops reading it

    def __post_init__(self) -> None:
        self.rank = {name: i for i, name in enumerate(self.ops)}      # execution order

    def is_read_outside(self, ref: Ref, members: set[str]) -> bool:
        """``ref`` leaves the group ``members``: an op outside reads it, or it is a network output."""
        return ref in self.outputs or any(r not in members for r in self.readers.get(ref, ()))

    def external_inputs(self, members: list[str]) -> list[Ref | None]:
        """What the group reads from outside, in order of first use (constants as None, each kept
        in its place: the i-th input of a one-op group is that op's i-th input)."""
        inside = set(members)
        found: list[Ref | None] = []
        for name in members:
            for ref in self.ops[name].inputs:
                if ref is None or (ref[0] not in inside and ref not in found):
                    found.append(ref)
        return found

    def activations(self, members: list[str]) -> list[Ref]:
        """The non-constant tensors the group reads from outside."""
        return [ref for ref in self.external_inputs(members) if ref is not None]

    def leaving(self, members: list[str]) -> list[Ref]:
        """The group's outputs that are read outside it, in member and slot order."""
        inside = set(members)
        return [ref for name in members for ref in self.ops[name].outputs if self.is_read_outside(ref, inside)]


def golden_graph(graph: Graph) -> GoldenGraph:
    """The pairing view of a golden model graph (ONNX)."""
    constants = set(graph.initializers)
    producers: dict[str, Ref] = {name: (safe_name(name), 0) for name in graph.inputs if name not in constants}
    constant_nodes = {node.name for node in graph.nodes if node.op_type.lower() in CONSTANT_OPS}
    ops: dict[str, GoldenOp] = {}
    for node in graph.nodes:
        if node.name in constant_nodes:
            continue
        name = safe_name(node.name)
        outputs = [(name, slot) for slot in range(max(1, len(node.outputs)))]
        inputs: list[Ref | None] = []
        for edge in node.inputs:
            if edge.source in constant_nodes or edge.tensor in constants:
                inputs.append(None)
            elif edge.source == edge.tensor:            # a network input, by its tensor name
                inputs.append(producers.get(edge.tensor, (safe_name(edge.tensor), 0)))
            else:
                inputs.append((safe_name(edge.source), edge.index))
        ops[name] = GoldenOp(name, node.op_type, inputs, outputs)
        for slot, tensor in enumerate(node.outputs):
            producers.setdefault(tensor, (name, slot))
    readers: dict[Ref, list[str]] = defaultdict(list)
    for op in ops.values():
        for ref in op.inputs:
            if ref is not None and op.name not in readers[ref]:
                readers[ref].append(op.name)
    outputs = [producers[t] for t in graph.outputs if t in producers]
    return GoldenGraph(ops, [safe_name(n) for n in graph.inputs if n not in constants], outputs, dict(readers))
