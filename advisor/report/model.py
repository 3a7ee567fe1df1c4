"""The report's view model: typed, immutable, already in the report language.

Templates and the JSON reporter only read a ``ReportView``; they decide layout, never content. Values
keep their numbers for machines (``values``, ``Row.value``, JSON-safe) next to their display text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..diagnosis import Neighbourhood, Series
from ..post.exhibit import PostExhibit
from .plot import Marker
from .verification import VerificationView

SCHEMA = "advisor-report/1"          # bump when the JSON contract changes incompatibly


@dataclass(frozen=True)
class FixView:
    backend: str          # key of advisor.advice.BACKENDS, e.g. "ascend"
    label: str            # the backend's name in the report language
    text: str


@dataclass(frozen=True)
class AdviceView:
    title: str
    summary: str
    what: str
    why: str
    confirm: str
    fixes: tuple[FixView, ...]
    references: tuple[str, ...]


@dataclass(frozen=True)
class FindingView:
    id: str
    rule: str
    pack: str
    kind: str
    severity: str
    severity_label: str
    tone: str             # colour of the finding: its severity, or "ok" for a consistent network
    title: str
    op: str | None
    index: int | None
    index_text: str       # the index, or "NA" as the vendor layout writes it
    op_type: str | None
    location: str         # "LayerNorm_3/Pow (op 12)", "" when the finding is about the whole network
    confidence: float | None   # None when not a number
    confidence_text: str
    evidence: str
    values: dict[str, Any]
    advice: AdviceView
    source_lines: tuple[int, ...]
    explained_by: str | None
    is_root_cause: bool


@dataclass(frozen=True)
class FindingGroup:
    """An active finding (not explained by another) and the symptoms it explains."""

    cause: FindingView
    symptoms: tuple[FindingView, ...]
    symptoms_heading: str  # "Explained by FP16 overflow at LayerNorm_3/Pow (op 12)"


@dataclass(frozen=True)
class FoldedGroups:
    """The active findings of one rule past the first few shown in full, one table row each: a
    comparison with thousands of overflow onsets has thousands of them, each with the same advice
    about its own op (report.json holds every one in full)."""

    rule: str
    heading: str                     # "More FP16 overflow findings (13314)"
    note: str                        # the finding above whose advice they share
    groups: tuple[FindingGroup, ...]


@dataclass(frozen=True)
class VendorBlock:
    """One ``Detection Type / Operator Index / Expert Advice`` block of the txt report."""

    detection_type: str
    operator_index: str
    expert_advice: str


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    value: Any            # JSON-safe
    text: str


@dataclass(frozen=True)
class KeyOpView:
    """One row of the per-op table (the ops that matter)."""

    index: int
    op: str
    op_type: str
    dtype: str
    roles: tuple[str, ...]             # root, entry, worst, neighbour, output
    role_labels: tuple[str, ...]
    metrics: tuple[tuple[float | None, str], ...]   # (value, text): input cosine, output cosine, RED, max abs error
    status: str                        # overflow | deviates | agrees | unknown
    status_label: str
    source_line: int | None
    source_href: str | None            # "#src-L<line>": the op's first row, embedded further down the page
    source_title: str                  # "line 12: the op's rows of the comparison, below"
    finding: str | None                # id of the finding shown for this op (an anchor in the page)


@dataclass(frozen=True)
class PackView:
    name: str
    version: str
    source: str
    rules: int


@dataclass(frozen=True)
class ThresholdRow:
    dtype: str
    metric: str
    metric_label: str
    value: float | None
    text: str


@dataclass(frozen=True)
class ThresholdGrid:
    """The thresholds for people: one row per dtype, one column per metric."""

    metrics: tuple[str, ...]                               # metric labels, the columns
    rows: tuple[tuple[str, tuple[str, ...]], ...]          # (dtype, value text per metric)


@dataclass(frozen=True)
class RemedyFileView:
    """One generated file of a remedy step, for one backend."""

    backend: str
    backend_label: str    # the backend's name in the report language
    name: str             # file name inside the step's backend folder, e.g. "keep_dtype.cfg"
    path: str             # relative to the output folder: "remedy/step1/ascend/keep_dtype.cfg"
    download: str         # name offered when downloaded from the HTML report: "step1-ascend-keep_dtype.cfg"
    syntax: str           # language of the text for a Markdown fence: python, sh, json or text
    text: str
    data_uri: str         # the text as a data: URI, for the HTML report's download link


@dataclass(frozen=True)
class KeptOpView:
    op: str
    golden: tuple[str, ...]
    op_type: str | None
    precision: str
    finding: str          # id of the finding that asked for it
    finding_label: str    # that finding's title


@dataclass(frozen=True)
class RemedyStepView:
    step: int
    title: str                          # "Step 1"
    summary: str                        # one line, in the report language
    settings: tuple[Row, ...]           # generic knob -> value (Row.value keeps the JSON value)
    keep: tuple[KeptOpView, ...]
    findings: tuple[str, ...]           # ids of the findings this step answers
    reasons: tuple[str, ...]            # the findings this step adds, as "title — location: evidence"
    folder: str                         # "remedy/step1"
    files: tuple[RemedyFileView, ...]   # backend order, then file name


@dataclass(frozen=True)
class RemedyView:
    backends: tuple[str, ...]
    backend_labels: tuple[str, ...]
    steps: tuple[RemedyStepView, ...]
    folder: str                         # "remedy", relative to the output folder
    readme: str                         # "remedy/README.md"


@dataclass(frozen=True)
class SourceOpView:
    """One op's rows of the comparison file, embedded in the page (an anchor per row: ``src-L<line>``)."""

    index: int
    anchor: str                        # "src-op-<index>"
    title: str                         # "op 11 Functional.layer_norm.0.forward: lines 62–67"
    rows: tuple[tuple[int, str], ...]  # (line, text)


