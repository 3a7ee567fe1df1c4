"""Fuzz advisor with hostile versions of real files: comparison CSVs, build configs, rule files,
manifests, column mappings, project settings, graphs and fusion reports.

Each example takes a real seed file (tests/data, examples/, rules/core, the shared real data beside the
checkout), mutates its bytes (or, with ``well_formed``, only the cells of a CSV), and runs the one
``advisor`` command that reads it, in a forked child with a time and memory budget. The oracle:

* exit 0 or 1 with every asked report written and ``report.json`` valid against its schema, or
* exit 2 with one line of at most ``MAX_LINE`` characters on stderr that names the file;
* never exit 3 (an internal error), never over ``TIME_BUDGET`` seconds or ``MEMORY_BUDGET`` bytes
  beyond the parent's address space, never a file left behind (a ``*.tmp``, a half-written report set,
  anything outside the output folder's report set).

``python -m benchmarks.fuzz --minutes 30`` sweeps every kill point of benchmarks/killpoints.py, then runs
every target until 30 minutes have passed and prints the figures (kill points, examples, exit-3 count,
hangs, memory, leftovers) as JSON; failing inputs are saved with ``--save``. Besides the readers' own
seeds, benchmarks/fuzz_seeds.py adds the classes a reliability probe found the harness blind to:
subnormal metrics in every layout, workbooks, ONNX external weights, deep dump.json, templates that fail
when rendered, and folders where something not advisor's waits (links, FIFOs).
The test suite runs a bounded, derandomised sample of the same examples (tests/hostile/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import multiprocessing.context
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "crepe_tiny_bn_fold" / "result_20240506043136.csv"
SCENARIOS = REPO / "tests" / "data" / "scenarios"
TIME_BUDGET = 60.0                 # seconds for one advisor command on a seed-sized file
MEMORY_BUDGET = 2 << 30            # bytes of address space beyond what the parent process already uses
MAX_LINE = 2_500                   # characters of the one-line error
STORE = ".advisor-reports"
MARKS = (STORE, ".advisor-store", ".advisor-run", ".advisor-set.json")   # advisor's own hidden names


def realdata() -> Path | None:
    """The real files from public projects committed with the tests (tests/data/realdata)."""
    candidate = REPO / "tests" / "data" / "realdata"
    return candidate if candidate.is_dir() else None


@dataclass(frozen=True)
class Target:
    """A kind of file advisor reads and the command that reads it (``{file}``: the mutated file,
    ``{out}``: a fresh output folder)."""

    name: str
    suffix: str
    argv: tuple[str, ...]
    seeds: Callable[[], list[bytes]]
    reports: bool = True           # the command writes report.json into {out} on success
    # A mutation of its own (else _mutate_bytes / _mutate_cells): e.g. one XML part inside a workbook.
    mutate: Callable[[bytes, random.Random], bytes] | None = None
    # What the example needs beside its file ({workdir} made, {file} written), before the command runs.
    prepare: Callable[[Path, bytes], None] | None = None
    # More of the oracle: problems found in the example's folder after the command.
    check: Callable[[Path], list[str]] | None = None


def _files(*patterns: tuple[Path | None, str]) -> Callable[[], list[bytes]]:
    def read() -> list[bytes]:
        found = []
        for root, pattern in patterns:
            if root is not None and root.is_dir():
                found += sorted(p for p in root.glob(pattern) if p.is_file() and p.stat().st_size < 4_000_000)
        return [p.read_bytes() for p in found]
    return read


def _texts(*texts: str) -> Callable[[], list[bytes]]:
    return lambda: [t.encode("utf-8") for t in texts]


MAPPING = """\
format: generic
columns:
  op_name: NPU Name
  tensor_id: NPU Tensor
  cosine: Cosine
  max_abs_error: MaxAbsErr
io_from: tensor_id
dtype: float16
na_values: ["-", "n.a."]
"""
TOML = """\
rules = []
builtin_rules = true
disable = ["single-point-deviation"]
input_nodes = ["input"]
backends = ["ascend", "onnxruntime"]
[thresholds]
cosine = 0.99
"float16.cosine" = 0.98
[severity]
fp16-overflow = "warning"
[params]
"problem-node.min_confidence" = 0.6
"""
MANIFEST = f"""\
title: Nightly & <watch>
workers: 1
defaults:
  formats: [json, txt]
  thresholds: {{cosine: 0.99}}
