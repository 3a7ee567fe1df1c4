"""The graph model every reader produces: ``Graph`` of ``Node``s, joined later to the ComparisonTable
by op names (``Node.name`` = the table's ``op_name``; ``Node.fused_from`` = its ``golden_ops``).

Storage is a list of nodes plus integer adjacency lists built once, so a 100k-node graph costs
linear time and no per-query rescans. Edges:

- data edges come from ``Node.inputs`` (``Edge(source, index, tensor)``);
- control edges from ``Node.control_inputs`` (GE ``src:-1``); they order execution but carry no data;
- ``links`` are data flow the file states only indirectly: a GE subgraph's ``Data`` op is fed by what
  feeds its parent's matching input, and its ``NetOutput`` feeds the parent.

``predecessors``/``successors``/``neighbourhood`` follow data edges and links; ``topological_order``
also honours control edges.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import pandas as pd


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while a graph is built. Loading allocates millions of
    small dicts and lists, none of them cyclic, and each full collection rescans the growing heap:
    left on, the collector doubles or triples the load time of a large dump."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Edge(NamedTuple):
    """One data input of a node."""

    source: str   # producing node; for ONNX graph inputs and initializers, the tensor name itself
    index: int    # output slot of the source (0 for graph inputs and initializers)
    tensor: str   # the tensor as the file names it: ONNX value name, GE ``src:idx``


class TensorDesc(NamedTuple):
    """What a GE/ONNX file says about one input or output tensor (None: not stated)."""

    dtype: str | None = None          # normalised: float32, float16, bfloat16, int8, ...
    shape: tuple[int, ...] | None = None
    format: str | None = None         # NCHW, NC1HWC0, FRACTAL_Z, ND, ...
    origin_dtype: str | None = None   # before the compiler changed it (GE origin_data_type)
    origin_format: str | None = None
    origin_shape: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class InitializerStats:
    """A weight (ONNX initializer): its shape, dtype and value statistics (None when not loadable)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    channel_axis: int | None = None                   # the output-channel axis channel_abs_max is over
    channel_abs_max: tuple[float, ...] | None = None  # per output channel, for 4-D and 2-D weights


@dataclass(slots=True)
class Node:
    """One op of the target (or golden) graph, with the fusion evidence the compiler left on it.

    Treat it as read-only: the graph indexes nodes by name. (Not frozen only because a frozen
    dataclass builds three times slower, which a 100k-op graph notices.)"""

    name: str
    op_type: str
    inputs: tuple[Edge, ...] = ()
    control_inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    fused_from: tuple[str, ...] = ()       # original (golden) op names, deduplicated, order kept
    passes: tuple[str, ...] = ()           # fusion passes that touched the op (pass_name, pass_name_ub)
    fusion_scope: Any = None
    origin_name: str | None = None         # _datadump_origin_name
    origin_formats: tuple[str, ...] = ()   # _datadump_origin_format
    origin_dtypes: tuple[str, ...] = ()    # _datadump_origin_data_type, normalised
    input_descs: tuple[TensorDesc, ...] = ()
    output_descs: tuple[TensorDesc, ...] = ()
    op_id: int | None = None               # GE op id
    graph: str = ""                        # the (sub)graph the op belongs to
    parent: str | None = None              # the op that calls that subgraph (PartitionedCall, If, ...)
    subgraphs: tuple[str, ...] = ()        # subgraphs this op calls

    @property
    def is_fused(self) -> bool:
        """More than one original op went into this one."""
        return len(self.fused_from) > 1

    @property
    def is_inserted(self) -> bool:
        """The compiler added it (TransData, Cast...): it says it has no original op."""
        return "_datadump_original_op_names" in self.attributes and not self.fused_from


