"""``advisor run`` on every input path at 100k, 1M and 5M rows, beside the baseline read of the same file.

    python -m benchmarks.scale_paths [--rows 100000 1000000 5000000] [--paths summary md5 ...] [--keep DIR]

Paths: ``msaccucmp`` (the synthetic LLM comparison of benchmarks/_llm_comparison.py), ``summary``,
``all``, ``md5`` (msprobe compare CSVs), ``xlsx`` (msprobe's ``--xlsx`` workbook) and ``dumpjson``
(a pair of msprobe ``dump.json``). The msprobe inputs are files the real tool wrote (tests/data/
realtool, tests/data/msprobe_faults: msprobe 26.2 on the CPU), replicated to size with every call
renamed to stay unique (benchmarks/_msprobe_replica.py), so each copy holds the same fault.

Each step runs in a fresh process, timed from start to exit with its peak RSS from the kernel
(benchmarks/perf.py ``measure``). Beside ``advisor run`` (all report formats) the same file is read
by the baselines the targets name: ``pandas.read_csv`` with the C engine and Python strings, and
with Arrow strings (CSV paths); ``pandas.read_excel`` (xlsx); ``json.load`` of both files (dump.json
pair). Printed per size: wall time, seconds and peak MiB per 100k rows, the ratios to the baselines.

Budget lines (the exit status is 1 when one fails):

* growth: advisor's seconds per 100k rows at the largest size at most ``--budget`` (default 2) times
  that at the smallest, per path (superlinear growth otherwise);
* targets, from 1M rows on (below, a Python start and imports of ~2 s and ~150 MiB weigh more than
  the file): a CSV path within 2x the Python-string read and 3x the Arrow-string read; peak RSS
  within 2x the file; a dump.json pair within 3x ``json.load`` of both; an msprobe comparison of
  1M rows in under 10 s;
* diagnosis: on the replicated msprobe inputs, the root cause (kind, op, index) at each size is the
  one of the first 10,000 rows' worth of the same file (the msaccucmp generator moves its fault
  with the depth of the network: benchmarks/run_1m.py checks that path's diagnosis).

An xlsx sheet holds at most 1,048,576 rows: larger xlsx sizes are skipped (said so). The load
average is printed: on a shared machine wall times vary, the ratios (same run, same load) less.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._msprobe_replica import replicate_compare_csv, replicate_dump_json  # noqa: E402
from benchmarks.perf import FORMATS, REPO, Measurement, _load, measure  # noqa: E402

DEFAULT_ROWS = (100_000, 1_000_000, 5_000_000)
REFERENCE_ROWS = 10_000
BUDGET = 2.0
XLSX_MAX_ROWS = 1_048_575
MAX_CSV_RATIO = {"pandas C, Python str": 2.0, "pandas C, Arrow str": 3.0}
MAX_DUMP_RATIO = 3.0
MAX_PEAK_PER_FILE = 2.0
MSPROBE_1M_SECONDS = 10.0
TARGET_MIN_ROWS = 1_000_000
DATA = REPO / "tests" / "data"
TRAINING_STEP = "msprobe_fp16_overflow__masked_transformer__attention_logits_autocast__mix_statistics"
SOURCES = {
    "summary": DATA / "realtool" / TRAINING_STEP,
    "all": DATA / "realtool" / "msprobe_input_mismatch__masked_transformer__left_padding__L1_tensor",
    "md5": DATA / "realtool" / "msprobe_parameter_mismatch__detector__cls_head_weights__L1_md5",
    "xlsx": DATA / "realtool" / TRAINING_STEP,
    "dumpjson": DATA / "msprobe_faults",
}
PATHS = ("msaccucmp", "summary", "all", "md5", "xlsx", "dumpjson")
CSV_READS = {
    "pandas C, Python str": "import sys, pandas; pandas.options.mode.string_storage = 'python'; "
                            "pandas.read_csv(sys.argv[1])",
    "pandas C, Arrow str": "import sys, pandas; pandas.read_csv(sys.argv[1])",
}
XLSX_READ = {"pandas read_excel": "import sys, pandas; pandas.read_excel(sys.argv[1], dtype=str)"}
JSON_READ = {"json.load both": "import sys, json; [json.load(open(p, encoding='utf-8')) for p in sys.argv[1:]]"}


@dataclass
class Result:
    path: str
    rows: int
    file_mib: float
    advisor: Measurement
    baselines: dict[str, Measurement]
    root: tuple | None
    reference_root: tuple | None = None
    notes: list[str] = field(default_factory=list)


def write_input(path: str, rows: int, workdir: Path) -> list[Path]:
    """The input files of ``path`` with ``rows`` rows (dump.json: that many compared tensors)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if path == "msaccucmp":
        from benchmarks.perf import write_llm_comparison

        target = workdir / "result_20240506112307.csv"
        write_llm_comparison(target, rows, seed=0)
        return [target]
    if path == "dumpjson":
        calls = _calls_for(rows, SOURCES[path] / "fp16_overflow_target_dump.json")
        files = []
        for side in ("bench", "target"):
            files.append(workdir / f"{side}_dump.json")
            replicate_dump_json(SOURCES[path] / f"fp16_overflow_{side}_dump.json", files[-1], calls)
        return files
    source = next(SOURCES[path].glob("compare_result_*.csv"))
    target = workdir / f"compare_result_{path}.csv"
    replicate_compare_csv(source, target, rows)
    if path == "xlsx":
        return [_as_xlsx(target)]
    return [target]


