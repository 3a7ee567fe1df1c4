"""``advisor run`` on a 1,000,000-row comparison next to ``pandas.read_csv`` of the same file.

    python benchmarks/run_1m.py [--rows N] [--repeat N] [--keep DIR]

The short form of ``benchmarks/perf.py`` (same generator, same measurement; see there).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python benchmarks/run_1m.py): make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.perf import MAX_PEAK_PER_FILE, MAX_TIME_RATIO, TARGET_ROWS, measure_size  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=TARGET_ROWS)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step (default: 3, best time kept)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the CSV and reports here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="advisor-1m-") as tmp:
        r = measure_size(args.rows, args.keep or Path(tmp), repeat=args.repeat)
    print(f"{r.generated.rows:,} rows, {r.generated.ops:,} ops, {r.file_mib:.0f} MiB "
          f"(written in {r.generate_seconds:.1f} s)")
    print(f"pandas.read_csv  {r.pandas.wall:6.2f} s   peak {r.pandas.peak_mib:5.0f} MiB")
    print(f"advisor run      {r.advisor.wall:6.2f} s   peak {r.advisor.peak_mib:5.0f} MiB "
          f"({r.peak_per_file:.2f}x the file; target < {MAX_PEAK_PER_FILE:g}x)")
    print(f"ratio            {r.ratio:6.2f}     (target < {MAX_TIME_RATIO:g}; CPU time ratio {r.cpu_ratio:.2f})")
    print(f"diagnosis        {r.diagnosis}{'' if r.diagnosis_as_expected else ' (not the planted fault)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
