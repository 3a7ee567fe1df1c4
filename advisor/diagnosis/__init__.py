"""What the engine concludes: findings, ranked into a Diagnosis. Reports only ever render this."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..engine.explain import ExplanationGroup
    from ..post.exhibit import PostExhibit
    from ..remedy.model import Remedy
    from ..verify.model import Verification

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"error": 0, "warning": 1, "info": 2}

CONSISTENT = "consistent"            # finding kind and verdict of a network that matches its golden run
# Finding kinds that say "nothing to fix": a consistent network (advisor run), agreeing post-processings (advisor post).
CONSISTENT_KINDS = (CONSISTENT, "detections_consistent")
UNEXPLAINED = "unexplained"          # verdict when no rule named a cause and none found the network consistent

# Finding kinds that name a root cause (a finding of another kind is a symptom or a note).
ROOT_CAUSE_KINDS: tuple[str, ...] = (
    "fp16_overflow",
    "input_mismatch",
    "problem_node",
    "single_point_deviation",
)
# Root-cause kinds that need tensor evidence (``advisor run --dumps``): without the dumps the
# comparison alone can only say ``input_mismatch`` at the same op.
EVIDENCE_KINDS: tuple[str, ...] = (
    "rgb_bgr_swap",
    "duplicate_normalization",
    "layout_nchw_nhwc",
    "input_scale_mismatch",
    "random_preprocessing",
)

# Root-cause kinds of the quantisation evidence: they need an int8 build config (``--config``) and the
# layer's weights (``--graph model.onnx``) or golden inputs (``--dumps``); without them the same
# layer is reported as a ``problem_node``.
QUANT_KINDS: tuple[str, ...] = (
    "quant_per_tensor",
    "quant_symmetric",
    "quant_calibration",
    "quant_sensitive_op",
    "quant_precision_limit",
    "quant_backend_issue",
)


@dataclass
class Finding:
    """One conclusion of one rule about one op (or the whole network).

    ``evidence`` holds the rendered evidence sentence per language; ``values`` the numbers behind
    it (cosines, errors, counts), which the JSON report carries for machines.
    """

    id: str                              # unique within a diagnosis, e.g. "fp16-overflow@12"
    rule: str                            # rule id
    pack: str                            # pack name the rule came from
    kind: str                            # finding kind: the advice key in knowledge/advice
    severity: Severity
    title: dict[str, str]                # {"en": ..., "zh": ...}
    root_cause: bool = False             # the rule names a cause, not a symptom or a note
    op: str | None = None
    index: int | None = None             # op_index (execution order) of ``op``
    op_type: str | None = None
    confidence: float = 1.0
    evidence: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    source_lines: list[int] = field(default_factory=list)
    explained_by: str | None = None      # id of the finding that explains this one
    explains: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class OpPoint:
    """One op of the execution-order series drawn in the report's plot."""

    index: int
    op: str
    cosine: float | None
    error: float | None           # the secondary metric named in Series.error_metric
    # The metrics of a layout without cosine (Series.metrics: msprobe statistics' relative errors of
    # max/min/mean/norm; checksum mode's differing tensors), and the call's direction (forward/backward).
    values: dict[str, float | None] = field(default_factory=dict)
    direction: str | None = None


@dataclass
class KeyOp:
    """One op of the report's per-op table (advisor/diagnosis/key_ops.py): an op that matters and why."""

    index: int
    op: str
    op_type: str | None
    dtype: str | None
    roles: list[str]                    # why it is shown: root, entry, worst, neighbour, output
    in_cosine: float | None
    out_cosine: float | None
    out_red: float | None
    out_max_abs_error: float | None
    deviates: bool
    overflow: bool
    source_line: int | None             # first line of the op's rows in the comparison
    values: dict[str, float | None] = field(default_factory=dict)   # the layout's own metrics (Series.metrics)