@dataclass(frozen=True)
class SourceView:
    file: str                          # the comparison, as the report names it (relative or by name)
    header: str
    ops: tuple[SourceOpView, ...]

    @cached_property
    def indexes(self) -> frozenset[int]:
        """The op indexes with rows shown (a finding links to its op's rows when they are here)."""
        return frozenset(op.index for op in self.ops)


@dataclass(frozen=True)
class HintView:
    """An input that would sharpen the diagnosis (advisor/report/sharpen.py): the exact option, and why."""

    id: str
    option: str
    text: str


@dataclass(frozen=True)
class ReportView:
    language: str
    labels: Mapping[str, str]
    version: str
    schema: str
    generated_by: str
    verdict: str                     # root cause kind, "consistent" or "unexplained"
    severity: str                    # error | warning | info | ok
    severity_label: str
    is_consistent: bool
    headline: str
    summary: str
    root_cause: FindingView | None
    findings: tuple[FindingView, ...]          # every finding, in rank order
    groups: tuple[FindingGroup, ...]           # active findings in rank order, symptoms under them
    full_groups: tuple[FindingGroup, ...]      # the ones shown in full: the first few of each rule
    folded: tuple[FoldedGroups, ...]           # the others, one table per rule
    vendor_blocks: tuple[VendorBlock, ...]
    network: tuple[Row, ...]                   # every network field (report.json)
    network_summary: tuple[Row, ...]           # the ones people read, labelled, in the report language
    inputs: tuple[Row, ...]
    packs: tuple[PackView, ...]
    thresholds: tuple[ThresholdRow, ...]
    threshold_grid: ThresholdGrid
    overrides: tuple[Row, ...]                 # every setting, empty ones too (report.json)
    settings: tuple[Row, ...]                  # the settings a user changed, for people
    key_ops: tuple[KeyOpView, ...]
    warnings: tuple[str, ...]
    series: Series | None
    markers: tuple[Marker, ...]
    neighbourhood: Neighbourhood | None = None   # the root cause in the model graph (--graph)
    remedy: RemedyView | None = None             # the fix written out per backend (advisor/remedy)
    verification: VerificationView | None = None  # the checks on the CPU (advisor run --verify)
    key_op_columns: tuple[tuple[str, str], ...] = ()   # (metric key, column label) of the per-op table
    key_op_main: int = 1                         # the column a short table (Markdown) shows: output cosine...
    plot_caption: str = ""                       # what the plot draws, for a layout without cosine
    sharpen: tuple[HintView, ...] = ()           # inputs that would change or refine the diagnosis
    source: SourceView | None = None             # the comparison's rows behind the ops shown
    post: PostExhibit | None = None              # advisor post: one image's boxes and the fitted maps