class Graph:
    """Nodes in the order the file lists them, with a name index.

    ``inputs``/``outputs`` are tensor names: ONNX value names; for GE the ``op:slot`` refs of the
    root graph's inputs (its Data ops) and of what feeds its NetOutput. ``initializers`` describes
    ONNX weights; ``attributes`` holds model- and graph-level attributes (OM: ``atc_cmdline``,
    ``soc_version``...); ``subgraphs`` maps each subgraph name to the op that calls it (None when
    the file does not say); ``warnings`` lists what was odd but not fatal.
    """

    def __init__(self, nodes: Iterable[Node], *, name: str = "", format: str = "", source: Path | None = None,
                 inputs: Iterable[str] = (), outputs: Iterable[str] = (),
                 initializers: Mapping[str, InitializerStats] | None = None,
                 attributes: Mapping[str, Any] | None = None, subgraphs: Mapping[str, str | None] | None = None,
                 links: Iterable[tuple[str, str]] = (), warnings: Iterable[str] = ()) -> None:
        self.nodes: list[Node] = list(nodes)
        self.name = name
        self.format = format
        self.source = source
        self.inputs: tuple[str, ...] = tuple(inputs)
        self.outputs: tuple[str, ...] = tuple(outputs)
        self.initializers: dict[str, InitializerStats] = dict(initializers or {})
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.subgraphs: dict[str, str | None] = dict(subgraphs or {})
        self.links: tuple[tuple[str, str], ...] = tuple(links)
        self.warnings: list[str] = list(warnings)
        self.index: dict[str, int] = {}
        duplicates = []
        for i, node in enumerate(self.nodes):
            if self.index.setdefault(node.name, i) != i:
                duplicates.append(node.name)
        if duplicates:
            self.warnings.append(f"{len(duplicates)} op names occur more than once (edges use the first), "
                                 f"e.g. {duplicates[0]!r}")
        with gc_paused():
            self._build_adjacency()
        self._golden: dict[str, tuple[str, ...]] | None = None

    def _build_adjacency(self) -> None:
        n = len(self.nodes)
        index = self.index
        preds: list[list[int]] = [[] for _ in range(n)]
        succs: list[list[int]] = [[] for _ in range(n)]
        ctrl_preds: list[list[int]] = [[] for _ in range(n)]
        dangling = []
        for j, node in enumerate(self.nodes):
            seen = set()
            for edge in node.inputs:
                i = index.get(edge.source)
                if i is None:
                    if edge.source != edge.tensor:  # it names a producing op (not a graph input or weight)
                        dangling.append(edge.source)
                elif i not in seen:
                    seen.add(i)
                    preds[j].append(i)
                    succs[i].append(j)
            for source in node.control_inputs:
                i = index.get(source)
                if i is None:
                    dangling.append(source)
                else:
                    ctrl_preds[j].append(i)
        for source, target in self.links:
            i, j = index.get(source), index.get(target)
            if i is not None and j is not None and i not in preds[j]:
                preds[j].append(i)
                succs[i].append(j)
        if dangling:
            self.warnings.append(f"{len(dangling)} inputs name ops that are not in the graph, e.g. {dangling[0]!r}")
        self._preds, self._succs, self._ctrl_preds = preds, succs, ctrl_preds

    # --- lookup -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __contains__(self, name: object) -> bool:
        return name in self.index

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, format={self.format!r}, nodes={len(self.nodes)})"

    def node(self, name: str) -> Node:
        try:
            return self.nodes[self.index[name]]
        except KeyError:
            raise KeyError(f"no op named {name!r} in graph {self.name!r}") from None

    @property
    def atc_cmdline(self) -> str | None:
        """The ATC command line an OM model was built with (OM JSON only)."""
        value = self.attributes.get("atc_cmdline")
        return value if isinstance(value, str) else None

    # --- edges --------------------------------------------------------------------------------------

    def predecessors(self, name: str) -> list[str]:
        """Ops whose outputs feed ``name`` (data edges and subgraph links), each once, in input order."""
        return [self.nodes[i].name for i in self._preds[self._position(name)]]

    def successors(self, name: str) -> list[str]:
        """Ops that consume an output of ``name``, each once, in file order."""
        return [self.nodes[j].name for j in self._succs[self._position(name)]]

    def predecessor_indices(self, position: int) -> list[int]:
        """``predecessors`` by node position (``self.index``): no name look-ups, for bulk joins."""
        return self._preds[position]

    def successor_indices(self, position: int) -> list[int]:
        """``successors`` by node position."""
        return self._succs[position]

    def control_predecessors(self, name: str) -> list[str]:
        return [self.nodes[i].name for i in self._ctrl_preds[self._position(name)]]

    def _position(self, name: str) -> int:
        try:
            return self.index[name]
        except KeyError:
            raise KeyError(f"no op named {name!r} in graph {self.name!r}") from None

    def topological_order(self) -> list[str]:
        """Every op once, producers before consumers (data and control edges); among ready ops the
        earliest in the file goes first, so a file already in execution order keeps its order. Ops
        on a cycle (TF while loops) follow in file order."""
        with gc_paused():
            return self._topological_order()

    def _topological_order(self) -> list[str]:
        n = len(self.nodes)
        indegree = [0] * n
        out: list[list[int]] = [[] for _ in range(n)]
        for j in range(n):
            for i in {*self._preds[j], *self._ctrl_preds[j]}:
                if i != j:
                    out[i].append(j)
                    indegree[j] += 1
        ready = [j for j in range(n) if indegree[j] == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for j in out[i]:
                indegree[j] -= 1
                if indegree[j] == 0:
                    heapq.heappush(ready, j)
        if len(order) < n:
            placed = set(order)
            order.extend(j for j in range(n) if j not in placed)
        return [self.nodes[i].name for i in order]

    def neighbourhood(self, name: str, depth: int = 2) -> Graph:
        """The subgraph around ``name``: its ancestors and descendants up to ``depth`` data edges
        away (not siblings), in file order. Edges to ops outside stay in ``Node.inputs`` but are
        not followed by the returned graph."""
        start = self._position(name)
        keep = {start}
        for adjacency in (self._preds, self._succs):
            frontier = [start]
            for _ in range(depth):
                frontier = list(dict.fromkeys(k for i in frontier for k in adjacency[i] if k not in keep))
                keep.update(frontier)
                if not frontier:
                    break
        nodes = [self.nodes[i] for i in sorted(keep)]
        names = {node.name for node in nodes}
        links = [(a, b) for a, b in self.links if a in names and b in names]
        sources = {edge.source for node in nodes for edge in node.inputs}
        tensors = {edge.tensor for node in nodes for edge in node.inputs}
        around = Graph(nodes, name=self.name, format=self.format, source=self.source,
                       inputs=[i for i in self.inputs if i in tensors], links=links,
                       initializers={k: v for k, v in self.initializers.items() if k in sources},
                       subgraphs={k: v for k, v in self.subgraphs.items() if v in names})
        around.warnings = []  # edges to ops outside the neighbourhood are expected, not dangling
        return around

    # --- fusion -------------------------------------------------------------------------------------

    @property
    def golden_to_target(self) -> dict[str, tuple[str, ...]]:
        """Original (golden) op name -> the target ops fused from it, in file order. One golden op
        can go into several target ops (a Const folded into two fused ops, a split BatchNorm)."""
        if self._golden is None:
            golden: dict[str, list[str]] = {}
            with gc_paused():
                for node in self.nodes:
                    for original in node.fused_from:  # deduplicated per node already
                        if original in golden:
                            golden[original].append(node.name)
                        else:
                            golden[original] = [node.name]
                self._golden = {k: tuple(v) for k, v in golden.items()}
        return self._golden

    def targets_of(self, golden_name: str) -> tuple[str, ...]:
        """The target ops fused from ``golden_name`` (empty when none says so)."""
        return self.golden_to_target.get(golden_name, ())

    def pass_counts(self) -> dict[str, int]:
        """Fusion pass name -> number of ops that carry it, most frequent first."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            for name in node.passes:
                counts[name] = counts.get(name, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_frame(self) -> pd.DataFrame:
        """One row per op, ready to join to the ComparisonTable on ``op_name`` (``golden_ops`` is
        comma-joined like the table's)."""
        with gc_paused():
            return self._frame()

    def _frame(self) -> pd.DataFrame:
        import pandas as pd  # here: advisor compare reads graphs for pairing and needs no table

        nodes = self.nodes
        first_dtype = [node.output_descs[0].dtype if node.output_descs else None for node in nodes]
        frame = pd.DataFrame({
            "position": range(len(nodes)),
            "op_name": [node.name for node in nodes],
            "op_type": [node.op_type for node in nodes],
            "golden_ops": [",".join(node.fused_from) if node.fused_from else None for node in nodes],
            "passes": [",".join(node.passes) if node.passes else None for node in nodes],
            "is_fused": [node.is_fused for node in nodes],
            "is_inserted": [node.is_inserted for node in nodes],
            "output_dtype": first_dtype,
            "graph": [node.graph for node in nodes],
            "parent": [node.parent for node in nodes],
            "in_degree": [len(p) for p in self._preds],
            "out_degree": [len(s) for s in self._succs],
        })
        for column in ("op_name", "op_type", "golden_ops", "passes", "output_dtype", "graph", "parent"):
            frame[column] = frame[column].astype("string")
        return frame
