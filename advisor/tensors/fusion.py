"""Which golden ops each target op computes, and which golden tensor stands for each of its slots.

A fused target op (``Conv_0`` computing Conv+BatchNorm+ReLU, ``Add_10/LayerNorm`` computing nine
golden ops) is compared with the golden subgraph it replaced: its outputs with the subgraph's final
output, its inputs with what the subgraph reads from outside. How a target op is linked to golden
ops, best first (each row of the CSV says which, see :mod:`pairing`):

``fusion-info``  the target graph (GE dump, OM JSON: ``_datadump_original_op_names``) or ``map``, a
                 map file, names the golden ops; with the golden graph beside it, a decomposition
                 pattern covering exactly those ops says which is each output slot (LayerNorm: y,
                 mean, variance) and which tensor each input slot reads (x, gamma, beta)
``name``         the target op has a golden op's name, or a name a compiler derives from one
                 (ATC names the op a fusion pass creates ``<last golden op>/<Type>``)
``pattern``      with the golden graph: a decomposition pattern (knowledge/fusion_patterns.yaml)
                 whose final op is the target op's name, or, for a target op of a pattern's type with
                 no name link, whose input is the golden tensor the target op's input holds (found
                 through the dumps, :mod:`pairing`), and only when exactly one match does
``graph``        with the golden graph, golden ops without a target op of their own fold into a
                 named group: into the op that feeds them when they are its only reader and keep its
                 output shape (Conv -> BatchNorm -> Relu), else into the group of the ops they feed
``order``        without any graph: names and execution order. A golden op without a target op joins
                 the nearest preceding group when its output has that op's shape, else the next
                 group (a fused Pad); golden tensors before the first target op are network inputs.

Golden ops that belong to a pattern match the target op has not been linked to are never folded
into a neighbour's group. ``order`` is the one heuristic: give a graph when the comparison must be
exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalogs import load_catalog
from .fusion_sources import FusionSources
from .golden_graph import GoldenGraph, Ref
from .patterns import Instance, Pattern, find_instances, load_patterns

# Inserted ops whose output keeps their input's meaning (knowledge/ops/pass_through.yaml).
PASS_THROUGH = frozenset(load_catalog("pass_through"))


@dataclass(frozen=True)
class TargetOpInfo:
    name: str                          # safe name
    op_type: str | None
    shape: tuple[int, ...]             # first output shape (() when it has none)


@dataclass
class FusionMap:
    """Target op -> golden ops, how that is known, and the golden tensor of each slot where known.

    ``outputs_of``/``inputs_of``: per target op, the golden tensor of each output / input slot
    (``None``: no golden tensor: a constant, or not known). Without an entry, output slot k of a
    group is output k of its last op, and inputs are found through the dumps. ``candidates``: pattern
    matches no target op is linked to yet (the planner links them through the dumps).
    """

    source: str
    groups: dict[str, list[str]] = field(default_factory=dict)      # [] -> inserted by the compiler
    how: dict[str, str] = field(default_factory=dict)
    outputs_of: dict[str, list[Ref | None]] = field(default_factory=dict)
    inputs_of: dict[str, list[Ref | None]] = field(default_factory=dict)
    outputs: list[Ref] = field(default_factory=list)                 # network outputs (golden graph)
    candidates: list[Instance] = field(default_factory=list)
    golden: GoldenGraph | None = None
    real_names: dict[str, str] = field(default_factory=dict)        # safe target op name -> the graph's

    def link(self, op: str, instance: Instance, how: str = "pattern") -> None:
        """Make ``op`` the fused op of pattern match ``instance``."""
        assert self.golden is not None
        self.groups[op] = sorted(instance.members, key=self.golden.rank.__getitem__)
        self.how[op] = how
        self.outputs_of[op] = list(instance.output_refs())
        self.inputs_of[op] = instance.input_refs()
        if instance in self.candidates:
            self.candidates.remove(instance)

    def candidates_for(self, op_type: str | None) -> list[Instance]:
        kind = (op_type or "").lower()
        return [i for i in self.candidates if kind in i.pattern.target_types]


def derived_anchor(op: TargetOpInfo, golden_ops: set[str]) -> str | None:
    """The golden op whose name ``op``'s name is derived from: ATC names an op a fusion pass creates
    ``<golden op>/<Type>`` (``Add_10/LayerNorm``, safe form ``Add_10_LayerNorm``)."""
    suffix = f"_{op.op_type}" if op.op_type else None
    if suffix and op.name.endswith(suffix):
        stem = op.name[: -len(suffix)]
        if stem in golden_ops:
            return stem
    return None


def build_fusion_map(sources: FusionSources, targets: list[TargetOpInfo],
                     golden_order: list[tuple[str, tuple[int, ...]]]) -> FusionMap:
    """Link every target op to golden ops from what ``sources`` say (module docstring).
    ``golden_order``: (golden op, first output shape) in dump order, from the golden dumps."""
    golden_names = {name for name, _ in golden_order}
    if sources.golden is not None:
        golden_names |= set(sources.golden.ops) | set(sources.golden.inputs)
    anchors: dict[str, str] = {}                         # golden op -> target op named after it
    derived: dict[str, str] = {}
    for op in targets:
        if op.name in sources.mapped:
            continue
        if op.name in golden_names:
            anchors.setdefault(op.name, op.name)
        else:
            stem = derived_anchor(op, golden_names)
            if stem is not None:
                derived.setdefault(stem, op.name)
    fusion = FusionMap(_describe(sources), real_names=dict(sources.real_names))
    for name, mapped in sources.mapped.items():
        fusion.groups[name] = list(mapped.golden)
        fusion.how[name] = "map" if sources.mapped_by == "map" else "fusion-info"
        if mapped.outputs is not None:
            fusion.outputs_of[name] = list(mapped.outputs)
        if mapped.inputs is not None:
            fusion.inputs_of[name] = list(mapped.inputs)
    if sources.golden is not None:
        _with_golden_graph(fusion, sources, targets, anchors, derived, golden_order)
    else:
        for stem, op in derived.items():
            anchors.setdefault(stem, op)
        mapped_golden = {g for group in fusion.groups.values() for g in group}
        order = [(name, shape) for name, shape in golden_order if name not in mapped_golden]
        shapes = {op.name: op.shape for op in targets}
        linked = set(anchors.values()) | set(sources.mapped)
        for op, members in fuse_by_names(order, anchors, shapes, _after_unlinked(targets, linked)).items():
            fusion.groups[op] = members
            fusion.how[op] = "name" if len(members) == 1 else "order"
    return fusion


def _after_unlinked(targets: list[TargetOpInfo], linked: set[str]) -> set[str]:
    """Linked target ops that follow, since the previous linked op, a target op with no golden link
    that does not pass its input on: golden ops before them may be that op's, not theirs."""
    after: set[str] = set()
    gap = False
    for op in targets:
        if op.name in linked:
            if gap:
                after.add(op.name)
            gap = False
        elif (op.op_type or "").lower() not in PASS_THROUGH:
            gap = True
    return after


