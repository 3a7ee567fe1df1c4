"""``advisor compare`` end to end: scan, read and compare, pair, compare the rest, write - streaming and resumable.

1. Scan both folders (file names and ``.npy`` headers only).
2. Read every target dump once (:func:`advisor.compare.work.compare_pair`, in worker threads or
   on a cluster through a :data:`~advisor.compare.work.Mapper`): its fingerprint
   (:mod:`advisor.tensors.lineage`) and, when the names already say which golden tensor it is
   compared with (an op's outputs, or any tensor when both sides use the same naming), its metrics,
   from the same pages.
3. Pair (:mod:`advisor.tensors.pairing`): rows, and the distinct comparisons they need. An op's
   input holds its producer's bytes, so most input rows share the comparison of their producer's
   output row, computed in step 2.
4. Compute the comparisons step 2 could not know (inputs fed through target-only Cast/TransData
   ops, inputs no dumped op produced): one pair of tensors per worker at a time, memory-mapped and
   streamed in chunks, only the formatted cells travel back.
5. Write the CSV (atomically) and drop the journal.

Steps 2 and 4 append each result to the journal (:mod:`journal`) as it arrives: an interrupted
run, started again with the same arguments, skips what is done.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TextIO

from ..progress import ProgressBar
from ..tensors import kernel
from ..tensors.fusion import FusionMap
from ..tensors.fusion_sources import read_sources
from ..tensors.inventory import DumpFolder, scan_folder
from ..tensors.lineage import TensorPrint
from ..tensors.op_map import OpMap, load_op_map
from ..tensors.pairing import Plan, PlannedRow, fusion_map, name_partners, plan_rows
from .journal import Journal, run_signature
from .msaccucmp_csv import format_row, result_file_name, write_result_rows
from .work import Mapper, PairResult, PairTask, pair_key, run


@dataclass
class CompareOptions:
    golden: Path
    target: Path
    output: Path                                  # a CSV path, or a folder for result_<time>.csv
    graphs: tuple[Path, ...] = ()                 # golden ONNX, target GE/OM JSON, JSON maps (by content)
    mapping: Path | None = None                   # --map: {target op: golden ops}, YAML or JSON
    fusion: Path | None = None                    # --fusion: fusion_result.json (passes that took effect)
    pair_by_shape: bool = False                   # opt-in guess for inputs nothing else pairs
    jobs: int | None = None                       # worker threads (default: every core)
    progress: bool | None = None                  # None: when stderr is a terminal and CI is not set
    resume: bool = True
    mapper: Mapper | None = None                  # where pairs are compared (None: `jobs` local threads)
    op_map: Path | None = None                    # target op/argument names -> golden ones (op_map.py)


@dataclass
class CompareSummary:
    output: Path
    rows: int
    pairs: int                                    # distinct comparisons
    computed: int                                 # ... computed by this run (the rest resumed)
    pairing: str
    seconds: float
    notes: list[str] = field(default_factory=list)
    coverage: dict[str, int] = field(default_factory=dict)   # rows by how they were paired ("": not compared)


def _is_folder(output: Path) -> bool:
    return output.is_dir() or str(output).endswith(("/", os.sep))


def output_path(output: Path, now: datetime | None = None) -> Path:
    """``output`` itself, or ``output/result_<YYYYmmddHHMMSS>.csv`` when it is a folder."""
    return output / result_file_name(now or datetime.now()) if _is_folder(output) else output


def journal_path(output: Path) -> Path:
    """Where the resume journal of a run writing to ``output`` lives (the same for every attempt,
    even when the CSV name carries the time)."""
    return output / ".advisor-compare.journal" if _is_folder(output) else output.with_name(output.name + ".journal")


def compare_dumps(options: CompareOptions, stream: TextIO | None = None) -> CompareSummary:
    """Compare the dump folders and write the msaccucmp CSV (see the module docstring)."""
    started = time.monotonic()
    golden = scan_folder(options.golden, "golden")
    target = scan_folder(options.target, "target")
    fusion = _fusion(options, golden, target)
    op_map = load_op_map(options.op_map) if options.op_map else None
    output = output_path(options.output)
    inputs = [*options.graphs, *(p for p in (options.mapping, options.fusion) if p is not None)]
    journal = Journal(journal_path(options.output),
                      run_signature(golden, target, inputs, options.pair_by_shape, options.op_map),
                      resume=options.resume)
    jobs = max(1, options.jobs or os.cpu_count() or 1)
    journal.open()
    work = _Work(journal, options.mapper, jobs, options.progress, stream)
    try:
        prints = work.read_targets(target, golden, fusion, op_map)
        plan = plan_rows(golden, target, prints, fusion, options.pair_by_shape, op_map)
        keys = work.compare_rest(plan, golden, target)
        rows = [format_row(row.labels, journal.pairs[keys[row.pair_key]] if row.pair_key is not None else None)
                for row in plan.rows]
        write_result_rows(rows, output)
    except BaseException:
        journal.close(remove=False)
        raise
    journal.close(remove=True)
    notes = [*golden.notes, *target.notes, *plan.notes, *(f"skipped {n}" for n in golden.skipped + target.skipped)]
    return CompareSummary(output, len(rows), len(keys), work.computed, plan.pairing,
                          time.monotonic() - started, notes, dict(plan.coverage))


def _fusion(options: CompareOptions, golden: DumpFolder, target: DumpFolder) -> FusionMap:
    """What the graphs, the map and the fusion report say (names and execution order without them)."""
    return fusion_map(golden, target, read_sources(list(options.graphs), options.mapping, options.fusion))


def _relative(path: Path, root: Path) -> str:
    """``path`` under ``root`` as a relative POSIX path (by its text: the scan found it there)."""
    text, prefix = str(path), str(root)
    if text.startswith(prefix) and text[len(prefix):len(prefix) + 1] == os.sep:
        return text[len(prefix) + 1:].replace(os.sep, "/")
    return path.relative_to(root).as_posix()


def _pair_key(row: PlannedRow, golden: DumpFolder) -> str:
    dtype, shape, crc, adler, _ = row.pair_key
    return pair_key(dtype, shape, TensorPrint(crc, adler, False, ""), _relative(row.golden.path, golden.root))



class _Work:
    """Steps 2 and 4: tasks to the mapper, results into the journal (on this side only)."""

    def __init__(self, journal: Journal, mapper: Mapper | None, jobs: int, progress: bool | None,
                 stream: TextIO | None) -> None:
        self.journal, self.mapper, self.jobs = journal, mapper, jobs
        self.progress, self.stream = progress, stream
        self.computed = 0
        self.compiled = False
        self.bar: ProgressBar | None = None

    def _record(self, results: list[PairResult]) -> None:
        """One batch's results into the journal, flushed once for the batch."""
        for result in results:
            if result.print is not None:
                self.journal.add_print(result.key, result.print)
            if (result.metrics is not None and result.pair_key is not None
                    and result.pair_key not in self.journal.pairs):
                self.journal.add_pair(result.pair_key, result.metrics)
                self.computed += 1
        self.journal.flush()
        if self.bar is not None:
            self.bar.advance(len(results))

    def _run(self, label: str, total: int, tasks: list[PairTask]) -> None:
        self.bar = ProgressBar(label, total, stream=self.stream, enabled=self.progress, done=total - len(tasks))
        try:
            run(tasks, self._record, self.mapper, self.jobs)
        finally:
            self.bar.close()
            self.bar = None

    def read_targets(self, target: DumpFolder, golden: DumpFolder, fusion: FusionMap | None,
                     op_map: OpMap | None = None) -> dict[str, TensorPrint]:
        """Step 2: every target dump not in the journal, fingerprinted and compared where the names
        say with what; returns the fingerprints by path. The run takes the compiled pass when what
        this step reads in all (done or not) pays for numba: decided from the dumps alone, so every
        attempt of a resumed run decides the same (tensors/kernel.py: use_in_run)."""
        partners = name_partners(golden, target, fusion, op_map)
        self.compiled = sum(d.nbytes + (partners[str(d.path)].nbytes if str(d.path) in partners else 0)
                            for d in target.files) >= kernel.RUN_BYTES
        tasks = []
        for dump in target.files:
            key = _relative(dump.path, target.root)
            if key in self.journal.prints:
                continue
            other = partners.get(str(dump.path))
            tasks.append(PairTask(key, str(dump.path), str(other.path) if other else None,
                                  _relative(other.path, golden.root) if other else None,
                                  nbytes=dump.nbytes + (other.nbytes if other else 0), compiled=self.compiled))
        self._run("reading target", len(target.files), tasks)
        return {str(target.root / key): value for key, value in self.journal.prints.items()}

    def compare_rest(self, plan: Plan, golden: DumpFolder, target: DumpFolder) -> dict[tuple, str]:
        """Step 4: the distinct comparisons of the plan that step 2 (or an earlier run) did not make;
        returns the journal key of each (by the plan's pair key), made once per comparison."""
        pairs = plan.pairs()
        keys = {key: _pair_key(row, golden) for key, row in pairs.items()}
        unique = {keys[key]: row for key, row in pairs.items()}
        tasks = [PairTask(_relative(row.target.path, target.root), str(row.target.path), str(row.golden.path),
                          fingerprint=False, pair_key=key, nbytes=row.target.nbytes + row.golden.nbytes,
                          compiled=self.compiled)
                 for key, row in unique.items() if key not in self.journal.pairs]
        self._run("comparing pairs", len(tasks), tasks)
        return keys
