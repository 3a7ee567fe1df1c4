"""How long ``advisor run`` takes on large comparisons, next to plain ``pandas.read_csv``.

    python benchmarks/perf.py                      # 10k, 100k and 1M rows
    python benchmarks/perf.py --sizes 1000000 --keep /tmp/advisor-perf
    python benchmarks/perf.py --graph all          # the graph case at every size (default: 1M only)

For each size a comparison CSV shaped like a large language model in msaccucmp layout is written
(``benchmarks/_llm_comparison.py``: repeated decoder layers, drifting cosines, an FP16 overflow in a
LayerNorm ``Pow`` at ~62 % depth, target-only TransData/Cast, NaN and inf cells, ``Node_Output``).
Then, in fresh processes and interleaved, ``advisor run`` writes all four reports and
``pandas.read_csv`` reads the same file. Each process is timed from start to exit (interpreter
start and imports included, as a user waits for them) and its peak RSS is taken from the kernel's
accounting of that one child (``os.wait4``), so the two figures are measured the same way. The
children are started by a small timer process, not by this one: a child's peak RSS counts the
memory of the process it was spawned from, and this one holds the generator's arrays.

The graph case (``--graph``: ``target``, the default, at 1,000,000 rows only; ``all``; ``off``): the
generator also writes the matching GE graph dump (``ge_proto_..._Build.txt``, protobuf text, one op
per target op of the table, data edges along the decoder layers), ``read_graph`` is timed on it in
this process, and ``advisor run RESULT.csv --graph GRAPH`` is timed like ``advisor run`` above,
interleaved with it; its ratio is against the same ``pandas.read_csv`` of the CSV. No target is
stated for it.

Targets, at 1,000,000 rows: ``advisor run`` under twice the time of reading the file with pandas,
and its peak memory under three times the file size. The exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python benchmarks/perf.py): make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._llm_comparison import Generated, write_llm_comparison  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
TARGET_ROWS = 1_000_000
MAX_TIME_RATIO = 2.0        # advisor run / pandas.read_csv, wall time
MAX_PEAK_PER_FILE = 3.0     # advisor peak RSS / file size
FORMATS = "html,md,json,txt"
CSV_NAME = "result_20240506112307.csv"
GRAPH_NAME = "ge_proto_00000001_graph_0_Build.txt"
GRAPH_CHOICES = ("target", "all", "off")
PANDAS_READ = "import sys, pandas; pandas.read_csv(sys.argv[1])"

__all__ = ["Generated", "GraphResult", "Measurement", "SizeResult", "measure", "measure_size", "write_llm_comparison"]


@dataclass
class Measurement:
    wall: float          # seconds, process start to exit
    cpu: float           # seconds of CPU (user + system): steadier than wall time on a busy machine
    peak_mib: float      # peak resident set size of the process


@dataclass
class GraphResult:
    file_mib: float
    ops: int
    read_seconds: float    # read_graph alone, in this process
    advisor: Measurement   # advisor run RESULT.csv --graph GRAPH
    diagnosis: str
    diagnosis_as_expected: bool


@dataclass
class SizeResult:
    generated: Generated
    generate_seconds: float
    file_mib: float
    pandas: Measurement
    advisor: Measurement
    diagnosis: str
    diagnosis_as_expected: bool
    graph: GraphResult | None = None

    @property
    def ratio(self) -> float:
        return self.advisor.wall / self.pandas.wall

    @property
    def cpu_ratio(self) -> float:
        return self.advisor.cpu / self.pandas.cpu

    @property
    def peak_per_file(self) -> float:
        return self.advisor.peak_mib / self.file_mib


# Runs argv[1:] (argv[1] an absolute path) with stdout discarded and prints its wall time, CPU
# time, peak RSS and exit code. wait4 gives the rusage of that one child (RUSAGE_CHILDREN would
# be the largest of all children so far).
_TIMER = """
import os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
      os.waitstatus_to_exitcode(status))