jobs:
  - name: crepe
    input: {EXAMPLE}
    lang: zh
  - name: team/second
    input: {EXAMPLE}
    output: second
    disable: [single-point-deviation]
    params: {{problem-node.min_confidence: 0.7}}
"""
GENERIC_CSV = ("NPU Name,NPU Tensor,Cosine,MaxAbsErr\nconv1,conv1:output:0,0.9999,0.01\nrelu1,relu1:output:0,0.5,3.0\n"
               "relu2,relu2:output:0,0.99999,5e-324\nrelu3,relu3:output:0,1,0\n")      # subnormals in this layout too


def targets() -> dict[str, Target]:
    real = realdata()
    run = ("run", "{file}", "-o", "{out}", "--format", "json,txt", "-q")
    on_example = ("run", str(EXAMPLE), "-o", "{out}", "--format", "json,txt", "-q")
    csvs = _files((SCENARIOS, "*/result_*.csv"), (EXAMPLE.parent, "result_*.csv"),
                  (real and real / "Ascend__msprobe", "*.csv"))
    return {t.name: t for t in [*_hostile_targets(real, run, on_example, csvs),
        Target("csv", ".csv", run, csvs),
        Target("config", ".json", (*on_example, "--config", "{file}"), _files((SCENARIOS, "*/build.json"))),
        Target("mapping", ".yaml", ("run", "{data}", "--mapping", "{file}", "-o", "{out}", "--format", "json", "-q"),
               _texts(MAPPING)),
        Target("toml", ".toml", (*on_example, "--project-config", "{file}"), _texts(TOML)),
        Target("graph", ".json", (*on_example, "--graph", "{file}"),
               _files((real and real / "Ascend__msit", "*.json"))),
        Target("fusion", ".json", (*on_example, "--fusion", "{file}"), _files((real, "*/*fusion_result.json"))),
        Target("pack", ".yaml", ("rules", "test", "{pack}"), _files((REPO / "rules" / "core", "*/*.yaml")),
               reports=False),
        Target("manifest", ".yaml", ("batch", "{file}", "-o", "{out}", "-q"), _texts(MANIFEST), reports=False),
    ]}


def _hostile_targets(real: Path | None, run: tuple[str, ...], on_example: tuple[str, ...],
                     csvs: Callable[[], list[bytes]]) -> list[Target]:
    """The classes a reliability probe found the harness blind to (benchmarks/fuzz_seeds.py)."""
    from . import fuzz_seeds as seeds

    def planted(kinds: list[str]) -> Callable[[], list[bytes]]:
        return lambda: [kind.encode("ascii") for kind in kinds]

    def plant(workdir: Path, data: bytes) -> None:
        seeds.plant(data.decode("ascii", errors="replace"), workdir / "out", workdir / "victim")

    def dumps(workdir: Path, data: bytes) -> None:
        from .compare import write_dumps
        golden, target = write_dumps(workdir / "dumps", ops=2, elements=64)
        kind = data.decode("ascii", errors="replace")
        if kind in ("dump-fifo", "dump-device"):
            last = sorted(target.glob("*.npy"))[-1]
            last.unlink()
            os.mkfifo(last) if kind == "dump-fifo" else os.symlink("/dev/zero", last)
        else:
            plant(workdir, data)

    def untouched(workdir: Path) -> list[str]:
        problems = seeds.victim_problems(workdir / "victim") if (workdir / "victim").exists() else []
        published = (workdir / "out" / STORE / "current").is_symlink()
        if published and (workdir / "out" / ".remedy.0123abcd.tmp").is_symlink():
            problems.append("left behind: a killed run's .remedy.*.tmp link")
        return problems

    manifest = (f"jobs:\n  - {{name: a, input: {EXAMPLE}, formats: [json]}}\n").encode()
    compare = ("compare", "--golden", "{workdir}/dumps/golden", "--target", "{workdir}/dumps/target", "-o",
               "{out}/r.csv", "-j", "1", "-q")
    return [
        Target("subnormal", ".csv", run, seeds.subnormal_csvs(csvs)),
        Target("xlsx", ".xlsx", run, lambda: seeds.workbooks(real),
               mutate=lambda data, rng: seeds.mutate_workbook(data, rng, _mutate_bytes)),
        Target("onnx", ".onnx", (*on_example, "--graph", "{file}"), seeds.onnx_seeds,
               prepare=lambda workdir, data: seeds.onnx_beside(workdir)),
        Target("dumpjson", ".json", ("run", "--bench", "{file}", "--target", "{file}", "-o", "{out}", "--format",
                                     "json", "-q"), lambda: seeds.dump_jsons(real)),
        Target("template", ".yaml", ("rules", "test", "{pack}"), seeds.template_rules, reports=False),
        Target("outdir", ".txt", on_example, planted(seeds.PLANTS[:6]), mutate=_pick, prepare=plant, check=untouched),
        Target("batchdir", ".txt", ("batch", "{workdir}/batch.yaml", "-o", "{out}", "-q"),
               planted(["index-page", "history-link", "store-link"]), reports=False, mutate=_pick,
               prepare=lambda workdir, data: (plant(workdir, data), (workdir / "batch.yaml").write_bytes(manifest)),
               check=untouched),
        Target("dumpdir", ".txt", compare, planted(["dump-fifo", "dump-device", "journal-link", "csv-temp-link"]),
               reports=False, mutate=_pick, prepare=dumps, check=untouched),
    ]


def _pick(data: bytes, rng: random.Random) -> bytes:
    """Planted-state targets: the seed (what to plant) is the example; nothing to mutate."""
    return data


# --- mutations ---------------------------------------------------------------------------------

TOKENS = [b"\r", b"\n", b"\r\n", b",", b'"', b"'", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"\xe4\xb8\xad", b"\t",
          b"NaN", b"nan", b"inf", b"-inf", b"1e309", b"5e-324", b"-0", b"0", b"-1", b"9" * 40,
          b"1.7976931348623157e308",
          b"<script>alert(1)</script>", b"{{ 7*7 }}", b"{%", b"&a", b"*a", b"!!python/object:os.system", b"- ",
          b": ", b"[", b"]", b"{", b"}", b"#", b"\\", b"../../", b"/dev/zero", b"A" * 5000, b"true", b"null", b"~"]
NUMBERS = ["0", "-0", "1", "-1", "NaN", "nan", "inf", "-inf", "1e309", "-1e309", "5e-324", "1e-320", "3.4e38",
           "65504", "65536", "1.7976931348623157e308", "-3.4028235e38", "", "N/A", "None", "*", "-", "0x10", "1_000",
           "１", "1e5000", "9" * 30]


def mutate(data: bytes, rng: random.Random, well_formed: bool = False,
           target_mutate: Callable[[bytes, random.Random], bytes] | None = None) -> bytes:
    """1 to 4 mutations of ``data``; ``well_formed``: only cell values and whole rows of a CSV change."""
    if target_mutate is not None:
        return target_mutate(data, rng)
    for _ in range(rng.randint(1, 4)):
        data = (_mutate_cells if well_formed else _mutate_bytes)(data, rng)
    return data


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    at = rng.randint(0, len(data))
    end = min(len(data), at + rng.randint(1, 64))
    op = rng.randrange(8)
    if op == 0 and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
    if op == 1:
        return data[:at] + rng.choice(TOKENS) + data[at:]
    if op == 2:
        return data[:at] + data[end:]
    if op == 3:
        return data[:end] + data[at:end] * rng.randint(1, 50) + data[end:]
    if op == 4:
        return data[:at]
    if op == 5:
        lines = data.split(b"\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if op == 6:
        depth = rng.choice([50, 120, 400, 3000])
        opener, closer = rng.choice([(b"[", b"]"), (b"{\"a\":", b"}"), (b"- ", b"")])
        return data[:at] + opener * depth + b"1" + closer * depth + data[at:]
    return _mutate_cells(data, rng)


def _mutate_cells(data: bytes, rng: random.Random) -> bytes:
    """Change a cell to another value, or drop / repeat / move a data row; the header stays as it is."""
    lines = data.split(b"\n")
    rows = [i for i, line in enumerate(lines[1:], 1) if line.strip()]
    if not rows:
        return data
    i = rng.choice(rows)
    op = rng.randrange(4)
    if op == 0:
        cells = lines[i].split(b",")
        if b'"' not in lines[i]:
            cells[rng.randrange(len(cells))] = rng.choice(NUMBERS).encode("utf-8")
            lines[i] = b",".join(cells)
    elif op == 1 and len(rows) > 1:
        del lines[i]
    elif op == 2:
        lines.insert(i, lines[i])
    else:
        j = rng.choice(rows)
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


# --- one example -------------------------------------------------------------------------------

@dataclass
class Outcome:
    target: str
    code: int | None               # None: killed after the time budget
    err: str
    seconds: float
    problems: list[str] = field(default_factory=list)


def run_example(target: Target, data: bytes, workdir: Path, time_budget: float = TIME_BUDGET) -> Outcome:
    """Run ``target``'s command on ``data`` in a forked child under the budgets; check the oracle."""
    workdir.mkdir(parents=True, exist_ok=True)
    file = workdir / f"input{target.suffix}"
    pack = workdir / "pack"
    if "{pack}" in target.argv:
        pack.mkdir()
        (pack / "pack.yaml").write_bytes(b'pack: fuzz\nversion: "0.1.0"\n')
        file = pack / "rule.yaml"
    file.write_bytes(data)
    (workdir / "data.csv").write_text(GENERIC_CSV, encoding="utf-8")
    if target.prepare is not None:
        target.prepare(workdir, data)
    inputs = {p for p in workdir.rglob("*")}
    out = workdir / "out"
    values = {"file": str(file), "out": str(out), "pack": str(pack), "data": str(workdir / "data.csv"),
              "workdir": str(workdir)}
    argv = [part.format(**values) for part in target.argv]
    start = time.monotonic()
    code, err = _forked(argv, workdir, time_budget)
    outcome = Outcome(target.name, code, err, time.monotonic() - start)
    outcome.problems = check(outcome, target, file, out, workdir, inputs)
    if target.check is not None:
        outcome.problems += target.check(workdir)
    return outcome


