"""Decomposition patterns (``knowledge/fusion_patterns.yaml``) and where they occur in a golden graph.

A pattern is data: the golden subgraph a compiler fuses into one target op (a written-out LayerNorm,
GELU, softmax...), the roles of its nodes, which node's output is each output slot of the fused op
and which pattern input each input slot reads. :func:`find_instances` matches every pattern in a
:class:`~advisor.tensors.golden_graph.GoldenGraph`, from the final output node backwards, trying
both input orders of commutative ops; a match whose inner tensors are read from outside is no match
(the fused op hides them). Overlapping matches are resolved largest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import permutations
from pathlib import Path

from ..errors import KnowledgeError
from ..resources import data_dir
from ..yamlfile import load_yaml
from .golden_graph import GoldenGraph, Ref

CONST = "const"
COMMUTATIVE = frozenset({"add", "mul", "max", "min", "sum"})


@dataclass(frozen=True)
class PatternNode:
    role: str
    op_types: frozenset[str]          # lower case
    inputs: tuple[str, ...]           # roles, pattern inputs, or CONST


@dataclass(frozen=True)
class Pattern:
    name: str
    target_types: frozenset[str]      # lower case
    passes: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: dict[str, PatternNode]

    @property
    def final(self) -> str:
        return self.outputs[0]


@dataclass(frozen=True)
class Instance:
    """One match: golden op per role, what each pattern input is bound to (None: a constant)."""

    pattern: Pattern
    ops: dict[str, str]                                    # role -> golden op
    bound: dict[str, Ref | None]                           # pattern input -> golden tensor

    @property
    def members(self) -> list[str]:
        return list(self.ops.values())

    @property
    def final_op(self) -> str:
        return self.ops[self.pattern.final]

    def output_refs(self) -> list[Ref]:
        return [(self.ops[role], 0) for role in self.pattern.outputs]

    def input_refs(self) -> list[Ref | None]:
        return [self.bound.get(name) for name in self.pattern.inputs]


@cache
def load_patterns(path: Path | None = None) -> tuple[Pattern, ...]:
    """Every pattern of ``knowledge/fusion_patterns.yaml`` (or ``path``), checked."""
    path = path or data_dir("knowledge") / "fusion_patterns.yaml"
    raw = load_yaml(path, KnowledgeError)
    entries = raw.get("patterns") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise KnowledgeError("expected 'patterns:' with a list of patterns", path=path)
    return tuple(_pattern(entry, path, i) for i, entry in enumerate(entries))


def _strings(value: object, path: Path, where: str) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise KnowledgeError("expected a name or a list of names", path=path, field=where)
    return tuple(values)


def _pattern(entry: object, path: Path, i: int) -> Pattern:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise KnowledgeError("a pattern is a mapping with a 'name'", path=path, field=f"patterns[{i}]")
    name = entry["name"]
    line = entry.where()[0] if hasattr(entry, "where") else None
    nodes_raw = entry.get("nodes")
    if not isinstance(nodes_raw, dict) or not nodes_raw:
        raise KnowledgeError("'nodes' maps each role to {op, inputs}", path=path, line=line, field=f"{name}.nodes")
    inputs = _strings(entry.get("inputs", []), path, f"{name}.inputs")
    nodes = {}
    for role, spec in nodes_raw.items():
        if not isinstance(spec, dict) or "op" not in spec:
            raise KnowledgeError("a node is {op: TYPE, inputs: [...]}", path=path, line=line, field=f"{name}.{role}")
        node_inputs = _strings(spec.get("inputs", []), path, f"{name}.{role}.inputs")
        unknown = [n for n in node_inputs if n not in nodes_raw and n not in inputs and n != CONST]
        if unknown:
            raise KnowledgeError(f"'{unknown[0]}' is neither a node, a pattern input nor '{CONST}'", path=path,
                                 line=line, field=f"{name}.{role}.inputs")
        nodes[str(role)] = PatternNode(str(role), frozenset(t.lower() for t in _strings(spec["op"], path, role)),
                                       node_inputs)
    outputs = _strings(entry.get("outputs", []), path, f"{name}.outputs")
    if not outputs or any(o not in nodes for o in outputs):
        raise KnowledgeError("'outputs' lists nodes, the final output first", path=path, line=line,
                             field=f"{name}.outputs")
    pattern = Pattern(name, frozenset(t.lower() for t in _strings(entry.get("target_types", []), path, name)),
                      _strings(entry.get("passes", []), path, f"{name}.passes"), inputs, outputs, nodes)
    unreached = set(nodes) - _reachable(pattern)
    if unreached:
        raise KnowledgeError(f"nodes {sorted(unreached)} do not lead to the final output '{pattern.final}'",
                             path=path, line=line, field=f"{name}.nodes")
    return pattern


def _reachable(pattern: Pattern) -> set[str]:
    seen, stack = set(), [pattern.final]
    while stack:
        role = stack.pop()
        if role in seen:
            continue
        seen.add(role)
        stack.extend(n for n in pattern.nodes[role].inputs if n in pattern.nodes)
    return seen


def find_instances(graph: GoldenGraph, patterns: tuple[Pattern, ...]) -> list[Instance]:
    """Every match of ``patterns`` in ``graph`` that no larger match overlaps, in graph order."""
    found: list[Instance] = []
    for pattern in patterns:
        final_types = pattern.nodes[pattern.final].op_types
        for op in graph.ops.values():
            if op.op_type.lower() in final_types:
                match = _match(graph, pattern, op.name)
                if match is not None:
                    found.append(match)
    taken: set[str] = set()
    kept: list[Instance] = []
    for instance in sorted(found, key=lambda m: -len(m.ops)):
        if not taken.intersection(instance.members):
            kept.append(instance)
            taken.update(instance.members)
    return sorted(kept, key=lambda m: graph.rank[m.final_op])


def _match(graph: GoldenGraph, pattern: Pattern, final: str) -> Instance | None:
    for ops, bound in _bind(graph, pattern, pattern.final, final, {}, {}):
        members = set(ops.values())
        inner = [(name, 0) for role, name in ops.items() if role != pattern.final]
        if len(members) == len(ops) and not any(graph.is_read_outside(ref, members) for ref in inner):
            return Instance(pattern, dict(ops), dict(bound))
    return None


def _bind(graph: GoldenGraph, pattern: Pattern, role: str, op_name: str, ops: dict[str, str],
          bound: dict[str, Ref | None]):
    """Every way to bind ``role`` (and what it reads, recursively) to ``op_name``: (ops, bound) pairs."""
    if role in ops:
        if ops[role] == op_name:
            yield ops, bound
        return
    node, op = pattern.nodes[role], graph.ops.get(op_name)
    if op is None or op.op_type.lower() not in node.op_types or len(op.inputs) < len(node.inputs):
        return
    if any(ref is not None for ref in op.inputs[len(node.inputs):]):
        return                                            # extra inputs must be constants (axes)
    given = op.inputs[:len(node.inputs)]
    orders = set(permutations(range(len(given)))) if op.op_type.lower() in COMMUTATIVE and len(given) == 2 \
        else {tuple(range(len(given)))}
    for order in sorted(orders):
        yield from _bind_inputs(graph, pattern, node.inputs, [given[k] for k in order], {**ops, role: op_name},
                                bound)


def _bind_inputs(graph: GoldenGraph, pattern: Pattern, names: tuple[str, ...], refs: list[Ref | None],
                 ops: dict[str, str], bound: dict[str, Ref | None]):
    if not names:
        yield ops, bound
        return
    name, ref, rest_names, rest_refs = names[0], refs[0], names[1:], refs[1:]
    if name == CONST:
        if ref is None:
            yield from _bind_inputs(graph, pattern, rest_names, rest_refs, ops, bound)
    elif name in pattern.nodes:
        if ref is not None and ref[1] == 0:
            for ops2, bound2 in _bind(graph, pattern, name, ref[0], ops, bound):
                yield from _bind_inputs(graph, pattern, rest_names, rest_refs, ops2, bound2)
    elif name not in bound:
        yield from _bind_inputs(graph, pattern, rest_names, rest_refs, ops, {**bound, name: ref})
    elif bound[name] == ref:
        yield from _bind_inputs(graph, pattern, rest_names, rest_refs, ops, bound)
