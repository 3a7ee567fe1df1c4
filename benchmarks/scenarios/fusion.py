"""Which golden ops the emulated compiler fuses into one target op (ATC-style patterns).

The default patterns are chains of sole consumers: ``[Pad+]Conv[+BatchNormalization][+Relu|PRelu]``,
``Gemm+PRelu``, ``MatMul+Add``. ``fusions`` adds others by name (:data:`FUSIONS`): ``layer_norm`` is the
written-out LayerNorm ATC's ``LayerNormONNXFusionPass`` turns into one ``LayerNorm`` op.
"""

from __future__ import annotations

from benchmarks.scenarios.graph import GoldenGraph, GoldenOp


def _sole_consumer(graph: GoldenGraph, tensor: str) -> GoldenOp | None:
    if tensor in graph.outputs:
        return None
    consumers = graph.consumers(tensor)
    return consumers[0] if len(consumers) == 1 else None


#: The fusions beyond the default ones a scenario may ask for (``plan_target(fusions=...)``).
FUSIONS = ("layer_norm",)


def layer_norm(graph: GoldenGraph, mean: GoldenOp) -> list[GoldenOp] | None:
    """The written-out LayerNorm that starts at ReduceMean ``mean``, as ATC's LayerNormONNXFusionPass
    matches it: x -> ReduceMean -> Sub(x, mean) -> Pow -> ReduceMean -> Add -> Sqrt -> Div(Sub, Sqrt)
    -> Mul -> Add, every inner tensor read only inside (the Sub by Pow and Div)."""
    if mean.op_type != "ReduceMean" or len(mean.inputs) != 1:
        return None
    chain = [mean]
    sub = _sole_consumer(graph, mean.name)
    if sub is None or sub.op_type != "Sub" or sub.inputs != [mean.inputs[0], mean.name]:
        return None
    users = graph.consumers(sub.name)
    power = next((u for u in users if u.op_type == "Pow"), None)
    divide = next((u for u in users if u.op_type == "Div"), None)
    if len(users) != 2 or power is None or divide is None:
        return None
    chain += [sub, power]
    for expected in ("ReduceMean", "Add", "Sqrt"):
        nxt = _sole_consumer(graph, chain[-1].name)
        if nxt is None or nxt.op_type != expected:
            return None
        chain.append(nxt)
    if _sole_consumer(graph, chain[-1].name) is not divide or divide.inputs != [sub.name, chain[-1].name]:
        return None
    chain.append(divide)
    for expected in ("Mul", "Add"):
        nxt = _sole_consumer(graph, chain[-1].name)
        if nxt is None or nxt.op_type != expected or len(nxt.inputs) != 1:
            return None
        chain.append(nxt)
    return chain


def fusion_groups(graph: GoldenGraph, fusions: tuple[str, ...] = ()) -> list[list[GoldenOp]]:
    """Greedy pattern matching in execution order (the patterns are chains of sole consumers, and
    the LayerNorm subgraph when ``fusions`` asks for it)."""
    groups: list[list[GoldenOp]] = []
    taken: set[str] = set()
    for op in graph.ops:
        if op.name in taken:
            continue
        normalisation = layer_norm(graph, op) if "layer_norm" in fusions else None
        if normalisation is not None:
            groups.append(normalisation)
            taken.update(g.name for g in normalisation)
            continue
        group = [op]
        nxt = _sole_consumer(graph, op.name)
        if op.op_type == "Pad" and nxt is not None and nxt.op_type == "Conv":
            group.append(nxt)
        if group[-1].op_type == "Conv":
            follow = [("BatchNormalization",), ("Relu", "PRelu")]
        elif group[-1].op_type == "Gemm":
            follow = [("PRelu",)]
        elif group[-1].op_type == "MatMul":
            follow = [("Add",)]
        else:
            follow = []
        for allowed in follow:
            nxt = _sole_consumer(graph, group[-1].name)
            if nxt is not None and nxt.op_type in allowed and len(nxt.inputs) == 1:
                group.append(nxt)
        groups.append(group)
        taken.update(g.name for g in group)
    return groups