def _calls_for(rows: int, dump: Path) -> int:
    """How many calls of ``dump`` (replicated) give about ``rows`` compared tensors."""
    data = json.loads(dump.read_text(encoding="utf-8"))["data"]

    def tensors(value: object) -> int:
        if isinstance(value, dict):
            return 1 if "type" in value else sum(tensors(v) for v in value.values())
        if isinstance(value, list):
            return sum(tensors(v) for v in value)
        return 0

    per_call = sum(tensors(v) for v in data.values()) / max(len(data), 1)
    return max(1, round(rows / per_call))


def _as_xlsx(csv_path: Path) -> Path:
    """The CSV as msprobe's ``--xlsx`` workbook: one sheet, the header then every row, as text."""
    import csv

    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet("Sheet1")
    with open(csv_path, encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle):
            sheet.append(row)
    target = csv_path.with_suffix(".xlsx")
    book.save(target)
    csv_path.unlink()
    return target


def run_advisor(files: list[Path], out: Path) -> tuple[Measurement, tuple | None]:
    inputs = ["--bench", str(files[0]), "--target", str(files[1])] if len(files) == 2 else [str(files[0])]
    measured = measure([sys.executable, "-m", "advisor", "run", *inputs, "--format", FORMATS, "-o", str(out), "-q"])
    root = json.loads((out / "report.json").read_text(encoding="utf-8")).get("root_cause")
    return measured, (root["kind"], root["op"], root["index"]) if root else None


def measure_path(path: str, rows: int, workdir: Path) -> Result:
    files = write_input(path, rows, workdir / f"{path}_{rows}")
    try:
        reads = JSON_READ if path == "dumpjson" else XLSX_READ if path == "xlsx" else CSV_READS
        baselines = {name: measure([sys.executable, "-c", code, *map(str, files)]) for name, code in reads.items()}
        advisor, root = run_advisor(files, workdir / f"{path}_{rows}_report")
        size = sum(f.stat().st_size for f in files) / 2**20
    finally:   # a multi-GB input never outlives its step, even one that failed
        shutil.rmtree(workdir / f"{path}_{rows}")
    return Result(path, rows, size, advisor, baselines, root)


def reference_root(path: str, workdir: Path) -> tuple | None:
    files = write_input(path, REFERENCE_ROWS, workdir / f"{path}_reference")
    _, root = run_advisor(files, workdir / f"{path}_reference_report")
    return root


def format_results(results: list[Result]) -> list[str]:
    lines = [f"{'path':9} {'rows':>9} {'file MiB':>9} {'advisor s':>9} {'s/100k':>7} {'MiB/100k':>8} "
             f"{'peak/file':>9}  baselines (s, advisor / baseline)"]
    for r in results:
        per = 100_000 / r.rows
        reads = ", ".join(f"{name} {m.wall:.2f} ({r.advisor.wall / m.wall:.1f}x)" for name, m in r.baselines.items())
        lines.append(f"{r.path:9} {r.rows:>9,} {r.file_mib:>9.1f} {r.advisor.wall:>9.2f} {r.advisor.wall * per:>7.2f} "
                     f"{r.advisor.peak_mib * per:>8.1f} {r.advisor.peak_mib / r.file_mib:>9.2f}  {reads}")
    return lines