@dataclass
class Series:
    """Per-op metric series in execution order (downsampled for very large tables)."""

    points: list[OpPoint]
    error_metric: str                   # e.g. "relative_euclidean_distance"
    cosine_threshold: float
    error_threshold: float | None
    total_ops: int                      # ops before downsampling
    # What the comparison's layout measures (advisor/diagnosis/layout.py): "tensor" (cosine and errors per
    # tensor), "statistics" (msprobe summary mode, dump.json pairs: OpPoint.values holds the relative
    # error of each statistic) or "checksum" (MD5 mode: OpPoint.values holds the differing checksums).
    layout: str = "tensor"
    metrics: tuple[str, ...] = ()       # the keys of OpPoint.values, in the order they are drawn
    metric_threshold: float | None = None   # the dtype's limit on the norm's relative error (statistics)
    checksums: tuple[int, int] | None = None   # checksum mode: (tensors compared, tensors differing)


@dataclass
class GraphNode:
    """One op of the graph drawn around the root cause."""

    name: str
    op_type: str
    role: str                           # "input", "focus" or "output"
    fused_from: list[str] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    cosine: float | None = None         # the op's worst output cosine, when compared
    deviates: bool | None = None        # None: not compared


@dataclass
class Neighbourhood:
    """The root cause's op in the model graph (``--graph``): its inputs, itself and its first
    successors; ``edges`` are (source, target) pairs of node names."""

    focus: str
    nodes: list[GraphNode]
    edges: list[tuple[str, str]]
    graph: str = ""                     # the graph file
    side: str = ""                      # target or golden graph
    more_inputs: int = 0                # inputs and successors left out of the drawing
    more_outputs: int = 0


@dataclass
class SourceRows:
    """The comparison's own rows behind the ops a report shows (advisor/report/source_rows.py)."""

    file: str                                          # the comparison file
    header: str                                        # its first line
    by_op: dict[int, list[tuple[int, str]]] = field(default_factory=dict)   # op index -> (line, text)


@dataclass
class PackInfo:
    name: str
    version: str
    source: str                         # file or folder it was loaded from
    rules: int


@dataclass
class Diagnosis:
    """The ranked result of one run. ``root_cause`` is None when no rule named a cause (the network is
    consistent, or no rule explains its deviation: ``verdict`` says which)."""

    root_cause: Finding | None
    findings: list[Finding]             # ranked: root cause first, explained symptoms last
    network: dict[str, Any]             # summary numbers: ops, tensors, deviating ops, output cosine...
    inputs: dict[str, str]              # role -> path, e.g. {"comparison": "result.csv"}
    packs: list[PackInfo]
    thresholds: dict[str, dict[str, float]]   # dtype -> metric -> threshold actually used
    overrides: dict[str, Any] = field(default_factory=dict)
    series: Series | None = None
    version: str = ""
    warnings: list[str] = field(default_factory=list)   # non-fatal notes about the input
    neighbourhood: Neighbourhood | None = None           # the root cause in the graph (--graph)
    remedy: Remedy | None = None                         # the fix in each backend's syntax (advisor/remedy)
    backends: tuple[str, ...] = ()                       # the user's toolchain(s): their advice comes first
    key_ops: list[KeyOp] = field(default_factory=list)   # the ops that matter, for the per-op table
    # The advice pages the run's rule packs carried inline (kind -> (page, "file:line")): the report
    # renders advice from these and the built-in pages (advice.AdviceBook), never from another run's.
    advice_pages: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)
    verification: Verification | None = None             # the checks on the CPU (advisor run --verify)
    source_rows: SourceRows | None = None                # rows of the comparison file, embedded in the report
    post: PostExhibit | None = None                      # advisor post: the boxes and maps the report draws
    rule_aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)   # rule id -> its former ids
    # Every explanation the rules gave, (cause id, symptom id, explain rule id), and those given as sets
    # (engine/explain.py): ``explained_by`` keeps the leading cause of each symptom, these say which rule
    # linked them (advisor rules test reads them).
    explanations: list[tuple[str, str, str]] = field(default_factory=list)
    explanation_groups: list[ExplanationGroup] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """What the run concludes, read from the findings alone (the terminal, every report format and
        the batch history all say this): the root cause's kind; ``consistent`` when a rule found the
        network consistent; else ``unexplained``."""
        if self.root_cause is not None:
            return self.root_cause.kind
        if any(f.kind in CONSISTENT_KINDS and f.explained_by is None for f in self.findings):
            return CONSISTENT
        return UNEXPLAINED

    def worst_severity(self) -> str | None:
        active = [f.severity for f in self.findings if f.explained_by is None]
        return min(active, key=SEVERITY_RANK.__getitem__) if active else None