def _forked(argv: list[str], workdir: Path, time_budget: float) -> tuple[int | None, str]:
    """Run ``advisor ARGV`` in a child forked from a clean, single-threaded server that imported advisor
    once (multiprocessing's forkserver): cheap, and safe from locks other threads of this process hold."""
    err_path = workdir / ".stderr"
    child = _context().Process(target=_child, args=(argv, str(workdir), str(err_path)))   # batch makes a pool
    child.start()
    child.join(time_budget)
    if child.is_alive():
        child.kill()
        child.join()
        code = None
    else:
        code = child.exitcode
    child.close()
    err = err_path.read_text(encoding="utf-8", errors="replace") if err_path.exists() else ""
    err_path.unlink(missing_ok=True)
    return code, err


@cache
def _context() -> multiprocessing.context.ForkServerContext:
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["advisor.cli", "jsonschema"])
    return context


def _child(argv: list[str], workdir: str, err_path: str) -> None:
    """The child: the memory budget, stderr to a file, then advisor's own main(); exits with its code."""
    code = 3
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _address_space() + MEMORY_BUDGET
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        os.chdir(workdir)
        fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
        from advisor.cli import main
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:                                  # noqa: BLE001 - reported as exit 3 by the parent
        code = 3
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def check(outcome: Outcome, target: Target, file: Path, out: Path, workdir: Path, inputs: set[Path]) -> list[str]:
    """What the oracle finds wrong with one outcome (empty: it held)."""
    problems = []
    lines = outcome.err.strip("\n").splitlines()
    if outcome.code is None:
        problems.append(f"hang: still running after {TIME_BUDGET:g} s")
    elif outcome.code == 3 or outcome.code < 0 or outcome.code > 3:
        memory = "MemoryError" in outcome.err
        problems.append(("memory: over budget: " if memory else f"exit {outcome.code}: ") + (lines[-1][:300] if lines
                                                                                            else "(no message)"))
    elif outcome.code == 2:
        if len(lines) != 1 and not (target.name == "pack" and lines):
            problems.append(f"exit 2 with {len(lines)} lines on stderr")
        elif lines and len(lines[0]) > MAX_LINE:
            problems.append(f"exit 2 with a {len(lines[0])}-character line")
        elif lines and file.name not in lines[0] and file.parent.name not in lines[0]:
            problems.append(f"exit 2 without naming the file: {lines[0][:200]}")
    elif target.reports:
        problems += _report_problems(out)
    problems += _leftovers(workdir, out, inputs)
    return problems


