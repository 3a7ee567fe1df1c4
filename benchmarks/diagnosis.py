"""Diagnosis accuracy of the advisor on a labelled scenario corpus.

``python -m benchmarks.diagnosis [--corpus DIR | --generate DIR] [--realtool DIR] [--seed N]
[--only FAMILY...] [--json OUT] [--fail-under PCT] [--no-vendor]``

Runs the advisor in-process (``advisor.pipeline.analyse``) on every scenario's
``result_<timestamp>.csv`` and compares its root cause with the scenario's ``label.json``. Prints
one row per family: scenarios, root-cause kind right, op right (name *and* index match the label),
the currently supported answer for families whose own diagnosis is a later capability, false
alarms on clean runs and accuracy; the confidence calibration (per band of the verdict's stated
confidence, how many were right: a band stated at 0.9 should be right at least 90% of the time);
then every miss with label vs got. Where a scenario's level or task cannot show the label's kind (L0
dumps no arguments; MD5 mode says where bits differ, not by how much), the most specific answer that
data allows at the labelled op counts as correct and is listed as level-limited, never as an exact label.

What counts as correct, per scenario:

* clean (label kind ``consistent``): no root cause and no active (unexplained) error or warning
  finding; anything else is a false alarm;
* a kind the advisor diagnoses today (``advisor.diagnosis.ROOT_CAUSE_KINDS``): root-cause kind,
  op and index all match the label;
* a scenario whose label names ``bench`` (the real-tool corpus's ``_dumpjson`` form) is the pair
  of msprobe ``dump.json`` files: the advisor compares them itself (``--bench``/``--target``);
* the preprocessing kinds (``EVIDENCE_KINDS``) are supported when the scenario holds its input
  dumps (the advisor then runs with ``--dumps`` and the scenario's ``build.json``, as a user
  would); without dumps the supported answer is ``input_mismatch`` at the Data op;
* the quantisation kinds (``QUANT_KINDS``) are supported when the scenario holds model.onnx and its
  dumps (the advisor then also runs with ``--graph model.onnx``); without them the supported answer
  is a ``problem_node`` at the quantised layer;
* a kind that needs a capability the scenario does not give (``LATER_CAPABILITY``): the supported
  answer listed there, at the labelled op and index. These rows are shown as "later capability",
  never hidden.

Without ``--corpus``/``--generate`` the committed corpora are measured: ``tests/data/scenarios``
(emulated: msaccucmp tables our generator writes) and ``tests/data/realtool`` (what msprobe itself
wrote, ``label.json`` ``source: msprobe``). ``--realtool DIR`` generates the whole real-tool corpus
(``benchmarks.scenarios.realtool``: every pair, task and level; needs mindstudio-probe) into DIR and
measures it too. Each source gets its own table and totals: accuracy on the real-tool corpus is
printed apart from the emulated one.

Beside ours, the vendor's own msaccucmp advisor (``mscmp_advisor.py`` from the mindstudio-probe
wheel, see ``benchmarks/vendor_advisor.py``) runs on every scenario's comparison file: the
``vendor advisor`` column is its correct/readable count per family, scored by the rule ours is
scored by when it sees the CSV alone (the label's kind, or the supported answer of a later
capability, at the labelled Index). It reads msaccucmp tables only; msprobe's are "cannot read".
``--generate DIR`` first runs the scenario generator (needs torch and the network wheels, see
``benchmarks/scenarios/README.md``) into DIR with input dumps only and no ONNX, except the
quantisation families, which get every dump and model.onnx (what their evidence reads), then
measures exactly the scenarios it generated. It is a measurement, not a test: exit 0 whatever the accuracy, 1 only
when ``--fail-under`` is given and the overall accuracy (percent) is below it, 2 on usage errors
or an unreadable corpus, 3 when generated scenarios fail the generator's own self-check.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from advisor.diagnosis import EVIDENCE_KINDS, QUANT_KINDS, ROOT_CAUSE_KINDS, Diagnosis
from advisor.pipeline import AnalysisOptions, analyse

REPO = Path(__file__).resolve().parents[1]
COMMITTED_CORPUS = REPO / "tests" / "data" / "scenarios"
#: Scenarios the real tools wrote (msprobe dumps and ``msprobe compare``), labelled the same way.
REALTOOL_CORPUS = REPO / "tests" / "data" / "realtool"
#: ``label.json`` ``source`` of the emulated corpus (scenarios without one).
EMULATED = "emulated"

CONSISTENT = "consistent"
#: Label kinds the advisor cannot name yet -> the answer it supports today (at the labelled op).
LATER_CAPABILITY: dict[str, str] = {
    # Supported with model.onnx and the layer dumps (advisor run --graph --dumps); without them only this:
    **{kind: "problem_node" for kind in QUANT_KINDS},
    # Supported with the scenario's input dumps (advisor run --dumps); without them only this:
    **{kind: "input_mismatch" for kind in EVIDENCE_KINDS},
}
#: Kinds of the real-tool corpus that compare two training (or inference) scripts (rules/core/training).
TRAINING_KINDS = ("argument_mismatch", "parameter_mismatch", "step_mismatch", "checksum_mismatch")
#: Why each later-capability kind is not diagnosed yet (shown in the table's legend).
LATER_REASON: dict[str, str] = {
    **{kind: "the scenario has no model.onnx and layer dumps" for kind in QUANT_KINDS},
    **{kind: "the scenario has no input dumps" for kind in EVIDENCE_KINDS},
}
#: Kinds that name a label's kind more precisely: with the graph, a problem node inside a fused op
#: is reported as the fused op's problem (it names the fused ops and the pass), at the same op.
REFINES: dict[str, tuple[str, ...]] = {"problem_node": ("fused_op_problem",)}
#: What a comparison at a given msprobe level can show at best, where the label's own kind needs what
#: that level does not dump: level L0 (modules only) dumps no arguments, so an argument that differs
#: shows as a module computing differently on identical inputs and weights (a problem node, a
#: single-point deviation when the network absorbs it, or where bits start to differ in MD5 mode), at
#: the labelled module. Counted correct (never as "exact label") and listed under the table.
LEVEL_LIMITED: dict[tuple[str, str], tuple[str, ...]] = {
    ("argument_mismatch", "L0"): ("problem_node", "single_point_deviation", "checksum_mismatch"),
}
#: MD5 mode says where bits start to differ and nothing about by how much: a fault that is not an input,
#: an argument or a weight (which checksums do name) can only be answered as that place.
TASK_LIMITED: dict[tuple[str, str], tuple[str, ...]] = {
    ("problem_node", "md5"): ("checksum_mismatch",),
    ("fp16_overflow", "md5"): ("checksum_mismatch",),
}
_KIND_ORDER = (CONSISTENT, *ROOT_CAUSE_KINDS, *EVIDENCE_KINDS, *QUANT_KINDS, *TRAINING_KINDS)


class CorpusError(Exception):
    """The corpus cannot be measured (missing or unreadable scenario files)."""


@dataclass
class ScenarioResult:
    name: str
    family: str
    label_kind: str
    label_op: str | None
    label_index: int | None
    got_kind: str                        # root-cause kind, "consistent" when none, "error" on a crash
    got_op: str | None
    got_index: int | None
    got_severity: str | None
    got_confidence: float | None         # the root cause's stated confidence (1.0 for "consistent")
    status: str                          # "supported" | "later capability"
    supported_answer: str | None         # what counts as correct for a later-capability kind
    kind_right: bool                     # the label's own kind (never true for a later capability)
    op_right: bool | None                # op and index match (None for clean scenarios)
    supported_right: bool | None         # later capability: supported answer at the right op
    false_alarm: bool | None             # clean scenarios only
    correct: bool
    active: list[str] = field(default_factory=list)    # unexplained findings: "rule severity op@index"
    error: str | None = None             # the advisor raised on this scenario
    source: str = EMULATED               # label.json "source": who wrote the comparison
    comparison: str | None = None        # the comparison file, for the vendor advisor
    vendor: str | None = None            # the vendor advisor's answer ("kind@index", "unreadable: ...")
    vendor_correct: bool | None = None   # None when it could not read the file

    @property
    def got(self) -> str:
        if self.error:
            return f"error: {self.error}"
        if self.got_kind == CONSISTENT:
            return CONSISTENT
        return f"{self.got_kind} {_at(self.got_op, self.got_index)} ({self.got_severity})"

    @property
    def label(self) -> str:
        return self.label_kind if self.label_kind == CONSISTENT else f"{self.label_kind} " \
            f"{_at(self.label_op, self.label_index)}"


@dataclass
class FamilyRow:
    family: str
    kind: str
    status: str
    scenarios: int
    kind_right: int
    op_right: int | None                 # None for clean families (no op to find)
    supported_answer: str | None
    supported_right: int | None
    false_alarms: int | None             # None for non-clean families
    correct: int
    source: str = EMULATED
    vendor_readable: int = 0             # scenarios the vendor advisor could read
    vendor_correct: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.scenarios if self.scenarios else 0.0


@dataclass
class BenchmarkResult:
    corpus: str
    scenarios: list[ScenarioResult]
    families: list[FamilyRow]
    seconds: float
    seed: int | None = None

    @property
    def misses(self) -> list[ScenarioResult]:
        return [s for s in self.scenarios if not s.correct]

    @property
    def sources(self) -> list[str]:
        """Who wrote the comparisons: the emulated corpus first, then each real tool."""
        return sorted({s.source for s in self.scenarios}, key=lambda x: (x != EMULATED, x))

    def summary(self, source: str | None = None) -> dict[str, Any]:
        """Accuracy over every scenario, or over those of one ``source``."""
        def ratio(items: list[ScenarioResult], key) -> dict[str, Any]:
            hits = sum(1 for s in items if key(s))
            return {"correct": hits, "total": len(items),
                    "accuracy": round(hits / len(items), 6) if items else None}
        scenarios = [s for s in self.scenarios if source is None or s.source == source]
        supported = [s for s in scenarios if s.status == "supported"]
        later = [s for s in scenarios if s.status != "supported"]
        clean = [s for s in scenarios if s.label_kind == CONSISTENT]
        readable = [s for s in scenarios if s.vendor_correct is not None]
        return {
            "overall": ratio(scenarios, lambda s: s.correct),
            "supported_families": ratio(supported, lambda s: s.correct),
            "later_capability_supported_answer": ratio(later, lambda s: s.correct),
            "exact_label": ratio(scenarios, lambda s: s.kind_right and s.op_right is not False),
            "false_alarms_on_clean": {"count": sum(1 for s in clean if s.false_alarm), "clean": len(clean)},
            "clean_with_error_findings": sum(1 for s in clean if any(" error " in a for a in s.active)),
            "vendor_advisor": {**ratio(readable, lambda s: s.vendor_correct),
                               "unreadable": len(scenarios) - len(readable)},
            "calibration": calibration(scenarios),
            "ours_on_vendor_readable": ratio(readable, lambda s: s.correct),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus, "seed": self.seed, "seconds": round(self.seconds, 3),
            "summary": self.summary(),
            "by_source": {source: self.summary(source) for source in self.sources},
            "families": [{**asdict(f), "accuracy": round(f.accuracy, 6)} for f in self.families],
            "scenarios": [{**asdict(s), "label": s.label, "got": s.got} for s in self.scenarios],
        }


#: Confidence bands of the calibration table: [low, high).
CALIBRATION_BANDS = ((0.0, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 0.95), (0.95, 1.01))


def calibration(scenarios: list[ScenarioResult]) -> list[dict[str, Any]]:
    """Whether the stated confidence means something: per band of the verdict's confidence (the root
    cause's, 1.0 for "consistent"), how many verdicts were stated there and how many were right. A
    band stated at 0.9 should be right at least 90% of the time."""
    bands = []
    for low, high in CALIBRATION_BANDS:
        stated = [s for s in scenarios if s.got_confidence is not None and low <= s.got_confidence < high]
        right = sum(s.correct for s in stated)
        bands.append({"band": f"{low:.2f}-{min(high, 1.0):.2f}", "stated": len(stated), "right": right,
                      "share": round(right / len(stated), 6) if stated else None,
                      "low": low, "meets": (right / len(stated) >= low) if stated else None})
    return bands


def format_calibration(bench: BenchmarkResult, source: str) -> str:
    rows = [b for b in bench.summary(source)["calibration"] if b["stated"]]
    if not rows:
        return ""
    out = ["confidence calibration (verdicts stated in each band, and right):"]
    for band in rows:
        flag = "" if band["meets"] else "  below its band"
        share = _pct(band["right"], band["stated"])
        out.append(f"  {band['band']}  {band['right']:>4}/{band['stated']:<4} {share:>6}{flag}")
    return "\n".join(out)


def _at(op: str | None, index: int | None) -> str:
    return f"{op}@{index}" if op is not None or index is not None else "(no op)"


# --- corpus -------------------------------------------------------------------------------------

def find_scenarios(corpus: Path, families: Iterable[str] | None = None) -> list[Path]:
    """Scenario directories (those holding a label.json) under ``corpus``, sorted by name."""
    if not corpus.is_dir():
        raise CorpusError(f"{corpus}: not a directory")
    directories = sorted(p.parent for p in corpus.glob("*/label.json"))
    if families:
        wanted = set(families)
        directories = [d for d in directories if _read_label(d)["family"] in wanted]
    if not directories:
        raise CorpusError(f"{corpus}: no scenario directories (*/label.json)")
    return directories


def generate_corpus(out: Path, seed: int = 0, families: Sequence[str] | None = None,
                    small: bool = False, log=None) -> tuple[list[Path], list[str]]:
    """Run the scenario generator into ``out``: (directories, problems). Input dumps only and no ONNX,
    except for the quantisation families (every dump and model.onnx: their evidence).

    Uses the generator's own API (``catalog.select`` + ``scenario.generate``), so the corpus is
    exactly what ``python -m benchmarks.scenarios --out DIR --seed N --dumps inputs --onnx-max-kb 0``
    writes. Needs torch and the network wheels.
    """
    try:
        from benchmarks.scenarios.catalog import select
        from benchmarks.scenarios.scenario import generate
    except ImportError as exc:
        raise CorpusError(f"--generate needs the scenario generator's dependencies ({exc}); "
                          f"see benchmarks/scenarios/README.md") from None

    try:
        specs = select(list(families) if families else None, small, seed)
    except KeyError as exc:             # an unknown family
        raise CorpusError(exc.args[0]) from None
    directories: list[Path] = []
    problems: list[str] = []
    for spec in specs:
        quant = spec.family in QUANT_KINDS
        generated = generate(spec, out, dumps_kept="all" if quant else "inputs", onnx_max_bytes=None if quant else 0)
        directories.append(generated.directory)
        problems.extend(f"{spec.name}: {p}" for p in generated.problems)
        if log:
            log(f"generated {spec.name}{' (SELF-CHECK FAILED)' if generated.problems else ''}")
    return directories, problems


def _find_some(root: Path, families: Iterable[str] | None) -> list[Path]:
    """``find_scenarios`` of one of several corpora: none selected there is not an error."""
    try:
        return find_scenarios(root, families)
    except CorpusError:
        if families:
            return []
        raise


def generate_realtool(out: Path, families: Sequence[str] | None = None) -> list[Path]:
    """Generate the whole real-tool corpus (every pair, task and level) into ``out``: its folders.
    Scenarios msprobe could not make are reported on stderr and left out."""
    try:
        from benchmarks.scenarios import msprobe_tool, realtool
        from benchmarks.scenarios.realtool_catalog import select as select_pairs
    except ImportError as exc:
        raise CorpusError(f"--realtool needs the scenario generator's dependencies ({exc})") from None
    try:
        pairs = select_pairs(list(families) if families else None)
    except KeyError:
        return []
    started = time.perf_counter()
    scenarios = realtool.plan(pairs, msprobe_tool.TASKS, msprobe_tool.LEVELS)
    directories, failures = realtool.generate_all(scenarios, out, out / ".dumps")
    print(f"generated {len(directories)} real-tool scenarios into {out} in {time.perf_counter() - started:.1f}s",
          file=sys.stderr)
    for failure in failures:
        print(f"  msprobe could not make: {failure}", file=sys.stderr)
    return directories


def _read_label(directory: Path) -> dict[str, Any]:
    path = directory / "label.json"
    try:
        label = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{path}: {exc}") from None
    missing = [k for k in ("family", "kind", "op", "index") if k not in label]
    if missing:
        raise CorpusError(f"{path}: missing {', '.join(missing)}")
    return label


def _result_csv(directory: Path, label: dict[str, Any] | None = None) -> Path:
    if label and label.get("comparison"):
        path = directory / label["comparison"]
        if not path.is_file():
            raise CorpusError(f"{path}: the comparison file label.json names is missing")
        return path
    found = sorted(directory.glob("result_*.csv"))
    if len(found) != 1:
        raise CorpusError(f"{directory}: expected one result_*.csv, found {len(found)}")
    return found[0]


# --- scoring ------------------------------------------------------------------------------------

def score(name: str, label: dict[str, Any], diagnosis: Diagnosis | None, error: str | None = None,
          with_dumps: bool = False, with_model: bool = False) -> ScenarioResult:
    """Compare one diagnosis (None when the advisor raised) with its label. ``with_dumps``: the
    advisor saw the scenario's input dumps, so the evidence kinds count as supported; ``with_model``
    (and dumps): it saw model.onnx too, so the quantisation kinds count as supported."""
    kind, op, index = label["kind"], label["op"], label["index"]
    supported_kinds = (CONSISTENT, *ROOT_CAUSE_KINDS, *TRAINING_KINDS, *(EVIDENCE_KINDS if with_dumps else ()),
                       *(QUANT_KINDS if with_dumps and with_model else ()))
    root = diagnosis.root_cause if diagnosis is not None else None
    active = [f for f in diagnosis.findings if f.explained_by is None] if diagnosis is not None else []
    if error is not None:
        got_kind, got_op, got_index, got_severity = "error", None, None, None
    elif root is None:
        got_kind, got_op, got_index, got_severity = CONSISTENT, None, None, None
    else:
        got_kind, got_op, got_index, got_severity = root.kind, root.op, root.index, root.severity
    supported_answer = LATER_CAPABILITY.get(kind) if kind not in supported_kinds else None
    status = "supported" if kind in supported_kinds else "later capability"
    kind_right = got_kind == kind or got_kind in REFINES.get(kind, ())
    op_right = supported_right = false_alarm = None
    if kind == CONSISTENT:
        false_alarm = error is not None or root is not None or any(
            f.severity in ("error", "warning") for f in active)
        correct = not false_alarm
    else:
        op_right = error is None and got_op == op and got_index == index
        if status == "supported":
            limited = (*LEVEL_LIMITED.get((kind, str(label.get("level"))), ()),
                       *TASK_LIMITED.get((kind, str(label.get("task"))), ()))
            correct = (kind_right or got_kind in limited) and op_right
        else:
            supported_right = supported_answer is not None and got_kind == supported_answer and op_right
            correct = supported_right
    return ScenarioResult(
        name=name, family=label["family"], label_kind=kind, label_op=op, label_index=index,
        got_kind=got_kind, got_op=got_op, got_index=got_index, got_severity=got_severity,
        got_confidence=None if error is not None else (root.confidence if root is not None else 1.0),
        status=status, supported_answer=supported_answer, kind_right=kind_right, op_right=op_right,
        supported_right=supported_right, false_alarm=false_alarm, correct=correct,
        active=[f"{f.rule} {f.severity} {_at(f.op, f.index)}" for f in active], error=error)


def analyse_scenario(directory: Path) -> ScenarioResult:
    label = _read_label(directory)
    csv = _result_csv(directory, label)
    # What a user would hand over: the dumps (network inputs at least) and the build config.
    golden, target = directory / "golden", directory / "target"
    dumps = (golden, target) if golden.is_dir() and target.is_dir() and any(target.iterdir()) else None
    config = directory / "build.json"
    model = directory / "model.onnx"
    seen = {"with_dumps": bool(dumps), "with_model": model.is_file()}
    # A pair of msprobe dump.json (label "bench"): compared by the advisor itself, as --bench/--target.
    bench = directory / label["bench"] if label.get("bench") else None
    try:
        diagnosis = analyse(AnalysisOptions(comparison=None if bench else csv, bench=bench,
                                            target=csv if bench else None, dumps=dumps,
                                            graph=model if model.is_file() else None,
                                            build_config=config if config.is_file() else None))
    except Exception as exc:  # noqa: BLE001 - a crash on a scenario is a measured miss, not a benchmark bug
        result = score(directory.name, label, None, error=f"{type(exc).__name__}: {exc}", **seen)
    else:
        result = score(directory.name, label, diagnosis, **seen)
    result.source = label.get("source", EMULATED)
    result.comparison = None if bench else str(csv)      # the vendor advisor reads comparison tables only
    return result


def score_vendor(result: ScenarioResult, answer) -> None:
    """Score the vendor advisor's answer (benchmarks.vendor_advisor.VendorAnswer) by the rule ours
    is scored by when it sees the CSV alone: the label's kind, or the supported answer of a
    later-capability kind, at the labelled index (it names no op, only the Index)."""
    if not answer.readable:
        result.vendor = f"unreadable: {answer.error}"
        return
    result.vendor = CONSISTENT if answer.kind == CONSISTENT else f"{answer.kind or answer.detection}@{answer.index}"
    if result.label_kind == CONSISTENT:
        result.vendor_correct = answer.kind == CONSISTENT
        return
    wanted = {result.label_kind, *REFINES.get(result.label_kind, ()), LATER_CAPABILITY.get(result.label_kind)}
    result.vendor_correct = answer.kind in wanted and answer.index == result.label_index


def summarise_families(results: list[ScenarioResult]) -> list[FamilyRow]:
    by_family: dict[tuple[str, str], list[ScenarioResult]] = {}
    for result in results:
        by_family.setdefault((result.source, result.family), []).append(result)
    rows = []
    for (source, family), items in by_family.items():
        kind = items[0].label_kind
        clean = kind == CONSISTENT
        later = items[0].status != "supported"
        rows.append(FamilyRow(
            family=family, kind=kind, status=items[0].status, scenarios=len(items),
            kind_right=sum(s.kind_right for s in items),
            op_right=None if clean else sum(bool(s.op_right) for s in items),
            supported_answer=items[0].supported_answer if later else None,
            supported_right=sum(bool(s.supported_right) for s in items) if later else None,
            false_alarms=sum(bool(s.false_alarm) for s in items) if clean else None,
            correct=sum(s.correct for s in items), source=source,
            vendor_readable=sum(s.vendor_correct is not None for s in items),
            vendor_correct=sum(bool(s.vendor_correct) for s in items)))
    rank = {k: i for i, k in enumerate(_KIND_ORDER)}
    rows.sort(key=lambda r: (r.source != EMULATED, r.source, r.status != "supported", rank.get(r.kind, len(rank)),
                             r.family))
    return rows


def run_benchmark(directories: Iterable[Path], corpus: str = "", seed: int | None = None,
                  vendor: bool = True) -> BenchmarkResult:
    """The core: analyse every scenario directory and score it against its label; ``vendor``: also
    run the vendor's msaccucmp advisor (when mindstudio-probe is installed) and score it."""
    started = time.perf_counter()
    results = [analyse_scenario(d) for d in directories]
    if vendor:
        from benchmarks.vendor_advisor import run_vendor_advisor

        answers = run_vendor_advisor([Path(r.comparison) for r in results if r.comparison])
        for result in results:
            if result.comparison and Path(result.comparison).resolve() in answers:
                score_vendor(result, answers[Path(result.comparison).resolve()])
    return BenchmarkResult(corpus=corpus, scenarios=results, families=summarise_families(results),
                           seconds=time.perf_counter() - started, seed=seed)


