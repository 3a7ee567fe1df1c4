"""Which golden ops each target op was fused from: the ``GroundTruth`` of a comparison row.

A fused target op (``Conv_0`` computing Conv+BatchNorm+ReLU) must be compared with the golden
output of the *last* op of its group, and its inputs with what feeds the *first*. Where the group
comes from, best first:

``--graph model.onnx``       the golden ONNX graph (needs ``pip install onnx``): a golden op with no
                             target op of its own joins the group of the op that feeds it when it is
                             that op's only consumer (Conv -> BatchNorm -> Relu), otherwise the group
                             of the op it feeds (Pad -> Conv).
``--graph ge_proto_*.txt``   the GE graph dump: ``_datadump_original_op_names`` of each op (an empty
                             list marks an op the compiler inserted, GroundTruth ``*``).
``--graph mapping.json``     ``{"<target op>": "GoldenA,GoldenB" | ["GoldenA", "GoldenB"]}``: the
                             GroundTruth column of an earlier comparison, written by hand or a tool.
no graph                     names and execution order: a target op pairs with the golden op of the
                             same name; a golden op with no target op joins the group of the nearest
                             preceding one when its output has the same shape (a fused activation or
                             bias add), else the group of the next one (a fused Pad); golden tensors
                             before the first target op are network inputs.

The last is a heuristic: a golden op the compiler removed (not fused) is taken as fused into its
neighbour, and a fused op that changes the shape (a fused pooling) is attached to the wrong side.
Give a graph whenever the comparison must be exact. This module reads only what pairing needs;
``advisor.graph`` is the full graph model.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFormatError
from ..nesting import loads_json
from .dump_names import safe_name


@dataclass
class FusionMap:
    """Target op -> the golden ops it computes, and what a graph says about their tensors.

    Every name is in its dump-file ("safe") form. ``inputs`` and ``outputs`` only come from an
    ONNX graph: the golden tensors (producer op, output slot) feeding each group in slot order,
    and the network outputs in graph order.
    """

    source: str                                                  # onnx | ge-text | json | names
    groups: dict[str, list[str]] = field(default_factory=dict)    # [] -> target-only op
    inputs: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    outputs: list[tuple[str, int]] = field(default_factory=list)


def read_fusion_map(path: Path, target_shapes: dict[str, tuple[int, ...]],
                    golden_shapes: dict[str, tuple[int, ...]]) -> FusionMap:
    """The fusion map of an ONNX model, a GE text graph dump or a JSON mapping (told apart by
    content). ``target_shapes``/``golden_shapes``: the first output shape of each op in the dumps
    (safe names); an ONNX graph needs them to tell fused golden ops from those with a target op
    of their own, and a fused activation (same shape) from a fused Pad (another shape)."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise InputFormatError(f"cannot read the graph ({exc.strerror or exc})", path=path) from None
    text_head = head.decode("utf-8", errors="replace").lstrip()
    if text_head.startswith("{") or text_head.startswith("["):
        return _read_json_mapping(path)
    if re.match(r"graph\s*\{", text_head):
        return _read_ge_text(path)
    return _read_onnx(path, target_shapes, golden_shapes)


# --- JSON mapping ------------------------------------------------------------------------------

def _read_json_mapping(path: Path) -> FusionMap:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise InputFormatError(f"cannot read ({exc})", path=path) from None
    data = loads_json(text, path, InputFormatError)
    if not isinstance(data, dict):
        raise InputFormatError('a fusion mapping is a JSON object {"<target op>": "GoldenA,GoldenB"}', path=path)
    groups: dict[str, list[str]] = {}
    for op, golden in data.items():
        names = golden.split(",") if isinstance(golden, str) else golden
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputFormatError("expected a comma-joined string or a list of golden op names",
                                   path=path, field=str(op))
        groups[safe_name(op)] = [safe_name(n.strip()) for n in names if n.strip() and n.strip() != "*"]
    return FusionMap("json", groups)


# --- GE graph dump (protobuf text) -------------------------------------------------------------