"""


def measure(argv: list[str]) -> Measurement:
    """Run ``argv`` (its program an absolute path) in the repository, with the repository
    importable: wall time and peak RSS."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", _TIMER, *argv], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True)
    wall, cpu, peak, code = done.stdout.split()
    if int(code) != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {code}: {done.stderr.strip()[-2000:]}")
    scale = 2**20 if sys.platform == "darwin" else 2**10  # ru_maxrss: bytes on macOS, KiB on Linux
    return Measurement(float(wall), float(cpu), int(peak) / scale)


def measure_size(rows: int, workdir: Path, *, repeat: int = 3, seed: int = 0, graph: bool = False) -> SizeResult:
    """Write the ``rows``-row comparison (and, with ``graph``, its GE graph dump) into ``workdir``,
    then time pandas and advisor (and advisor with the graph) on it ``repeat`` times each,
    interleaved: the best wall time and the largest peak of each."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / CSV_NAME
    graph_path = workdir / GRAPH_NAME if graph else None
    start = time.perf_counter()
    generated = write_llm_comparison(path, rows, seed=seed, graph=graph_path)
    generate_seconds = time.perf_counter() - start
    reports = workdir / "advisor-report"
    graph_reports = workdir / "advisor-report-graph"
    advisor = [sys.executable, "-m", "advisor", "run", str(path), "--format", FORMATS]
    commands = {"pandas": [sys.executable, "-c", PANDAS_READ, str(path)],
                "advisor": [*advisor, "-o", str(reports), "-q"]}
    if graph_path is not None:
        commands["graph"] = [*advisor, "--graph", str(graph_path), "-o", str(graph_reports), "-q"]
    runs: dict[str, list[Measurement]] = {step: [] for step in commands}
    for _ in range(repeat):
        for step, argv in commands.items():
            runs[step].append(measure(argv))
    best = {step: Measurement(min(m.wall for m in ms), min(m.cpu for m in ms), max(m.peak_mib for m in ms))
            for step, ms in runs.items()}
    diagnosis, as_expected = read_diagnosis(reports / "report.json", generated)
    graph_result = None
    if graph_path is not None:
        graph_result = GraphResult(graph_path.stat().st_size / 2**20, generated.graph_ops, time_read_graph(graph_path),
                                   best["graph"], *read_diagnosis(graph_reports / "report.json", generated))
    return SizeResult(generated, generate_seconds, path.stat().st_size / 2**20, best["pandas"], best["advisor"],
                      diagnosis, as_expected, graph_result)


def time_read_graph(path: Path) -> float:
    """Seconds of ``read_graph`` on ``path``, in this process (imports done beforehand)."""
    from advisor.graph import read_graph

    start = time.perf_counter()
    read_graph(path)
    return time.perf_counter() - start


def read_diagnosis(report: Path, generated: Generated) -> tuple[str, bool]:
    """The root cause report.json names, and whether it is the fault the generator planted."""
    root = json.loads(report.read_text(encoding="utf-8")).get("root_cause")
    if root is None:
        return "no root cause (consistent)", False
    text = f"{root['kind']} at {root['op']} (index {root['index']})"
    return text, root["kind"] == "fp16_overflow" and root["index"] == generated.root_op


def format_table(results: list[SizeResult], repeat: int) -> str:
    header = ("rows", "file MiB", "generate s", "pandas s", "advisor s", "ratio", "cpu ratio", "pandas peak MiB",
              "advisor peak MiB", "peak/file")
    lines = [f"advisor run (--format {FORMATS}) vs pandas.read_csv, LLM-shaped msaccucmp comparisons.",
             f"Times: best wall time of {repeat} fresh process(es) each, interpreter start and imports included; "
             "cpu ratio: the same with CPU (user + system) time, which a busy machine disturbs less.",
             "  ".join(f"{h:>{max(len(h), 9)}}" for h in header)]
    for r in results:
        cells = (f"{r.generated.rows:,}", f"{r.file_mib:.1f}", f"{r.generate_seconds:.2f}", f"{r.pandas.wall:.2f}",
                 f"{r.advisor.wall:.2f}", f"{r.ratio:.2f}", f"{r.cpu_ratio:.2f}", f"{r.pandas.peak_mib:.0f}",
                 f"{r.advisor.peak_mib:.0f}", f"{r.peak_per_file:.2f}x")
        lines.append("  ".join(f"{c:>{max(len(h), 9)}}" for c, h in zip(cells, header, strict=True)))
    lines.append("diagnosis (report.json root_cause):")
    for r in results:
        expected = "as planted" if r.diagnosis_as_expected else f"NOT the planted fault ({r.generated.root_name})"
        lines.append(f"  {r.generated.rows:>9,} rows, {r.generated.ops:,} ops: {r.diagnosis} - {expected}")
    lines += format_graph([r for r in results if r.graph is not None])
    return "\n".join(lines)


def format_graph(results: list[SizeResult]) -> list[str]:
    if not results:
        return []
    lines = ["graph case: advisor run RESULT.csv --graph GE_PROTO_Build.txt (same CSV, same pandas.read_csv):"]
    for r in results:
        g = r.graph
        assert g is not None
        ratio, cpu_ratio = g.advisor.wall / r.pandas.wall, g.advisor.cpu / r.pandas.cpu
        expected = "as planted" if g.diagnosis_as_expected else f"NOT the planted fault ({r.generated.root_name})"
        lines += [f"  {r.generated.rows:>9,} rows: graph file {g.file_mib:.1f} MiB ({g.ops:,} ops), "
                  f"read_graph alone {g.read_seconds:.2f} s (in-process)",
                  f"  {'':>9}       advisor --graph {g.advisor.wall:.2f} s wall, peak {g.advisor.peak_mib:.0f} MiB; "
                  f"ratio to pandas.read_csv {ratio:.2f} (cpu ratio {cpu_ratio:.2f}); "
                  f"without the graph {r.ratio:.2f}",
                  f"  {'':>9}       diagnosis: {g.diagnosis} - {expected}"]
    return lines


def check_targets(results: list[SizeResult]) -> tuple[list[str], bool]:
    at_target = [r for r in results if r.generated.rows == TARGET_ROWS]
    if not at_target:
        return [f"targets are stated for {TARGET_ROWS:,} rows, which this run did not measure"], True
    r = at_target[0]
    checks = [(f"advisor time / pandas read time < {MAX_TIME_RATIO:g}", r.ratio, r.ratio < MAX_TIME_RATIO, ""),
              (f"advisor peak memory < {MAX_PEAK_PER_FILE:g}x file size", r.peak_per_file,
               r.peak_per_file < MAX_PEAK_PER_FILE, "x")]
    lines = [f"targets at {TARGET_ROWS:,} rows (load average {_load()}; wall times on a busy machine vary):"]
    lines += [f"  {name}: {value:.2f}{unit} -> {'MET' if ok else 'NOT MET'}" for name, value, ok, unit in checks]
    return lines, all(ok for *_, ok, _ in checks)


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), metavar="N,N,...",
                        help="row counts (default: %(default)s)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="write the files (CSV and reports, one folder per size) here and keep them")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step per size (default: 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graph", choices=GRAPH_CHOICES, default="target",
                        help="also time advisor run --graph on a matching GE graph dump: at "
                             f"{TARGET_ROWS:,} rows only (target, the default), at every size (all) or never (off)")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    results = []
    with tempfile.TemporaryDirectory(prefix="advisor-perf-") as tmp:
        root = args.keep or Path(tmp)
        for rows in sizes:
            graph = args.graph == "all" or (args.graph == "target" and rows == TARGET_ROWS)
            results.append(measure_size(rows, root / f"llm_{rows}", repeat=args.repeat, seed=args.seed, graph=graph))
            print(f"measured {rows:,} rows", file=sys.stderr, flush=True)
    print(format_table(results, args.repeat))
    lines, met = check_targets(results)
    print("\n".join(lines))
    if args.keep:
        print(f"files kept in {args.keep}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
