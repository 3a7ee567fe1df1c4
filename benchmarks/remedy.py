"""Does the advisor's fix fix it? Remedies applied in the scenario generator, output cosine before/after.

``python -m benchmarks.remedy [--out DIR] [--seed N] [--families FAMILY...] [--subprocess] [--json OUT]``

For every scenario of the quantisation families (``quant_per_tensor``, ``quant_symmetric``,
``quant_calibration``, ``quant_precision_limit``) and the FP16 families (``fp16_overflow``,
``mixed_overflow_problem``) of ``benchmarks/scenarios/catalog.py``:

1. generate it (all dumps and ``model.onnx``, as ``python -m benchmarks.scenarios --dumps all``);
2. run the advisor as a user would::

       advisor run RESULT.csv --graph model.onnx --dumps golden:target --config build.json \\
           --format json -o <scenario>/advisor-report

   (in-process through ``advisor.cli.main`` with exactly that command line; ``--subprocess`` starts
   ``python -m advisor`` instead);
3. read ``report.json``: the root cause (kind and op against ``label.json``) and ``remedy.steps``;
4. re-run the scenario's target with each step applied (:func:`benchmarks.scenarios.faults.apply_remedy`:
   the step's generic ``settings`` and its ``keep`` ops; steps are cumulative, smallest first, and
   step k is applied on top of steps 1..k-1) and judge the network output as ``advisor run`` does
   (``checks.judge``: cosine, distance and scale against ``knowledge/thresholds.yaml``).

"restored" means the network output no longer deviates after the advisor's last step (``step`` names
the first step that restores it). The ``reference`` column applies a hand-written remedy of the
family (:func:`reference_remedy`), the fix a right answer would give: it tells a remedy the emulation
cannot apply from one the advisor did not give. A report without a remedy is printed as such.

It is a measurement: exit 0 whatever the results, 1 when a scenario fails to generate (or fails the
generator's self-check), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FAMILIES: tuple[str, ...] = ("quant_per_tensor", "quant_symmetric", "quant_calibration", "quant_precision_limit",
                             "fp16_overflow", "mixed_overflow_problem")
REPO = Path(__file__).resolve().parents[1]


@dataclass
class StepResult:
    """The target re-run with the remedy up to one step."""

    step: int | str                          # 1, 2, ... or "reference"
    settings: dict[str, Any]
    keep: list[str]                          # "op (precision)"
    output_cosine: float | None
    output_deviates: bool
    op_deviates: bool | None                 # the labelled op still deviates
    unknown_knobs: list[str] = field(default_factory=list)     # settings the emulation does not know
    unmatched_keep: list[str] = field(default_factory=list)    # keep items matching no target op
    seconds: float = 0.0


@dataclass
class RemedyResult:
    name: str
    family: str
    label_kind: str
    label_op: str | None
    label_index: int | None
    got_kind: str | None = None              # advisor root cause; None when it names none
    got_op: str | None = None
    got_index: int | None = None
    before_cosine: float | None = None
    before_deviates: bool | None = None
    has_remedy: bool = False
    backends: list[str] = field(default_factory=list)
    steps: list[StepResult] = field(default_factory=list)
    reference: StepResult | None = None
    error: str | None = None                 # generation failed or the advisor exited 2/3
    advisor_exit: int | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def right(self) -> bool:
        return (self.error is None and self.got_kind == self.label_kind and self.got_op == self.label_op
                and self.got_index == self.label_index)

    @property
    def restored(self) -> bool:
        return bool(self.steps) and not self.steps[-1].output_deviates

    @property
    def restored_at(self) -> int | None:
        return next((int(s.step) for s in self.steps if not s.output_deviates), None)


# --- the advisor side ---------------------------------------------------------------------------

def advisor_argv(directory: Path, outdir: Path) -> list[str]:
    """The ``advisor run`` command line a user types for a generated scenario (after ``advisor``)."""
    (csv,) = directory.glob("result_*.csv")
    argv = ["run", str(csv)]
    if (directory / "model.onnx").is_file():
        argv += ["--graph", str(directory / "model.onnx")]
    if (directory / "golden").is_dir() and (directory / "target").is_dir():
        argv += ["--dumps", f"{directory / 'golden'}:{directory / 'target'}"]
    if (directory / "build.json").is_file():
        argv += ["--config", str(directory / "build.json")]
    return argv + ["--format", "json", "-o", str(outdir), "-q"]


def advise(directory: Path, outdir: Path, use_subprocess: bool = False) -> tuple[int, dict | None, str]:
    """Run the advisor on ``directory``: (exit code, report.json payload or None, stderr)."""
    argv = advisor_argv(directory, outdir)
    if use_subprocess:
        done = subprocess.run([sys.executable, "-m", "advisor", *argv], capture_output=True, text=True,
                              cwd=REPO, check=False)
        code, errors = done.returncode, done.stderr
    else:
        from advisor.cli import main as advisor_main
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = advisor_main(argv)
        errors = stderr.getvalue()
    report = outdir / "report.json"
    if code not in (0, 1) or not report.is_file():
        return code, None, errors
    return code, json.loads(report.read_text(encoding="utf-8")), errors


def remedy_steps(report: dict) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The cumulative (settings, keep) of each remedy step of a report payload ([] when none).

    Steps are cumulative; step k is taken as steps 1..k together (later settings win, keep items
    add up), which is the same whether or not a step repeats the earlier ones.
    """
    remedy = report.get("remedy") or {}
    settings: dict[str, Any] = {}
    keep: list[dict[str, Any]] = []
    cumulative = []
    for step in remedy.get("steps") or []:
        settings = {**settings, **(step.get("settings") or {})}
        for item in step.get("keep") or []:
            if item not in keep:
                keep.append(item)
        cumulative.append((dict(settings), list(keep)))
    return cumulative