# --- rendering ----------------------------------------------------------------------------------

COLUMNS = ("family", "status", "scenarios", "kind right", "op right", "supported answer",
           "false alarms", "accuracy", "vendor advisor")


def _frac(hits: int | None, total: int) -> str:
    return "-" if hits is None else f"{hits}/{total}"


def _pct(hits: int, total: int) -> str:
    return f"{100 * hits / total:.1f}%" if total else "-"


def _vendor_cell(f: FamilyRow) -> str:
    """The vendor advisor's score on a family: correct/readable, or why there is none."""
    if f.vendor_readable == 0:
        return "cannot read"
    unreadable = f.scenarios - f.vendor_readable
    return f"{f.vendor_correct}/{f.vendor_readable}" + (f" ({unreadable} unreadable)" if unreadable else "")


def table_rows(bench: BenchmarkResult, source: str | None = None) -> list[tuple[str, ...]]:
    rows = []
    for f in bench.families:
        if source is not None and f.source != source:
            continue
        supported = "-" if f.supported_answer is None else f"{f.supported_answer} {f.supported_right}/{f.scenarios}"
        rows.append((f.family, f.status, str(f.scenarios), _frac(f.kind_right, f.scenarios),
                     _frac(f.op_right, f.scenarios), supported, _frac(f.false_alarms, f.scenarios),
                     _pct(f.correct, f.scenarios), _vendor_cell(f)))
    return rows


