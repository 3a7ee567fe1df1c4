"""What `advisor compare` is told about fusion, read from the files the user gives.

=================================  =================================================================
``--graph model.onnx``             the golden graph (ONNX, also as JSON or protobuf text): ops, edges,
                                   weights; decomposition patterns are matched in it
``--graph ge_proto_*_Build.txt``   the target graph (GE dump, or an OM model as JSON from
``--graph model.json``             ``atc --mode=1``): ``_datadump_original_op_names`` of each op, the
                                   golden ops it computes (an empty list: the compiler inserted it)
``--map MAP.yaml`` (or ``.json``;  ``{target op: golden ops}`` written by hand or a tool: a
also through ``--graph``)          comma-joined string or a list (``*`` or ``[]``: inserted), or
                                   ``{golden: [...], outputs: [...], inputs: [...]}`` naming the golden
                                   tensor (``op`` or ``op:slot``; ``null``: none) of each slot
``--fusion fusion_result.json``    which fusion passes took effect: a pattern that names its passes
                                   is used only when one of them did
=================================  =================================================================

Every name is turned into its dump-file ("safe") form, the form dump file names carry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFormatError
from ..graph import Graph, detect_format, read_fusion_result, read_graph
from ..inputfiles import open_input, read_input_text
from ..nesting import loads_json
from ..yamlfile import load_yaml
from .dump_names import safe_name
from .golden_graph import GoldenGraph, Ref, golden_graph

GOLDEN_FORMATS = frozenset({"onnx", "onnx-json", "onnx-text"})
MAP_SUFFIXES = (".yaml", ".yml")


@dataclass
class MappedOp:
    """What the target's fusion info says about one target op."""

    golden: list[str]                                  # [] -> inserted by the compiler
    outputs: list[Ref | None] | None = None            # golden tensor per output slot, when stated
    inputs: list[Ref | None] | None = None             # golden tensor per input slot, when stated


@dataclass
class FusionSources:
    golden: GoldenGraph | None = None
    mapped: dict[str, MappedOp] = field(default_factory=dict)   # target op (safe) -> what the info says
    mapped_by: str = ""                                # ge-text | om-json | map (the last one read)
    real_names: dict[str, str] = field(default_factory=dict)    # safe target op name -> the graph's name
    effective_passes: frozenset[str] | None = None     # None: no fusion report given
    files: list[str] = field(default_factory=list)


def read_sources(graphs: list[Path], mapping: Path | None = None, fusion: Path | None = None) -> FusionSources:
    """Read every ``--graph`` (told apart by content), the ``--map`` and the ``--fusion`` report."""
    sources = FusionSources()
    for path in graphs:
        path = Path(path)
        if _is_mapping_file(path):
            _add_mapping(sources, path)
            continue
        kind = detect_format(path)
        if kind == "fusion-result":
            raise InputFormatError("this is a fusion_result.json: give it with --fusion", path=path)
        graph = read_graph(path)
        if kind in GOLDEN_FORMATS:
            if sources.golden is not None:
                raise InputFormatError("a second golden (ONNX) graph: give one", path=path)
            sources.golden = golden_graph(graph)
        else:
            _add_target_graph(sources, graph, kind)
        sources.files.append(f"{path.name} ({kind})")
    if mapping is not None:
        _add_mapping(sources, Path(mapping))
    if fusion is not None:
        report = read_fusion_result(fusion)
        sources.effective_passes = frozenset(p for p in report.passes if report.effect_times(p) > 0)
        sources.files.append(f"{Path(fusion).name} (fusion report)")
    return sources


def _is_mapping_file(path: Path) -> bool:
    if path.suffix.lower() in MAP_SUFFIXES:
        return True
    try:
        with open_input(path) as handle:
            head = handle.read(1024).lstrip()
    except (OSError, InputFormatError):
        return False
    if not head.startswith(b"{"):
        return False
    try:
        detect_format(path)
    except InputFormatError:
        return True                # JSON, but no graph layout: the {target op: golden ops} mapping
    return False


def _add_target_graph(sources: FusionSources, graph: Graph, kind: str) -> None:
    for node in graph.nodes:
        name = safe_name(node.name)
        sources.real_names.setdefault(name, node.name)
        if node.is_inserted:
            sources.mapped[name] = MappedOp([])
        elif node.fused_from:
            sources.mapped[name] = MappedOp([safe_name(n) for n in node.fused_from])
    sources.mapped_by = kind


def _add_mapping(sources: FusionSources, path: Path) -> None:
    if path.suffix.lower() in MAP_SUFFIXES:
        data = load_yaml(path, InputFormatError)
    else:
        data = loads_json(read_input_text(path, what="fusion map"), path, InputFormatError)
    if not isinstance(data, dict):
        raise InputFormatError('a fusion map is {"<target op>": "GoldenA,GoldenB" | [GoldenA, GoldenB] | '
                               '{golden: [...], outputs: [...], inputs: [...]}}', path=path)
    for op, entry in data.items():
        sources.mapped[safe_name(str(op))] = _mapped_op(entry, path, str(op))
        sources.real_names.setdefault(safe_name(str(op)), str(op))
    sources.mapped_by = "map"
    sources.files.append(f"{path.name} (map)")


def _names(value: object, path: Path, field_name: str) -> list[str]:
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputFormatError("expected a comma-joined string or a list of golden op names", path=path,
                               field=field_name)
    return [safe_name(n.strip()) for n in names if n.strip() and n.strip() != "*"]


def _refs(value: object, path: Path, field_name: str) -> list[Ref | None] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputFormatError("expected a list of golden tensors ('op' or 'op:slot', null for none)", path=path,
                               field=field_name)
    refs: list[Ref | None] = []
    for item in value:
        if item is None:
            refs.append(None)
            continue
        op, _, slot = str(item).rpartition(":") if ":" in str(item) else (str(item), "", "0")
        if not slot.isdigit():
            raise InputFormatError(f"'{item}' is not 'op' or 'op:slot'", path=path, field=field_name)
        refs.append((safe_name(op), int(slot)))
    return refs


def _mapped_op(entry: object, path: Path, op: str) -> MappedOp:
    if isinstance(entry, dict):
        if "golden" not in entry:
            raise InputFormatError("a detailed entry needs 'golden' (the golden ops)", path=path, field=op)
        return MappedOp(_names(entry["golden"], path, f"{op}.golden"), _refs(entry.get("outputs"), path,
                        f"{op}.outputs"), _refs(entry.get("inputs"), path, f"{op}.inputs"))
    return MappedOp(_names(entry, path, op))