def _describe(sources: FusionSources) -> str:
    return " + ".join(sources.files) if sources.files else "names and execution order"


def _patterns(sources: FusionSources) -> tuple[Pattern, ...]:
    patterns = load_patterns()
    if sources.effective_passes is None:
        return patterns
    return tuple(p for p in patterns if not p.passes or sources.effective_passes.intersection(p.passes))


def _with_golden_graph(fusion: FusionMap, sources: FusionSources, targets: list[TargetOpInfo],
                       anchors: dict[str, str], derived: dict[str, str],
                       golden_order: list[tuple[str, tuple[int, ...]]]) -> None:
    golden = sources.golden
    assert golden is not None
    fusion.golden, fusion.outputs = golden, list(golden.outputs)
    instances = find_instances(golden, _patterns(sources))
    by_final = {i.final_op: i for i in instances}
    types = {op.name: (op.op_type or "").lower() for op in targets}
    for name, members in list(fusion.groups.items()):          # the target's fusion info, refined
        match = next((i for i in instances if set(i.members) == set(members)), None)
        if match is not None and name not in fusion.outputs_of:
            fusion.link(name, match, fusion.how[name])
    for stem, op in derived.items():
        instance = by_final.get(stem)
        if instance is not None and types[op] in instance.pattern.target_types:
            fusion.link(op, instance)
        else:
            anchors.setdefault(stem, op)
    named = set(anchors)
    taken = {g for group in fusion.groups.values() for g in group}
    fusion.candidates = [i for i in instances if not (set(i.members) & (named | taken))]
    excluded = taken | {g for i in fusion.candidates for g in i.members}
    shapes = {op.name: op.shape for op in targets}
    golden_shapes = dict(golden_order)
    for op, members in fold_groups(golden, anchors, excluded, shapes, golden_shapes).items():
        fusion.groups[op] = members
        fusion.how[op] = "name" if len(members) == 1 else "graph"
    for op, members in fusion.groups.items():
        if op not in fusion.inputs_of and members and all(m in golden.ops for m in members):
            fusion.inputs_of[op] = _graph_inputs(golden, members)


