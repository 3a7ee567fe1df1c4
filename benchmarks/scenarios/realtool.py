"""Generate the real-tool corpus: real msprobe dumps of a reference and a target run, compared by
``msprobe compare``, labelled with the truth of the pair.

``python -m benchmarks.scenarios.realtool --out DIR [--work DIR] [--fixtures] [--only FAMILY ...]
[--tasks statistics tensor md5] [--levels L0 L1 mix] [--xlsx] [--diff-analyze]``

Layout of ``<out>/<family>__<network>__<variant>__<level>_<task>/``::

    compare_result_<timestamp>.csv   what ``msprobe compare`` wrote (kept byte for byte)
    compare_result_<timestamp>.xlsx  with --xlsx
    reference/dump.json, target/dump.json   the ``_dumpjson`` form: the two dumps msprobe compared
    diff_analyze/                    with --diff-analyze: the first-difference analysis files
    label.json                       the truth: family, kind, op, index, level, task, comparison file
    provenance.yaml                  msprobe/torch versions, both runs, the debugger config, commands

Dumps are cached under ``--work`` (one folder per run, task and level), so a reference run shared
by several pairs is dumped once. The label's op is the call the fault enters, by construction:
``where`` names the module; at L0 the op is that module's first forward call, at L1 and mix the
call of the pair's API that msprobe's own ``construct.json`` (from the target's mix-level dump)
puts inside it; an input fault (``where`` None) enters the first call. ``index`` numbers the calls
in the order the compare CSV lists them, as the advisor's msprobe reader does. In MD5 mode a
precision change is labelled ``checksum_mismatch`` at the first call whose outputs' checksums
differ while its inputs' agree (with the whole model cast: the first whose outputs' differ). A
backward-phase fault enters the backward call of the API (L0: of the module).

Some scenarios are also written in another form (``realtool_catalog.XLSX``, ``DUMP_JSON``): the
folder ``<name>__<level>_<task>_xlsx`` holds msprobe's ``--xlsx`` workbook of the same comparison,
``..._dumpjson`` the two ``dump.json`` it compared; same label, its ``comparison`` the workbook or
``target/dump.json`` (and ``bench``: ``reference/dump.json``). Every scenario passes
``realtool_checks`` before it is written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from benchmarks.scenarios import msprobe_tool, realtool_checks
from benchmarks.scenarios.realtool_catalog import CORPUS, DUMP_JSON, FIXTURES, XLSX, PairSpec, RunSpec, select

SOURCE = "msprobe"


class DumpStore:
    """Dumps by run, task and level under ``work/<level>_<task>/batch<k>/`` (``manifest.json``
    maps each run's key to its step folder, ``batch.json`` holds the jobs in the same order); runs
    missing from the store are dumped in one batch. A run is found by its key *and* its job, so a
    run whose definition changed is dumped again rather than read from a stale folder."""

    def __init__(self, work: Path) -> None:
        self.work = work

    def _stored(self, task: str, level: str) -> dict[tuple[str, str], Path]:
        found: dict[tuple[str, str], Path] = {}
        for manifest in sorted((self.work / f"{level}_{task}").glob("batch*/manifest.json")):
            jobs = json.loads((manifest.parent / "batch.json").read_text(encoding="utf-8"))["jobs"]
            folders = json.loads(manifest.read_text(encoding="utf-8"))
            for (key, folder), job in zip(folders.items(), jobs, strict=True):
                found[(key, _canonical(job))] = manifest.parent / folder
        return found

    def ensure(self, runs: list[RunSpec], task: str, level: str) -> None:
        have = self._stored(task, level)
        missing = list({r.key: r for r in runs if (r.key, _canonical(r.job())) not in have}.values())
        if not missing:
            return
        root = self.work / f"{level}_{task}"
        directory = root / f"batch{len(list(root.glob('batch*')))}"
        folders = msprobe_tool.dump_runs([r.job() for r in missing], directory, task, level)
        manifest = {r.key: str(f.relative_to(directory)) for r, f in zip(missing, folders, strict=True)}
        (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")

    def folder(self, run: RunSpec, task: str, level: str) -> Path:
        return self._stored(task, level)[(run.key, _canonical(run.job()))]


def _canonical(job: dict) -> str:
    return json.dumps(job, sort_keys=True)


def calls_in_order(csv: Path) -> list[str]:
    """The calls of a compare CSV in the order its ``NPU Name`` column lists them."""
    from advisor.ingest.msprobe_names import split_tensor_names

    names = pd.read_csv(csv, usecols=["NPU Name"], dtype=str, keep_default_na=False)["NPU Name"]
    calls = split_tensor_names(names)["call"]
    return list(dict.fromkeys(c for c in calls if isinstance(c, str)))


def fault_call(pair: PairSpec, level: str, calls: list[str], construct: dict[str, str | None]) -> str | None:
    """The call the pair's fault enters (see the module docstring); a backward-phase fault enters
    the backward call of ``api`` in ``where`` (at L0 the module's backward call)."""
    if pair.kind == "consistent":
        return None
    if pair.where is None:
        return next(c for c in calls if ".forward" in c)
    phase = [c for c in calls if f".{pair.phase}" in c]
    module_prefix = f"Module.{pair.where}."
    if level == "L0":
        return next(c for c in phase if c.startswith(module_prefix) and c.count(".") == pair.where.count(".") + 4)
    inside = [c for c in phase if c.startswith(pair.api + ".")
              and (construct.get(c) or "").startswith(module_prefix)]
    return inside[0]


def first_checksum_difference(csv: Path, calls: list[str], *, cast: bool = False) -> str | None:
    """MD5 mode: the first call whose outputs' checksums differ while its inputs' agree; with the
    whole model ``cast`` (its weights and input low-precision from the first call on, so no call's
    inputs agree) the first call whose outputs' checksums differ."""
    frame = realtool_checks.read_rows(csv, "md5")
    for call in calls:
        rows = frame[frame["call"] == call]
        if rows[rows["io"] == "output"]["differs"].any() and (cast or not rows[rows["io"] == "input"]["differs"].any()):
            return call
    return None


def label_for(pair: PairSpec, task: str, level: str, csv: Path, construct: dict) -> dict:
    calls = calls_in_order(csv)
    kind, family = pair.kind, pair.family
    if task == "md5" and pair.precision is not None:
        # MD5 mode of a precision change: its own family, so a family's rows share one kind
        kind = "checksum_mismatch"
        op = first_checksum_difference(csv, calls, cast=pair.target.cast is not None)
        family = f"msprobe_checksum_{pair.precision}"
    else:
        op = fault_call(pair, level, calls, construct)
    return {"family": family, "kind": kind, "op": op, "index": calls.index(op) if op else None,
            "network": pair.network, "variant": pair.variant, "level": level, "task": task,
            "source": SOURCE, "comparison": csv.name, "description": pair.description}


def provenance(pair: PairSpec, task: str, level: str, commands: list[list[str]]) -> dict:
    """What made a scenario: versions, the debugger config, both runs and the compare commands
    (dump folders spelt ``reference/`` and ``target/``, the output folder ``out/``)."""
    return {"tool_versions": msprobe_tool.versions(),
            "config.json": msprobe_tool.debugger_config(task, level, Path("./dump")),
            "debugger": "debugger = PrecisionDebugger(config_path='config.json'); then per run: "
                        "debugger.start(model); <run>; debugger.stop(); debugger.step()",
            "runs": "python -m benchmarks.scenarios.msprobe_dump dump BATCH.json (both runs below as steps of "
                    "one debugger)",
            "reference_run": pair.reference.job(), "target_run": pair.target.job(),
            "commands": [" ".join(["msprobe", *_spelt(c)]) for c in commands]}


def _spelt(args: list[str]) -> list[str]:
    out = list(args)
    for flag, side in (("-tp", "target"), ("-gp", "reference")):
        path = Path(out[out.index(flag) + 1])
        out[out.index(flag) + 1] = f"{side}/dump.json" if path.suffix == ".json" else f"{side}/"
    out[out.index("-o") + 1] = "out/"
    return out


@dataclass(frozen=True)
class Scenario:
    pair: PairSpec
    task: str
    level: str
    form: str = "csv"             # what the advisor reads: the CSV, the --xlsx workbook, the two dump.json

    @property
    def name(self) -> str:
        return f"{self.pair.name}__{self.level}_{self.task}{'' if self.form == 'csv' else '_' + self.form}"


#: Scenarios also measured in another form than the CSV (``realtool_catalog.XLSX`` / ``DUMP_JSON``).
FORMS = {"xlsx": XLSX, "dumpjson": DUMP_JSON}


def plan(pairs: list[PairSpec], tasks: Sequence[str], levels: Sequence[str]) -> list[Scenario]:
    """Every pair at every task and level asked for, and the other forms (``FORMS``) among them."""
    scenarios = [Scenario(p, t, lv) for p in pairs for t in tasks if t in p.tasks for lv in levels]
    by_name = {p.name: p for p in pairs}
    for form, listed in FORMS.items():
        scenarios += [Scenario(by_name[name], t, lv, form) for name, lv, t in listed
                      if name in by_name and t in tasks and lv in levels]
    return scenarios


def generate_all(scenarios: list[Scenario], out_root: Path, work: Path, *, xlsx: Sequence[str] = (),
                 diff_analyze: Sequence[str] = ()) -> tuple[list[Path], list[str]]:
    """Dump, compare and label ``scenarios`` (``xlsx`` / ``diff_analyze``: names of the scenarios that
    also get msprobe's ``--xlsx`` / ``-da`` output). Returns (scenario folders, failures)."""
    store = DumpStore(work)
    needed: dict[tuple[str, str], list[RunSpec]] = {}
    for s in scenarios:
        needed.setdefault((s.task, s.level), []).extend((s.pair.reference, s.pair.target))
        needed.setdefault(("statistics", "mix"), []).append(s.pair.target)     # its construct.json
    failures: list[str] = []
    for (task, level), runs in needed.items():
        try:
            store.ensure(runs, task, level)
        except msprobe_tool.ToolError as exc:
            failures.append(str(exc))
    requests: dict[str, list[list[str]]] = {}
    for s in scenarios:
        try:
            target, reference = store.folder(s.pair.target, s.task, s.level), store.folder(s.pair.reference, s.task,
                                                                                         s.level)
        except KeyError:
            continue
        scratch = work / "compare" / s.name
        shutil.rmtree(scratch, ignore_errors=True)
        asked = [msprobe_tool.compare_args(target / "dump.json", reference / "dump.json", scratch / "csv")]
        if s.name in xlsx or s.form == "xlsx":
            asked.append(msprobe_tool.compare_args(target / "dump.json", reference / "dump.json", scratch / "xlsx",
                                                   xlsx=True))
        if s.name in diff_analyze:
            asked.append(msprobe_tool.compare_args(target.parent, reference.parent, scratch / "da", diff_analyze=True))
        requests[s.name] = asked
    outcome = msprobe_tool.compare_many([a for asked in requests.values() for a in asked])
    directories = []
    for s in scenarios:
        asked = requests.get(s.name)
        errors = [outcome[tuple(a)] for a in asked or [] if outcome[tuple(a)]]
        if asked is None or errors:
            failures.append(f"{s.name}: {'; '.join(errors) or 'not dumped'}")
        if asked is None:
            continue
        try:
            directories.append(_write_scenario(s, out_root, work, store, asked))
        except ScenarioError as exc:
            failures.append(f"{s.name}: {exc}")
    return directories, failures


class ScenarioError(RuntimeError):
    """msprobe wrote no comparison for a scenario, or it fails its self-check (realtool_checks)."""


def _write_scenario(s: Scenario, out_root: Path, work: Path, store: DumpStore, asked: list[list[str]]) -> Path:
    scratch = work / "compare" / s.name
    csvs = sorted((scratch / "csv").glob("compare_result_*.csv"))
    if not csvs:
        raise ScenarioError("msprobe compare wrote no compare_result_*.csv")
    directory = out_root / s.name
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    csv = csvs[-1] if s.form != "csv" else Path(shutil.copy2(csvs[-1], directory / csvs[-1].name))
    sheets = [Path(shutil.copy2(path, directory / path.name)) for path in sorted((scratch / "xlsx").glob("*.xlsx"))]
    if s.form == "xlsx" and not sheets:
        raise ScenarioError("msprobe compare --xlsx wrote no workbook")
    if s.form == "dumpjson":
        for side, run in (("reference", s.pair.reference), ("target", s.pair.target)):
            (directory / side).mkdir()
            shutil.copy2(store.folder(run, s.task, s.level) / "dump.json", directory / side / "dump.json")
    if (scratch / "da").is_dir():
        (directory / "diff_analyze").mkdir()
        for path in sorted((scratch / "da").rglob("*.json")):
            shutil.copy2(path, directory / "diff_analyze" / path.name)
    construct_file = store.folder(s.pair.target, "statistics", "mix") / "construct.json"
    label = label_for(s.pair, s.task, s.level, csv, json.loads(construct_file.read_text(encoding="utf-8")))
    problems = realtool_checks.check(s.pair, label, csv, calls_in_order(csv), cast=s.pair.target.cast is not None)
    if problems:
        shutil.rmtree(directory)
        raise ScenarioError(f"does not show what its label ({label['kind']} {label['op']}) says: "
                            + "; ".join(problems))
    if s.form == "xlsx":          # the same comparison, as the workbook msprobe wrote beside it
        label = {**label, "comparison": sheets[-1].name}
    elif s.form == "dumpjson":    # the two dumps it compared: advisor run --bench ... --target ...
        label = {**label, "comparison": "target/dump.json", "bench": "reference/dump.json"}
    (directory / "label.json").write_text(json.dumps(label, indent=2) + "\n", encoding="utf-8")
    (directory / "provenance.yaml").write_text(
        yaml.safe_dump(provenance(s.pair, s.task, s.level, asked), sort_keys=False, width=110),
        encoding="utf-8")
    return directory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scenarios.realtool", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "advisor-realtool-dumps",
                        help="dump cache, kept between runs (default: %(default)s)")
    parser.add_argument("--only", nargs="+", metavar="FAMILY")
    parser.add_argument("--networks", nargs="+", metavar="NETWORK")
    parser.add_argument("--tasks", nargs="+", default=list(msprobe_tool.TASKS), choices=msprobe_tool.TASKS)
    parser.add_argument("--levels", nargs="+", default=list(msprobe_tool.LEVELS), choices=msprobe_tool.LEVELS)
    parser.add_argument("--xlsx", action="store_true", help="also write msprobe's --xlsx result")
    parser.add_argument("--diff-analyze", action="store_true", help="also run msprobe compare -da")
    parser.add_argument("--fixtures", action="store_true",
                        help="only the committed subset (realtool_catalog.FIXTURES), as in tests/data/realtool")
    args = parser.parse_args(argv)
    if args.fixtures:
        scenarios = fixture_scenarios()
        first = [scenarios[0].name]
        directories, failures = generate_all(scenarios, args.out, args.work, xlsx=first,
                                             diff_analyze=first)
        return _report(directories, failures)
    try:
        pairs = select(args.only)
    except KeyError as exc:
        parser.error(exc.args[0])
    if args.networks:
        pairs = [p for p in pairs if p.network in args.networks]
    scenarios = plan(pairs, args.tasks, args.levels)
    names = [s.name for s in scenarios]
    directories, failures = generate_all(scenarios, args.out, args.work, xlsx=names if args.xlsx else (),
                                         diff_analyze=names if args.diff_analyze else ())
    return _report(directories, failures)


def fixture_scenarios() -> list[Scenario]:
    pairs = {p.name: p for p in CORPUS}
    return [Scenario(pairs[name], task, level) for name, level, task in FIXTURES]


def _report(directories: list[Path], failures: list[str]) -> int:
    for directory in directories:
        print(f"generated {directory.name}", file=sys.stderr)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