def format_table(bench: BenchmarkResult) -> str:
    """One table per source (the emulated corpus, then each real tool's), each with its totals."""
    return "\n\n".join(_format_source_table(bench, source) for source in bench.sources)


def _source_title(source: str) -> str:
    return ("emulated corpus (msaccucmp tables our generator writes)" if source == EMULATED
            else f"real-tool corpus ({source}: files the real tool wrote)")


def _format_source_table(bench: BenchmarkResult, source: str) -> str:
    rows = [COLUMNS, *table_rows(bench, source)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    numeric = {2, 3, 4, 6, 7}

    def line(row: Sequence[str]) -> str:
        cells = [c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return "  ".join(cells).rstrip()

    out = [_source_title(source), line(rows[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows[1:]]
    s = bench.summary(source)
    out.append("")

    def total(title: str, entry: dict[str, Any]) -> str:
        return f"{title:48} {entry['correct']:>3}/{entry['total']:<3} {_pct(entry['correct'], entry['total']):>6}"

    out.append(total("overall accuracy (supported answers)", s["overall"]))
    out.append(total("  supported families", s["supported_families"]))
    later = s["later_capability_supported_answer"]
    if later["total"]:
        out.append(total("  later-capability families (supported answer)", later))
    out.append(total("exact label (kind and op as labelled)", s["exact_label"]))
    alarms = s["false_alarms_on_clean"]
    out.append(f"{'false alarms on clean runs':48} {alarms['count']:>3}/{alarms['clean']}")
    out.append(f"{'  clean runs with an error-level finding':48} {s['clean_with_error_findings']:>3}/{alarms['clean']}")
    vendor = s["vendor_advisor"]
    if vendor["total"]:
        out.append(total("vendor msaccucmp advisor (files it can read)", vendor))
        out.append(total("  ours on the same files", s["ours_on_vendor_readable"]))
    if vendor["unreadable"]:
        out.append(f"{'vendor msaccucmp advisor cannot read':48} {vendor['unreadable']:>3} scenarios")
    groups: dict[tuple[str, str], list[str]] = {}
    for row in bench.families:
        if row.status != "supported" and row.source == source:
            key = (LATER_REASON.get(row.kind, "not diagnosed yet"), LATER_CAPABILITY.get(row.kind) or "none")
            groups.setdefault(key, [])
            if row.kind not in groups[key]:
                groups[key].append(row.kind)
    calibrated = format_calibration(bench, source)
    if calibrated:
        out.append(calibrated)
    for (reason, answer), kinds in groups.items():
        out.append(f"later capability: {', '.join(kinds)} ({reason}); "
                   f"supported answer today: {answer} at the labelled op")
    limited = sorted({(s.label_kind, s.got_kind) for s in bench.scenarios if s.source == source and s.correct
                      and not s.kind_right and s.status == "supported" and s.label_kind != CONSISTENT})
    for label_kind, got_kind in limited:
        why = "MD5 mode says where bits differ, not by how much" if got_kind == "checksum_mismatch" \
            and label_kind != "argument_mismatch" else "level L0 dumps no arguments"
        out.append(f"level-limited: {label_kind} answered {got_kind} at the labelled op ({why})")
    return "\n".join(out)


def format_misses(bench: BenchmarkResult) -> str:
    misses = bench.misses
    if not misses:
        return "misses: none"
    width = max(len(s.name) for s in misses)
    out = [f"misses ({len(misses)}):"]
    for s in misses:
        expected = s.label + (f" [supported answer: {s.supported_answer}]" if s.supported_answer else "")
        out.append(f"  {s.name:{width}}  label: {expected}")
        out.append(f"  {'':{width}}  got:   {s.got}")
        if s.label_kind == CONSISTENT and s.active:
            out.append(f"  {'':{width}}  active findings: {'; '.join(s.active)}")
    return "\n".join(out)


def format_later(bench: BenchmarkResult) -> str:
    later = [s for s in bench.scenarios if s.status != "supported" and s.correct]
    if not later:
        return ""
    width = max(len(s.name) for s in later)
    out = [f"later capability, supported answer reached ({len(later)}):"]
    out += [f"  {s.name:{width}}  label: {s.label}  got: {s.got}" for s in later]
    return "\n".join(out)


def format_report(bench: BenchmarkResult) -> str:
    seed = f", seed {bench.seed}" if bench.seed is not None else ""
    head = (f"Diagnosis benchmark: {len(bench.scenarios)} scenarios from {bench.corpus}{seed} "
            f"({bench.seconds:.1f}s)")
    parts = [head, "", format_table(bench), "", format_misses(bench)]
    later = format_later(bench)
    if later:
        parts += ["", later]
    return "\n".join(parts)


# --- command line -------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.diagnosis",
                                     description="Diagnosis accuracy of the advisor on a labelled scenario corpus.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--corpus", type=Path, metavar="DIR",
                        help=f"measure an existing corpus (default: {COMMITTED_CORPUS.relative_to(REPO)})")
    source.add_argument("--generate", type=Path, metavar="DIR",
                        help="generate the scenario corpus into DIR first (needs torch), then measure it")
    parser.add_argument("--realtool", type=Path, metavar="DIR",
                        help="also generate the real-tool corpus into DIR (needs mindstudio-probe) and measure it")
    parser.add_argument("--no-vendor", action="store_true", help="do not run the vendor's msaccucmp advisor")
    parser.add_argument("--seed", type=int, default=None,
                        help="with --generate: added to every scenario's seed (default 0)")
    parser.add_argument("--only", nargs="+", metavar="FAMILY", help="only these scenario families")
    parser.add_argument("--small", action="store_true", help="with --generate: only the committed test subset")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the full result as JSON to OUT")
    parser.add_argument("--fail-under", type=float, metavar="PCT",
                        help="exit 1 when the overall accuracy is below PCT percent (0-100)")
    args = parser.parse_args(argv)
    if args.generate is None and (args.seed is not None or args.small):
        parser.error("--seed and --small need --generate")
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        parser.error("--fail-under takes a percentage between 0 and 100")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    problems: list[str] = []
    try:
        if args.generate is not None:
            seed = args.seed or 0
            started = time.perf_counter()
            directories, problems = generate_corpus(args.generate, seed, args.only, args.small)
            print(f"generated {len(directories)} scenarios into {args.generate} "
                  f"in {time.perf_counter() - started:.1f}s", file=sys.stderr)
            corpus, bench_seed = str(args.generate), seed
        elif args.corpus is not None:
            directories = find_scenarios(args.corpus, args.only)
            corpus, bench_seed = str(args.corpus), None
        else:
            roots = [COMMITTED_CORPUS, *([REALTOOL_CORPUS] if REALTOOL_CORPUS.is_dir() else [])]
            directories = [d for root in roots for d in _find_some(root, args.only)]
            corpus, bench_seed = " + ".join(str(r) for r in roots), None
        if args.realtool is not None:
            directories += generate_realtool(args.realtool, args.only)
            corpus += f" + {args.realtool}"
        if not directories:
            raise CorpusError("no scenarios selected")
        bench = run_benchmark(directories, corpus=corpus, seed=bench_seed, vendor=not args.no_vendor)
    except CorpusError as exc:
        print(f"benchmarks.diagnosis: {exc}", file=sys.stderr)
        return 2
    print(format_report(bench))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(bench.to_dict(), indent=2) + "\n", encoding="utf-8")
    if problems:
        print("generated scenarios failed their self-check (labels untrustworthy):", *problems,
              sep="\n  ", file=sys.stderr)
        return 3
    overall = bench.summary()["overall"]
    if args.fail_under is not None and 100 * (overall["accuracy"] or 0) < args.fail_under:
        print(f"overall accuracy {100 * overall['accuracy']:.1f}% is below --fail-under {args.fail_under:g}%",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