def check(results: list[Result], budget: float) -> list[str]:
    """The budget lines that fail (empty: all met)."""
    failed = []
    by_path: dict[str, list[Result]] = {}
    for r in results:
        by_path.setdefault(r.path, []).append(r)
        if r.path != "msaccucmp" and r.root != r.reference_root:
            failed.append(f"{r.path} {r.rows:,}: root cause {r.root} but {r.reference_root} on the first "
                          f"{REFERENCE_ROWS:,} rows")
        if r.rows < TARGET_MIN_ROWS:
            continue
        if r.path == "dumpjson":
            ratio = r.advisor.wall / r.baselines["json.load both"].wall
            if ratio > MAX_DUMP_RATIO:
                failed.append(f"{r.path} {r.rows:,}: {ratio:.1f}x json.load of both (target {MAX_DUMP_RATIO}x)")
        elif r.path != "xlsx":
            for name, limit in MAX_CSV_RATIO.items():
                ratio = r.advisor.wall / r.baselines[name].wall
                if ratio > limit:
                    failed.append(f"{r.path} {r.rows:,}: {ratio:.1f}x {name} (target {limit}x)")
        if r.advisor.peak_mib > MAX_PEAK_PER_FILE * r.file_mib:
            failed.append(f"{r.path} {r.rows:,}: peak RSS {r.advisor.peak_mib / r.file_mib:.2f}x the file "
                          f"(target {MAX_PEAK_PER_FILE}x)")
        if r.path in ("summary", "all", "md5") and r.rows == 1_000_000 and r.advisor.wall > MSPROBE_1M_SECONDS:
            failed.append(f"{r.path} 1,000,000: {r.advisor.wall:.1f} s (target < {MSPROBE_1M_SECONDS:.0f} s)")
    for path, sized in by_path.items():
        first, last = sized[0], sized[-1]
        if last.rows > first.rows:
            growth = (last.advisor.wall / last.rows) / (first.advisor.wall / first.rows)
            if growth > budget:
                failed.append(f"{path}: time per row grew {growth:.2f}x from {first.rows:,} to {last.rows:,} "
                              f"rows (budget {budget}x): SUPERLINEAR")
    return failed


def _broken(path: str, rows: int, err: RuntimeError) -> str:
    """A step whose command failed, as one budget line (printed as it happens)."""
    line = f"{path} {rows:,}: did not run: {' '.join(str(err).split())[-300:]}"
    print(line, flush=True)
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=list(DEFAULT_ROWS))
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--budget", type=float, default=BUDGET, help="largest / smallest time per row (default 2)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the reports here")
    args = parser.parse_args(argv)
    results = []
    broken: list[str] = []     # steps whose command failed: said, counted as missed, the others still run
    with tempfile.TemporaryDirectory(prefix="advisor-scale-") as tmp:
        workdir = args.keep or Path(tmp)
        for path in args.paths:
            try:
                reference = reference_root(path, workdir) if path != "msaccucmp" else None
            except RuntimeError as err:
                broken.append(_broken(path, REFERENCE_ROWS, err))
                continue
            for rows in sorted(args.rows):
                if path == "xlsx" and rows > XLSX_MAX_ROWS:
                    print(f"xlsx {rows:,}: skipped (a sheet holds at most {XLSX_MAX_ROWS + 1:,} rows)", flush=True)
                    continue
                try:
                    result = measure_path(path, rows, workdir)
                except RuntimeError as err:
                    broken.append(_broken(path, rows, err))
                    continue
                result.reference_root = reference
                results.append(result)
                print(format_results([result])[-1], flush=True)
    print("\n".join(["", *format_results(results), f"load average: {_load()}"]))
    failed = broken + check(results, args.budget)
    for line in failed:
        print(f"MISSED: {line}")
    print("all budget lines met" if not failed else f"{len(failed)} budget line(s) missed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
