"""``advisor run`` on a 1,000,000-row comparison next to ``pandas.read_csv`` of the same file.

    python benchmarks/run_1m.py [--rows N] [--repeat N] [--keep DIR]

The same generator and measurement as ``benchmarks/perf.py`` (see there): fresh processes, interleaved,
each timed from start to exit with its peak RSS from the kernel (``os.wait4``). Three reads of the
file are timed beside ``advisor run``:

* ``pandas.read_csv`` with the C engine and pandas' own (Python) strings: the baseline of the time
  target. Issue #17 set the target against this read ("pandas.read_csv (C engine) 5.1-5.5 s"), and
  named the read with pyarrow installed apart ("2.0-2.9 s when pyarrow is installed (pandas 3 then
  keeps strings in Arrow)"; "print the ratio against the Arrow-backed read too"). pyarrow is now one
  of advisor's own dependencies, so a plain ``read_csv`` here keeps Arrow strings:
  ``mode.string_storage = "python"`` gives the read pandas 3 makes without pyarrow.
* the same read with Arrow strings (what ``read_csv`` gives in advisor's environment) and with
  pyarrow's engine: the Arrow-backed reads, printed beside the target.
* advisor's reader alone (``read_comparison``: imports, the read and the canonical table, no facts
  or reports), to tell the reader's share of the run.

Targets at 1,000,000 rows: ``advisor run`` within 1.5x the baseline read's wall time and a peak
RSS within 2x the file. The exit status is 1 when a target is missed. The load average is printed:
wall times on a busy machine vary; the CPU ratio varies less.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python benchmarks/run_1m.py): make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf import (  # noqa: E402
    CSV_NAME,
    FORMATS,
    TARGET_ROWS,
    Measurement,
    _load,
    measure,
    read_diagnosis,
    write_llm_comparison,
)

MAX_TIME_RATIO = 1.5      # advisor run / pandas.read_csv (C engine), wall time
MAX_PEAK_PER_FILE = 2.0   # advisor peak RSS / file size
BASELINE = "pandas C, Python str"
READS = {
    BASELINE: "import sys, pandas; pandas.options.mode.string_storage = 'python'; pandas.read_csv(sys.argv[1])",
    "pandas C, Arrow str": "import sys, pandas; pandas.read_csv(sys.argv[1])",
    "pandas pyarrow engine": "import sys, pandas; pandas.read_csv(sys.argv[1], engine='pyarrow')",
    # As advisor's command line reads: its allocator settings (advisor/memory.py) first.
    "advisor reader": "import sys; from advisor.memory import release_freed_memory; release_freed_memory(); "
                      "from advisor.ingest import read_comparison; read_comparison(sys.argv[1])",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=TARGET_ROWS)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step (default: 3, best time kept)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the CSV and reports here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="advisor-1m-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        path = workdir / CSV_NAME
        start = time.perf_counter()
        generated = write_llm_comparison(path, args.rows, seed=0)
        generate_seconds = time.perf_counter() - start
        reports = workdir / "advisor-report"
        commands = {name: [sys.executable, "-c", code, str(path)] for name, code in READS.items()}
        commands["advisor run"] = [sys.executable, "-m", "advisor", "run", str(path), "--format", FORMATS,
                                   "-o", str(reports), "-q"]
        runs: dict[str, list[Measurement]] = {step: [] for step in commands}
        for _ in range(args.repeat):
            for step, command in commands.items():
                runs[step].append(measure(command))
        best = {step: Measurement(min(m.wall for m in ms), min(m.cpu for m in ms), max(m.peak_mib for m in ms))
                for step, ms in runs.items()}
        diagnosis, as_expected = read_diagnosis(reports / "report.json", generated)
        file_mib = path.stat().st_size / 2**20
    base, advisor = best[BASELINE], best["advisor run"]
    ratio, peak = advisor.wall / base.wall, advisor.peak_mib / file_mib
    print(f"{generated.rows:,} rows, {generated.ops:,} ops, {file_mib:.0f} MiB (written in {generate_seconds:.1f} s); "
          f"best of {args.repeat}; load average {_load()}")
    for step, m in best.items():
        print(f"{step:<22} {m.wall:6.2f} s wall  {m.cpu:6.2f} s CPU   peak {m.peak_mib:5.0f} MiB "
              f"({m.peak_mib / file_mib:.2f}x the file)")
    reader = best["advisor reader"]
    print(f"reader / baseline read      {reader.wall / base.wall:5.2f} wall, {reader.cpu / base.cpu:5.2f} CPU; "
          f"peak {reader.peak_mib / file_mib:.2f}x the file, "
          f"{reader.peak_mib * 2**20 / generated.rows:,.0f} bytes per row")
    print(f"advisor / baseline read     {ratio:5.2f} wall, {advisor.cpu / base.cpu:5.2f} CPU "
          f"(target < {MAX_TIME_RATIO:g} wall; baseline: {BASELINE})")
    for step in ("pandas C, Arrow str", "pandas pyarrow engine"):
        print(f"advisor / {step:<21} {advisor.wall / best[step].wall:5.2f} wall, "
              f"{advisor.cpu / best[step].cpu:5.2f} CPU (Arrow-backed, no target)")
    print(f"advisor peak / file         {peak:5.2f}x (target < {MAX_PEAK_PER_FILE:g}x); "
          f"{advisor.peak_mib * 2**20 / generated.rows:,.0f} bytes per row")
    print(f"diagnosis                   {diagnosis}{'' if as_expected else ' (not the planted fault)'}")
    met = ratio < MAX_TIME_RATIO and peak < MAX_PEAK_PER_FILE
    print("targets " + ("MET" if met else "NOT MET"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