def _report_problems(out: Path) -> list[str]:
    report = out / "report.json"
    if not report.is_file():
        return ["exit 0 without the asked reports"] if not any(out.glob("*/report.json")) else []
    try:
        document = json.loads(report.read_text(encoding="utf-8"))
    except ValueError as exc:
        return [f"report.json is not JSON: {exc}"]
    import jsonschema

    from advisor.resources import data_dir
    schema = json.loads((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    return [f"report.json breaks its schema: {errors[0].message[:200]}"] if errors else []


def _leftovers(workdir: Path, out: Path, inputs: set[Path]) -> list[str]:
    """Files nobody asked for: temporary files anywhere, report sets that are not current."""
    found = []
    for path in workdir.rglob("*"):
        if path in inputs or path.name in ("history.sqlite", "history.sqlite-wal", "history.sqlite-shm"):
            continue
        if path.name.endswith(".tmp") or path.name.startswith(".") and path.name not in MARKS:
            found.append(path)
        elif STORE in path.parts:
            store = Path(*path.parts[:path.parts.index(STORE) + 1])
            relative = path.relative_to(store).parts
            if not relative:
                continue
            current = os.readlink(store / "current") if (store / "current").is_symlink() else None
            if relative[0] not in ("current", "lock", ".advisor-store") and relative[0] != current:
                found.append(path)
    return [f"left behind: {p.relative_to(workdir)}" for p in found[:3]]


# --- the long run ------------------------------------------------------------------------------

def fuzz(minutes: float, seed: int, names: list[str], save: Path | None, well_formed_csv: bool = False,
         kill_points: bool = True) -> dict:
    """Every kill point of benchmarks/killpoints.py first (``kill_points``), then mutated examples of
    ``names`` until ``minutes`` have passed since the start."""
    deadline = time.monotonic() + minutes * 60
    chosen = [targets()[n] for n in names]
    seeds = {t.name: t.seeds() for t in chosen}
    chosen = [t for t in chosen if seeds[t.name]]
    rng = random.Random(seed)
    figures: Counter[str] = Counter()
    failures: list[dict] = []
    if kill_points:
        from .killpoints import SCENARIOS, sweep
        for name in SCENARIOS:
            swept = sweep(name)
            figures[f"killpoints.{name}"] = swept.points
            figures["problems.killpoints"] += len(swept.problems)
            failures += [{"target": f"killpoints.{name}", "problems": swept.problems}] if swept.problems else []
    with tempfile.TemporaryDirectory(prefix="advisor-fuzz-") as scratch:
        n = 0
        while time.monotonic() < deadline:
            target = rng.choice(chosen)
            data = mutate(rng.choice(seeds[target.name]), rng, well_formed_csv and target.name == "csv", target.mutate)
            workdir = Path(scratch) / f"e{n}"
            outcome = run_example(target, data, workdir)
            figures["examples"] += 1
            figures[f"examples.{target.name}"] += 1
            figures[f"exit.{outcome.code}"] += 1
            for problem in outcome.problems:
                figures["problems." + problem.split(":")[0]] += 1
            if outcome.problems:
                failures.append({"target": target.name, "example": n, "problems": outcome.problems,
                                 "stderr": outcome.err[-300:]})
                if save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    (save / f"{n:06d}-{target.name}{target.suffix}").write_bytes(data)
            shutil.rmtree(workdir, ignore_errors=True)
            n += 1
    return {"minutes": minutes, "seed": seed, "figures": dict(sorted(figures.items())), "failures": failures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--targets", default=",".join(targets()), help="comma-separated: " + ", ".join(targets()))
    parser.add_argument("--save", type=Path, metavar="DIR", help="keep each failing input here")
    parser.add_argument("--well-formed-csv", action="store_true", help="CSV mutations keep the CSV well formed")
    parser.add_argument("--no-kill-points", dest="kill_points", action="store_false",
                        help="skip the kill-point sweeps (benchmarks/killpoints.py) that run first")
    args = parser.parse_args(argv)
    result = fuzz(args.minutes, args.seed, [n.strip() for n in args.targets.split(",") if n.strip()], args.save,
                  args.well_formed_csv, args.kill_points)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    from benchmarks.fuzz import main as imported_main  # children unpickle benchmarks.fuzz._child, not __main__'s
    sys.exit(imported_main())