_FIELD = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*"((?:[^"\\]|\\.)*)"\s*$')
_OPEN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\{\s*$")
_ORIGINAL_NAMES = "_datadump_original_op_names"


def _read_ge_text(path: Path) -> FusionMap:
    """Op names and ``_datadump_original_op_names`` from ``ge_proto_*_Build.txt``, line by line."""
    groups: dict[str, list[str]] = {}
    stack: list[str] = []
    op_name: str | None = None
    attr_key: str | None = None
    originals: list[str] | None = None
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            stripped = line.strip()
            opened = _OPEN.match(line)
            if opened:
                stack.append(opened.group(1))
                if stack[-2:] == ["graph", "op"]:
                    op_name, originals = None, None
                continue
            if stripped == "}":
                if not stack:
                    raise InputFormatError("unbalanced '}'", path=path, line=number)
                closed = stack.pop()
                if closed == "op" and stack and stack[-1] == "graph" and op_name is not None:
                    if originals is not None:
                        groups[safe_name(op_name)] = list(dict.fromkeys(safe_name(n) for n in originals))
                elif closed == "attr":
                    attr_key = None
                continue
            found = _FIELD.match(line)
            if not found:
                continue
            key, value = found.group(1), found.group(2).replace('\\"', '"').replace("\\\\", "\\")
            if stack[-2:] == ["graph", "op"] and key == "name":
                op_name = value
            elif stack and stack[-1] == "attr" and key == "key":
                attr_key = value
                if value == _ORIGINAL_NAMES:
                    originals = []
            elif stack[-2:] == ["value", "list"] and key == "s" and attr_key == _ORIGINAL_NAMES:
                assert originals is not None
                originals.append(value)
    if stack:
        raise InputFormatError(f"the graph ends inside '{stack[-1]} {{'", path=path)
    return FusionMap("ge-text", groups)


# --- ONNX ------------------------------------------------------------------------------------

def _read_onnx(path: Path, target_shapes: dict[str, tuple[int, ...]],
               golden_shapes: dict[str, tuple[int, ...]]) -> FusionMap:
    try:
        import onnx
    except ImportError:
        raise InputFormatError("reading an ONNX graph needs the onnx package: pip install onnx", path=path) from None
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types for a bad file
        raise InputFormatError(f"not an ONNX model ({type(exc).__name__}: {exc})", path=path) from None
    graph = model.graph
    nodes = [(safe_name(n.name or (n.output[0] if n.output else f"node_{i}")), list(n.input), list(n.output))
             for i, n in enumerate(graph.node)]
    constants = {init.name for init in graph.initializer}
    producer: dict[str, tuple[str, int]] = {inp.name: (safe_name(inp.name), 0) for inp in graph.input
                                            if inp.name not in constants}
    for name, _, outputs in nodes:
        producer.update((tensor, (name, slot)) for slot, tensor in enumerate(outputs))
    consumers: dict[str, list[str]] = defaultdict(list)
    for name, inputs, _ in nodes:
        for tensor in inputs:
            if tensor in producer:
                consumers[tensor].append(name)
    groups = _onnx_groups(nodes, producer, consumers, target_shapes, golden_shapes)
    groups.update({p[0]: [p[0]] for p in producer.values() if p[0] in target_shapes and p[0] not in groups})
    reads = {name: [producer[t] for t in inputs if t in producer] for name, inputs, _ in nodes}
    inputs: dict[str, list[tuple[str, int]]] = {}
    for owner, members in groups.items():
        inside = set(members)
        external: list[tuple[str, int]] = []
        for member in members:
            external.extend(p for p in reads.get(member, []) if p[0] not in inside and p not in external)
        inputs[owner] = external
    outputs = [producer[out.name] for out in graph.output if out.name in producer]
    return FusionMap("onnx", groups, inputs, outputs)


def _onnx_groups(nodes: list[tuple[str, list[str], list[str]]], producer: dict[str, tuple[str, int]],
                 consumers: dict[str, list[str]], target_shapes: dict[str, tuple[int, ...]],
                 golden_shapes: dict[str, tuple[int, ...]]) -> dict[str, list[str]]:
    """Fold each golden op without a target op into a neighbour's group (module docstring).

    Forward pass: an op joins the group of its only activation producer when that producer is
    the group's current last op, this op is its only consumer, and its output has the shape of
    the target op's output (the fused op's output *is* this op's). Backward pass over the rest:
    an op joins the group of the ops it feeds when they all belong to one group.
    """
    group_of: dict[str, str] = {}           # golden op -> target op whose group holds it
    tail: dict[str, str] = {}               # target op -> last golden op of its group
    groups: dict[str, list[str]] = {}
    pending: list[tuple[str, list[str]]] = []
    for name, inputs, outputs in nodes:
        if name in target_shapes:
            groups[name], group_of[name], tail[name] = [name], name, name
            continue
        activations = [t for t in inputs if t in producer and producer[t][0] in group_of]
        feeders = {producer[t][0] for t in activations}
        feeder = feeders.pop() if len(feeders) == 1 else None
        owner = group_of.get(feeder) if feeder else None
        same_shape = owner is not None and golden_shapes.get(name, target_shapes[owner]) == target_shapes[owner]
        if same_shape and tail[owner] == feeder and all(len(consumers[t]) == 1 for t in activations):
            groups[owner].append(name)
            group_of[name], tail[owner] = owner, name
        else:
            pending.append((name, [c for t in outputs for c in consumers[t]]))
    for name, users in reversed(pending):
        owners = {group_of[u] for u in users if u in group_of}
        if len(owners) == 1:
            owner = owners.pop()
            groups[owner].insert(0, name)
            group_of[name] = owner
    return groups


# --- no graph --------------------------------------------------------------------------------

def fuse_by_names(golden_order: list[tuple[str, tuple[int, ...]]],
                  target_shapes: dict[str, tuple[int, ...]]) -> FusionMap:
    """The no-graph heuristic (module docstring): ``golden_order`` is (golden op, first output
    shape) in execution order; ``target_shapes`` the first output shape of each target op."""
    groups: dict[str, list[str]] = {}
    previous: str | None = None
    pending: list[str] = []
    for name, shape in golden_order:
        if name in target_shapes:
            # Golden tensors before the first target op are the network inputs (no Data op was
            # dumped), not ops fused into it.
            groups[name] = [*pending, name] if previous is not None else [name]
            pending, previous = [], name
        elif previous is not None and not pending and shape == target_shapes.get(previous):
            groups[previous].append(name)
        else:
            pending.append(name)
    return FusionMap("names", groups)