def _graph_inputs(golden: GoldenGraph, members: list[str]) -> list[Ref | None]:
    """What a group's input slots read, where the graph says it without doubt: a single op's own
    inputs in order; for a fused group, input 0 when the group reads one activation only."""
    if len(members) == 1:
        return list(golden.ops[members[0]].inputs)
    activations = golden.activations(members)
    return activations[:1] if len(activations) == 1 else []


def fold_groups(golden: GoldenGraph, anchors: dict[str, str], excluded: set[str],
                target_shapes: dict[str, tuple[int, ...]],
                golden_shapes: dict[str, tuple[int, ...]]) -> dict[str, list[str]]:
    """Fold each golden op without a target op into a neighbour's group (``graph`` in the module
    docstring). ``anchors``: golden op (or network input) -> the target op named after it."""
    group_of: dict[str, str] = {}           # golden op -> target op whose group holds it
    tail: dict[str, str] = {}               # target op -> last golden op of its group
    groups: dict[str, list[str]] = {}
    for name in golden.inputs:
        if name in anchors:
            owner = anchors[name]
            groups[owner], group_of[name], tail[owner] = [name], owner, name
    pending: list[tuple[str, list[str]]] = []
    for name, op in golden.ops.items():
        if name in excluded:
            continue
        if name in anchors:
            owner = anchors[name]
            groups.setdefault(owner, []).append(name)
            group_of[name], tail[owner] = owner, name
            continue
        activations = [r for r in op.inputs if r is not None and r[0] in group_of]
        feeders = {r[0] for r in activations}
        feeder = feeders.pop() if len(feeders) == 1 else None
        owner = group_of.get(feeder) if feeder else None
        same_shape = owner is not None and golden_shapes.get(name, target_shapes[owner]) == target_shapes[owner]
        if same_shape and tail[owner] == feeder and all(len(golden.readers.get(r, ())) == 1 for r in activations):
            groups[owner].append(name)
            group_of[name], tail[owner] = owner, name
        else:
            pending.append((name, [reader for ref in op.outputs for reader in golden.readers.get(ref, ())]))
    for name, users in reversed(pending):
        owners = {group_of[u] for u in users if u in group_of}
        if len(owners) == 1:
            owner = owners.pop()
            groups[owner].insert(0, name)
            group_of[name] = owner
    return groups


def fuse_by_names(golden_order: list[tuple[str, tuple[int, ...]]], anchors: dict[str, str],
                  target_shapes: dict[str, tuple[int, ...]], after_unlinked: set[str] = frozenset()
                  ) -> dict[str, list[str]]:
    """The no-graph heuristic (``order`` in the module docstring): ``golden_order`` is (golden op,
    first output shape) in execution order; ``anchors`` golden op -> the target op named after it;
    ``target_shapes`` the first output shape of each target op; ``after_unlinked`` target ops that
    follow a target op with no golden link (the golden ops before them are not theirs to take)."""
    groups: dict[str, list[str]] = {}
    previous: str | None = None
    pending: list[str] = []
    for name, shape in golden_order:
        owner = anchors.get(name)
        if owner is not None:
            # Golden tensors before the first target op are the network inputs (no Data op was
            # dumped), not ops fused into it.
            take = previous is not None and owner not in after_unlinked
            groups[owner] = [*pending, name] if take else [name]
            pending, previous = [], owner
        elif previous is not None and not pending and shape == target_shapes.get(previous):
            groups[previous].append(name)
        else:
            pending.append(name)
    return groups
