"""Ascend target dumps against TF-style golden dumps: each row's golden tensor and how it was found.

See :mod:`pairing` for the rules. Row dtypes: the target's GE name from the array (``DT_FLOAT16``...),
except that bfloat16 tensors are stored as float32, so a float32 tensor holding only bfloat16 values
is labelled ``DT_BF16`` when the network computes in bfloat16 there: a Cast from float32, or an op
reading a bfloat16 input (or only integers). A Data op's output is what the user fed: ``DT_FLOAT``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalogs import load_catalog
from ..dtypes import ge_dtype_name
from .fusion import PASS_THROUGH, FusionMap
from .golden_graph import Ref
from .inventory import DumpFile, DumpFolder
from .lineage import TensorPrint
from .plan import TARGET_ONLY, Plan, PlannedRow, RowLabels, TargetOp, digest

# Op types that stand for a network input (knowledge/ops/network_input.yaml).
INPUT_OP_TYPES = frozenset(load_catalog("network_input"))
# Ops a build inserts after a network input to normalise it inside the model: their output is what
# the golden run was fed (knowledge/ops/input_normalizing.yaml).
INPUT_NORMALIZING = frozenset(load_catalog("input_normalizing"))
SHAPE_LABEL = "paired by shape only (--pair-by-shape)"


@dataclass(frozen=True)
class Partner:
    """The golden tensor a target tensor stands for, how that is known, or why there is none."""

    golden: DumpFile | None
    how: str = ""                  # RowLabels.paired_by
    why: str = ""                  # the reason when golden is None
    label: str = ""                # a note for the row (shape pairing)


class LineagePlanner:
    def __init__(self, golden: DumpFolder, ops: list[TargetOp], prints: dict[str, TensorPrint],
                 fusion: FusionMap, pair_by_shape: bool = False) -> None:
        self.ops, self.prints, self.fusion, self.pair_by_shape = ops, prints, fusion, pair_by_shape
        self.golden_files = golden.by_key()
        self.golden_order = list(dict.fromkeys(f.name.op for f in golden.files))
        self.golden_rank = {name: i for i, name in enumerate(self.golden_order)}
        self.op_types = {op.name: (op.op_type or "").lower() for op in ops}
        self.notes: list[str] = []

    def _file(self, ref: Ref) -> DumpFile | None:
        return self.golden_files.get((ref[0], "output", str(ref[1])))

    def golden_output(self, op: TargetOp, slot: int) -> tuple[DumpFile | None, str, str]:
        """(golden file, how, why not) of output ``slot`` of a target op with golden ops."""
        members = self.fusion.groups.get(op.name)
        if not members:
            return None, "", ""
        refs = self.fusion.outputs_of.get(op.name)
        if refs is not None:
            ref = refs[slot] if slot < len(refs) else None
            if ref is None:
                return None, "", f"not compared: the golden ops {_few(members)} have no tensor for output {slot}"
        else:
            ref = (members[-1], slot)
        found = self._file(ref)
        if found is None:
            return None, "", f"not compared: golden tensor {ref[0]}:{ref[1]} was not dumped"
        return found, self.fusion.how.get(op.name, "name"), ""

    def plan(self) -> Plan:
        rows: list[PlannedRow] = []
        producer: dict[tuple, tuple[str, int]] = {}        # digest -> latest (op, slot) writing it
        stands_for: dict[tuple[str, int], Partner] = {}    # target output -> its golden tensor
        dtype_of: dict[tuple[str, int], str] = {}
        consumed: set[tuple[str, int]] = set()
        sinks: list[tuple[str, int, DumpFile]] = []
        for index, op in enumerate(self.ops):
            sources = [producer.get(digest(dump, self.prints)) for dump in op.inputs]
            consumed.update(s for s in sources if s is not None)
            fed = [stands_for[s] if s is not None else None for s in sources]
            if op.name not in self.fusion.groups:
                self._link_by_lineage(op, fed)
            members = self.fusion.groups.get(op.name)
            passes = members == [] or (members is None and self._passes_through(op, sources))
            ground_truth = ",".join(members) if members else "*"
            partners, in_dtypes = [], []
            for slot, dump in enumerate(op.inputs):
                partner = self._input(op, slot, dump, fed[slot])
                dtype = dtype_of[sources[slot]] if sources[slot] is not None else self._dtype(dump, op, [])
                partners.append(partner)
                in_dtypes.append(dtype)
                rows.append(self._row(index, op, ground_truth, dump, self._row_partner(members, passes, partner),
                                      dtype))
            for slot, dump in enumerate(op.outputs):
                if members:
                    found, how, why = self.golden_output(op, slot)
                    partner = Partner(found, how, why)
                elif passes:   # an inserted op passes its input's meaning on
                    partner = partners[slot] if slot < len(partners) else (partners[0] if partners else Partner(None))
                else:
                    partner = Partner(None, why=f"not compared: {op.name} stands for no golden op (no name, graph or "
                                                "fusion-map match)")
                dtype = self._dtype(dump, op, in_dtypes)
                key = (op.name, slot)
                stands_for[key], dtype_of[key] = partner, dtype
                producer[digest(dump, self.prints)] = key
                sinks.append((op.name, slot, dump))
                rows.append(self._row(index, op, ground_truth, dump, self._row_partner(members, passes, partner),
                                      dtype))
        rows.extend(self._network_outputs(len(self.ops), sinks, consumed, stands_for, dtype_of))
        return Plan(rows, f"lineage + fusion from {self.fusion.source}", self.notes)

    def _row_partner(self, members: list[str] | None, passes: bool, partner: Partner) -> Partner:
        """The partner a row shows: rows of an op without golden ops have no golden side."""
        if members:
            return partner
        if passes:
            return Partner(None, TARGET_ONLY)
        return Partner(None, why="not compared: no golden op found for this op by name, graph or fusion map")

    def _input(self, op: TargetOp, slot: int, dump: DumpFile, fed: Partner | None) -> Partner:
        """What an input stands for: its producer's partner (the same bytes), else what a graph
        says the op reads, else (opt-in) the latest earlier golden tensor of its shape."""
        if fed is not None and fed.golden is not None:
            return Partner(fed.golden, "lineage")
        refs = self.fusion.inputs_of.get(op.name)
        if refs is not None and slot < len(refs):
            ref = refs[slot]
            if ref is None:
                return Partner(None, why="not compared: a weight or constant of the golden graph (no golden dump "
                                         "holds it)")
            found = self._file(ref)
            if found is not None:
                return Partner(found, "graph")
        if fed is not None:
            return Partner(None, why=fed.why or "not compared: its producer is not compared")
        if self.pair_by_shape:
            guessed = self._same_shape(op, dump)
            if guessed is not None:
                self.notes.append(f"{op.name}:input:{slot}: {SHAPE_LABEL}: compared with {guessed.name.op}, the "
                                  "latest earlier golden tensor of its shape")
                return Partner(guessed, "shape", label=f"{SHAPE_LABEL}: {guessed.name.op}")
        return Partner(None, why="not compared: no dumped op produced it and no graph says what it reads")

    def _same_shape(self, op: TargetOp, dump: DumpFile) -> DumpFile | None:
        members = self.fusion.groups.get(op.name) or []
        if not members:
            return None
        first = min(self.golden_rank.get(m, len(self.golden_rank)) for m in members)
        for name in reversed(self.golden_order[:first]):
            candidate = self.golden_files.get((name, "output", "0"))
            if candidate is not None and candidate.shape == dump.shape:
                return candidate
        return None

    def _passes_through(self, op: TargetOp, sources: list[tuple[str, int] | None]) -> bool:
        kind = self.op_types[op.name]
        if kind in PASS_THROUGH:
            return True
        return kind in INPUT_NORMALIZING and bool(sources) and sources[0] is not None \
            and self.op_types.get(sources[0][0]) in INPUT_OP_TYPES

    def _link_by_lineage(self, op: TargetOp, fed: list[Partner | None]) -> None:
        """A target op of a pattern's type with no name link: the pattern match whose input is the
        golden tensor the op's first input holds, when exactly one match reads it."""
        candidates = self.fusion.candidates_for(op.op_type)
        if not candidates or not fed or fed[0] is None or fed[0].golden is None:
            return
        holds = (fed[0].golden.name.op, int(fed[0].golden.name.slot))
        matches = [c for c in candidates if c.input_refs()[:1] == [holds]]
        if len(matches) == 1:
            self.fusion.link(op.name, matches[0])
        elif matches:
            self.notes.append(f"{op.name}: {len(matches)} {matches[0].pattern.name} subgraphs read {holds[0]}; "
                              "not compared (give the target graph or a --map)")

    def _dtype(self, dump: DumpFile, op: TargetOp, in_dtypes: list[str]) -> str:
        name = ge_dtype_name(dump.dtype)
        if dump.dtype != "float32" or not self.prints[str(dump.path)].bf16_values:
            return name
        op_type = (op.op_type or "").lower()
        if op_type in INPUT_OP_TYPES:
            return name
        if op_type == "cast":
            return "DT_BF16" if "DT_FLOAT" in in_dtypes else name
        floats = [d for d in in_dtypes if d in ("DT_FLOAT", "DT_FLOAT16", "DT_BF16", "DT_DOUBLE")]
        return "DT_BF16" if not floats or "DT_BF16" in floats else name

    def _row(self, index: int, op: TargetOp, ground_truth: str, dump: DumpFile, partner: Partner,
             dtype: str, *, npu_op: str | None = None, tensor_index: str | None = None,
             shape: tuple[int, ...] | None = None) -> PlannedRow:
        mark = self.prints[str(dump.path)]
        golden = partner.golden
        name = self.fusion.real_names.get(op.name, op.name)     # the target graph's spelling, when given
        labels = RowLabels(
            index=index, op_type=op.op_type if npu_op is None else None, npu_op=npu_op or name,
            golden_ops=ground_truth, tensor_index=tensor_index or f"{name}:{dump.name.io}:{dump.name.slot}",
            npu_dtype=dtype, golden_dtype=golden.dtype if golden is not None else None,
            shape=dump.shape if shape is None else shape,
            overflow=mark.overflow if dtype == "DT_FLOAT16" else "NaN", has_golden=golden is not None,
            paired_by=partner.how, fail_reason=partner.label if golden is not None else partner.why)
        key = (*digest(dump, self.prints), str(golden.path)) if golden is not None else None
        return PlannedRow(labels, dump, golden, key)

    def _network_outputs(self, index: int, sinks: list[tuple[str, int, DumpFile]], consumed: set,
                         stands_for: dict[tuple[str, int], Partner], dtype_of: dict) -> list[PlannedRow]:
        """``Node_Output`` rows: target outputs no op reads, in the graph's output order if known."""
        finals = [(op, slot, dump) for op, slot, dump in sinks
                  if (op, slot) not in consumed and stands_for[(op, slot)].golden is not None]
        if self.fusion.outputs:
            order = {(name, str(out)): i for i, (name, out) in enumerate(self.fusion.outputs)}

            def rank(item: tuple[str, int, DumpFile]) -> int:
                golden = stands_for[(item[0], item[1])].golden.name
                return order.get((golden.op, golden.slot), len(order))

            finals = sorted(finals, key=rank)
        by_op = {op.name: op for op in self.ops}
        rows = []
        for k, (op, slot, dump) in enumerate(finals):
            partner = stands_for[(op, slot)]
            rows.append(self._row(index, by_op[op], partner.golden.path.name, dump, partner, dtype_of[(op, slot)],
                                  npu_op="Node_Output", tensor_index=f"Node_Output:output:{k}", shape=()))
        return rows


def _few(names: list[str], limit: int = 3) -> str:
    return ",".join(names[:limit]) + (",..." if len(names) > limit else "")