# --- the generator side -------------------------------------------------------------------------

def reference_remedy(replay) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A hand-written remedy of the scenario's family: what a right answer would ask for.

    per-tensor weights: per-channel; symmetric activations: asymmetric; a clipping calibration:
    min/max; a layer int8 cannot hold: that layer in float16; FP16 overflow: every Pow
    and the ReduceMean that averages it (the written-out LayerNorms' variance) in float32; output
    logit overflow: the head MatMul and the Softmax after it in float32.
    """
    family = replay.spec.family
    if family == "quant_per_tensor":
        return {"weight_quant_granularity": "per_channel"}, []
    if family == "quant_symmetric":
        return {"activation_quant_algo": "asymmetric"}, []
    if family == "quant_calibration":
        return {"activation_calibration": "minmax"}, []
    if family == "quant_precision_limit":
        return {}, [{"op": replay.plan.ops[replay.label_index].name, "golden": [], "precision": "float16"}]
    compute = [op for op in replay.plan.ops if op.role == "compute"]
    if family == "fp16_overflow":
        names = [op.name for op in compute if op.op_type == "Pow"]
        names += [op.name for op in compute if any(p in op.inputs for p in names)]
    elif family == "mixed_overflow_problem":
        head = replay.plan.ops[replay.label_index]
        names = [head.name] + [op.name for op in compute if head.output in op.inputs]
    else:
        return {}, []
    return {}, [{"op": name, "golden": [], "precision": "float32"} for name in names]


def apply_step(replay, step: int | str, settings: dict[str, Any], keep: list[dict[str, Any]]) -> StepResult:
    """Re-run ``replay``'s target with one (cumulative) remedy step and judge its output."""
    from benchmarks.scenarios import faults

    started = time.perf_counter()
    items = [faults.Keep.from_report(k) for k in keep]
    compute = [op for op in replay.plan.ops if op.role == "compute"]
    unmatched = [k.op or ",".join(k.golden) for k in items if not any(k.matches(op) for op in compute)]
    unknown = faults.check_settings(settings)
    judged = replay.rerun(faults.apply_remedy(replay.fault, settings, items))
    return StepResult(step=step, settings=settings,
                      keep=[f"{k.op or ','.join(k.golden)} ({k.precision})" for k in items],
                      output_cosine=judged.output_cosine, output_deviates=judged.output_deviates,
                      op_deviates=judged.op_deviates, unknown_knobs=unknown, unmatched_keep=unmatched,
                      seconds=time.perf_counter() - started)


def evaluate(spec, out: Path, use_subprocess: bool = False) -> RemedyResult:
    """Generate one scenario, run the advisor on it and apply its remedy steps."""
    from benchmarks.scenarios.scenario import generate

    result = RemedyResult(spec.name, spec.family, "?", None, None)
    started = time.perf_counter()
    try:
        generated = generate(spec, out, dumps_kept="all")
    except Exception as exc:  # noqa: BLE001 - a scenario that cannot be generated is reported, not raised
        result.error = f"generation failed: {type(exc).__name__}: {exc}"
        return result
    result.timings["generate"] = time.perf_counter() - started
    label = generated.label
    result.label_kind, result.label_op, result.label_index = label["kind"], label["op"], label["index"]
    if generated.problems:
        result.error = "self-check failed: " + "; ".join(generated.problems)
        return result
    replay = generated.replay
    cosines = [c for c in label["observed"]["network_output_cosine"] if c is not None]
    result.before_cosine = min(cosines) if cosines else None
    result.before_deviates = label["observed"]["network_output_deviates"]

    tick = time.perf_counter()
    code, report, errors = advise(generated.directory, generated.directory / "advisor-report", use_subprocess)
    result.timings["advisor"] = time.perf_counter() - tick
    result.advisor_exit = code
    if report is None:
        result.error = f"advisor exited {code}: {errors.strip().splitlines()[-1] if errors.strip() else ''}"
        return result
    root = report.get("root_cause") or {}
    result.got_kind, result.got_op, result.got_index = root.get("kind"), root.get("op"), root.get("index")
    remedy = report.get("remedy") or {}
    result.has_remedy = bool(remedy.get("steps"))
    result.backends = list(remedy.get("backends") or [])

    tick = time.perf_counter()
    for number, (settings, keep) in enumerate(remedy_steps(report), start=1):
        result.steps.append(apply_step(replay, number, settings, keep))
    result.timings["remedy"] = time.perf_counter() - tick
    tick = time.perf_counter()
    settings, keep = reference_remedy(replay)
    if settings or keep:
        result.reference = apply_step(replay, "reference", settings, keep)
    result.timings["reference"] = time.perf_counter() - tick
    return result


def run(families: Sequence[str] = FAMILIES, out: Path | None = None, seed: int = 0,
        use_subprocess: bool = False, log=None) -> list[RemedyResult]:
    """Evaluate every scenario of ``families`` (generated into ``out``, or a temporary folder)."""
    from benchmarks.scenarios.catalog import select

    specs = select(list(families), seed=seed)
    with contextlib.ExitStack() as stack:
        root = out if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        results = []
        for spec in specs:
            results.append(evaluate(spec, root, use_subprocess))
            if log:
                log(results[-1])
        return results


# --- rendering ----------------------------------------------------------------------------------

def _cos(value: float | None) -> str:
    return "nan" if value is None else f"{value:.6f}"


def _at(kind: str | None, op: str | None, index: int | None) -> str:
    if kind is None:
        return "(none)"
    return f"{kind} {op}@{index}" if op is not None else kind


def table_rows(results: Sequence[RemedyResult]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the results table: one column per remedy step of the longest remedy."""
    most = max((len(r.steps) for r in results), default=0)
    header = ["scenario", "label", "advisor", "right", "before", *(f"step {i}" for i in range(1, most + 1)),
              "restored", "reference"]
    rows = []
    for r in results:
        if r.error and r.got_kind is None:
            rows.append([r.name, _at(r.label_kind, r.label_op, r.label_index), f"ERROR: {r.error}"])
            continue
        steps = [_cos(s.output_cosine) + ("" if s.output_deviates else " ok") for s in r.steps]
        steps += ["-"] * (most - len(r.steps))
        if not r.has_remedy:
            restored = "no remedy"
        else:
            restored = f"yes (step {r.restored_at})" if r.restored else "no"
        reference = "-" if r.reference is None else (
            _cos(r.reference.output_cosine) + ("" if r.reference.output_deviates else " ok"))
        rows.append([r.name, _at(r.label_kind, r.label_op, r.label_index),
                     _at(r.got_kind, r.got_op, r.got_index), "yes" if r.right else "no",
                     _cos(r.before_cosine) + (" ok" if r.before_deviates is False else ""),
                     *steps, restored, reference])
    return header, rows


def format_table(results: Sequence[RemedyResult]) -> str:
    header, rows = table_rows(results)
    full = [row for row in rows if len(row) == len(header)]
    widths = [max(len(r[i]) for r in [header, *full]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        if len(row) != len(header):
            return "  ".join(row)
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def format_remedies(results: Sequence[RemedyResult]) -> str:
    """What each report asked for, step by step, and what the emulation could not apply."""
    out = ["remedies:"]
    for r in results:
        if r.error:
            out.append(f"  {r.name}: ERROR {r.error}")
            continue
        if not r.has_remedy:
            out.append(f"  {r.name}: NO REMEDY in report.json (root cause {_at(r.got_kind, r.got_op, r.got_index)})")
            continue
        backends = f" [{', '.join(r.backends)}]" if r.backends else ""
        out.append(f"  {r.name}{backends}:")
        for s in r.steps:
            settings = ", ".join(f"{k}={v}" for k, v in s.settings.items()) or "-"
            keep = ", ".join(s.keep) or "-"
            out.append(f"    step {s.step}: settings {settings}; keep {keep} -> output cosine "
                       f"{_cos(s.output_cosine)} ({'deviates' if s.output_deviates else 'agrees'}; labelled op "
                       f"{'still deviates' if s.op_deviates else 'agrees'})")
            if s.unknown_knobs:
                out.append(f"      not emulated: {', '.join(s.unknown_knobs)}")
            if s.unmatched_keep:
                out.append(f"      keep matches no target op: {', '.join(s.unmatched_keep)}")
    return "\n".join(out)


def summary(results: Sequence[RemedyResult]) -> dict[str, Any]:
    total = len(results)
    return {
        "scenarios": total,
        "right_kind_and_layer": sum(r.right for r in results),
        "with_remedy": sum(r.has_remedy for r in results),
        "restored": sum(r.restored for r in results),
        "reference_restored": sum(1 for r in results if r.reference is not None and not r.reference.output_deviates),
        "errors": sum(1 for r in results if r.error),
    }


def format_summary(results: Sequence[RemedyResult], seconds: float) -> str:
    s = summary(results)
    n = s["scenarios"]
    timing = {key: sum(r.timings.get(key, 0.0) for r in results)
              for key in ("generate", "advisor", "remedy", "reference")}
    return (f"right kind+layer {s['right_kind_and_layer']}/{n}; remedy in report {s['with_remedy']}/{n}; "
            f"restored {s['restored']}/{n} (reference remedy {s['reference_restored']}/{n}); "
            f"errors {s['errors']}\n"
            f"time {seconds:.1f}s: generate {timing['generate']:.1f}s, advisor {timing['advisor']:.1f}s, "
            f"remedy re-runs {timing['remedy']:.1f}s, reference re-runs {timing['reference']:.1f}s")


def format_report(results: Sequence[RemedyResult], seconds: float) -> str:
    return "\n\n".join([format_table(results), format_remedies(results), format_summary(results, seconds)])


# --- command line -------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.remedy", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="keep the generated scenarios and their reports here (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=0, help="added to every scenario's seed (default 0)")
    parser.add_argument("--families", nargs="+", metavar="FAMILY", default=list(FAMILIES),
                        help=f"scenario families (default: {' '.join(FAMILIES)})")
    parser.add_argument("--subprocess", action="store_true",
                        help="run `python -m advisor run ...` in a new process instead of advisor.cli.main")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every result as JSON to OUT")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from benchmarks.scenarios.catalog import FAMILIES as KNOWN
    unknown = sorted(set(args.families) - set(KNOWN))
    if unknown:
        print(f"benchmarks.remedy: unknown families {', '.join(unknown)}; known: {', '.join(KNOWN)}",
              file=sys.stderr)
        return 2
    started = time.perf_counter()

    def log(result: RemedyResult) -> None:
        took = sum(result.timings.values())
        print(f"  {result.name} ({took:.1f}s)", file=sys.stderr, flush=True)

    print("advisor run RESULT.csv --graph model.onnx --dumps golden:target --config build.json --format json"
          f" ({'subprocess' if args.subprocess else 'in-process, advisor.cli.main'})", file=sys.stderr)
    results = run(args.families, args.out, args.seed, args.subprocess, log)
    seconds = time.perf_counter() - started
    print(format_report(results, seconds))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"summary": summary(results), "seconds": round(seconds, 3),
                   "scenarios": [{**asdict(r), "right": r.right, "restored": r.restored,
                                  "restored_at": r.restored_at} for r in results]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    failed = [r for r in results if r.error and (r.error.startswith("generation") or r.error.startswith("self-check"))]
    if failed:
        print("scenarios failed to generate:", *(f"{r.name}: {r.error}" for r in failed), sep="\n  ",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
