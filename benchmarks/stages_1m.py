"""Where ``advisor run`` spends its time and memory on a large comparison, stage by stage.

    python -m benchmarks.stages_1m COMPARISON.csv [--format html,md,json,txt] [-o OUTDIR]
    python -m benchmarks.stages_1m --bench BENCH/dump.json --target TARGET/dump.json [...]

Runs the same steps as ``advisor run`` in this one process and prints, for each stage (reading the
comparison, each step of building the facts, the rules, the reports), its CPU seconds, its wall
seconds (below the CPU seconds where threads overlap, above them where the stage waits), the resident
memory after it and the peak reached during it (the kernel's high-water mark, reset before each
stage: Linux only). The steps of ``build_facts`` are timed by wrapping the functions it calls.
Make the CSV with ``python benchmarks/run_1m.py --keep DIR``. The load average is printed.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_mib(field: str) -> float:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    try:
        _CLEAR_REFS.write_text("5")   # resets VmHWM (the peak resident set) to the current size
    except OSError:
        pass


class Stages:
    """Nested stages; each one's peak is the highest resident size seen while it ran (the kernel's
    mark is reset as each stage starts, the marks of the stages inside it are carried up)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, float, float, float, float]] = []
        self.seen: list[float] = []   # per open stage: the highest peak of its finished inner stages

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.seen:
            self.seen[-1] = max(self.seen[-1], _status_mib("VmHWM"))
        _reset_peak()
        self.seen.append(0.0)
        at = len(self.rows)
        self.rows.append((len(self.seen) - 1, name, 0.0, 0.0, 0.0, 0.0))
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            peak = max(self.seen.pop(), _status_mib("VmHWM"))
            if self.seen:
                self.seen[-1] = max(self.seen[-1], peak)
            self.rows[at] = (len(self.seen), name, time.process_time() - cpu, time.perf_counter() - wall,
                             _status_mib("VmRSS"), peak)

    def wrap(self, module: Any, name: str) -> None:
        original: Callable[..., Any] = getattr(module, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.stage(name):
                return original(*args, **kwargs)
        setattr(module, name, timed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("comparison", type=Path, nargs="?")
    parser.add_argument("--bench", type=Path, help="an msprobe dump.json pair instead of a comparison")
    parser.add_argument("--target", type=Path)
    parser.add_argument("--format", default="html,md,json,txt")
    parser.add_argument("-o", "--output", type=Path, default=Path("advisor-report-stages"))
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc's allocator settings as they are (advisor's command line changes them)")
    args = parser.parse_args(argv)
    if (args.comparison is None) == (args.bench is None) or (args.bench is None) != (args.target is None):
        parser.error("give a comparison, or --bench and --target")
    stages = Stages()
    if not args.default_malloc:
        from advisor.memory import release_freed_memory
        release_freed_memory()   # as advisor's command line does
    with stages.stage("imports"):
        from advisor import pipeline
        from advisor.facts import builder
        from advisor.report import write_reports
    from advisor.cli import _tune_collector
    _tune_collector()   # as the advisor program does once its command is imported
    for name in ("row_flags", "judge_roles", "aggregate_ops", "mark_training", "mark_tool_flags", "mark_inputs",
                 "mark_entries", "network_output", "mark_fp16_sensitive", "mark_inserted_normalization",
                 "network_fact", "training_network_fields", "tool_flag_fields", "choose_op_facts",
                 "summarise_overflow"):
        stages.wrap(builder, name)
    for name in ("load_packs", "read_comparison", "read_dump_pair", "build_facts", "_check_something_compared",
                 "_evidence", "provided_facts", "run_rules", "attach_source_lines", "rank_findings", "vendor_verdict",
                 "remedy_for", "op_series", "root_neighbourhood", "key_ops", "op_types_of", "Diagnosis"):
        stages.wrap(pipeline, name)
    options = pipeline.AnalysisOptions(comparison=args.comparison, bench=args.bench, target=args.target)
    with stages.stage("analyse (total)"):
        diagnosis = pipeline.analyse(options)
    with stages.stage("write_reports"):
        write_reports(diagnosis, args.output, formats=args.format)
    inputs = [args.comparison] if args.comparison else [args.bench, args.target]
    print(f"{' vs '.join(map(str, inputs))} ({sum(p.stat().st_size for p in inputs) / 2**20:.0f} MiB); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'stage':<34} {'CPU s':>7} {'wall s':>7} {'RSS after':>10} {'peak in':>9}")
    for depth, name, cpu, wall, rss, peak in stages.rows:
        print(f"{'  ' * depth + name:<34} {cpu:7.2f} {wall:7.2f} {rss:6.0f} MiB {peak:5.0f} MiB")
    print(f"peak of the run {max(row[5] for row in stages.rows):.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
