"""Cut the built-in rules' input cases (``input_cases:``) from the committed real comparison files.

For each rule, a comparison under tests/data on which it fires, and one of the same tool's layout on
which it stays silent, are cut down to the fewest ops whose rows keep the outcome: the rule's findings
(kind, op, index) for a firing case, every rule's outcome for a silent one. Rows are kept or dropped
whole, as the tool wrote them (bytes unchanged, header first): a case never holds a number the tool
could not write. The cases land in ``rules/core/<domain>/cases/``, with their sources and kept lines
in that folder's SOURCES.md, and the rule file gets its ``input_cases:`` entries.

    python -m benchmarks.rule_cases [--rules RULE_ID ...] [--dry-run]

A rule whose cases exist is left alone (delete them to cut again). Rules that need a graph, dumps, a
build config or the CPU checks fire on no comparison alone; they are listed at the end.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from advisor.engine.judgement import builtin_judgement
from advisor.engine.loading import builtin_pack_paths, load_packs
from advisor.engine.packs import Rule
from advisor.facts.builder import build_facts
from advisor.facts.thresholds import Thresholds, load_thresholds
from advisor.ingest import read_comparison
from advisor.pipeline_cases import run_input_case

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SOURCES = sorted(DATA.rglob("*.csv"))
# Whole networks first (the generated scenarios, real-tool runs), the reader fixtures (vendor unit-test
# tables of two columns) last: a case should look like what users feed advisor.
PREFERENCE = ("scenarios", "msaccucmp_genuine", "realtool", "msprobe_faults", "training", "ingest")


def preferred(path: Path) -> tuple[int, int]:
    top = path.relative_to(DATA).parts[0]
    return (PREFERENCE.index(top) if top in PREFERENCE else len(PREFERENCE), path.stat().st_size)


@dataclass
class Outcome:
    fired: dict[str, tuple[tuple[str, str | None, int | None], ...]]   # rule -> its findings (kind, op, index)

    def of(self, rule: str) -> tuple:
        return self.fired.get(rule, ())


def outcome(path: Path, rules: list[Rule]) -> Outcome | None:
    """What the rules give on the comparison at ``path`` (None when it cannot be read or judged)."""
    from advisor.engine.runner import run_rules
    try:
        facts = build_facts(read_comparison(path), _thresholds(), judge=builtin_judgement())
        result = run_rules(rules, facts.all_facts())
    except Exception:  # noqa: BLE001 - a cut that breaks the file is simply not kept
        return None
    fired: dict[str, list] = {rule: [] for rule, times in result.fired.items() if times}
    for finding in result.findings:
        fired.setdefault(finding.rule, []).append((finding.kind, finding.op, finding.index))
    return Outcome({rule: tuple(sorted(items, key=str)) for rule, items in fired.items()})


@cache
def _thresholds() -> Thresholds:
    return load_thresholds()


def row_groups(path: Path) -> tuple[bytes, list[list[tuple[int, bytes]]]]:
    """The header line and the data lines grouped by op (the reader's op index), in file order."""
    lines = path.read_bytes().splitlines(keepends=True)
    frame = read_comparison(path).frame
    groups: dict[object, list[int]] = {}
    for line, index, name in zip(frame["source_line"], frame["op_index"], frame["op_name"], strict=True):
        key = int(index) if index == index and index is not None else ("name", str(name))
        groups.setdefault(key, []).append(int(line))
    header = lines[0]
    ordered = sorted(groups.values(), key=min)
    return header, [[(n, lines[n - 1]) for n in sorted(numbers)] for numbers in ordered]


def minimise(path: Path, keep: Callable[[Path], bool], scratch: Path) -> list[tuple[int, bytes]]:
    """The fewest op groups of ``path`` for which ``keep`` still holds (delta debugging by chunks)."""
    header, groups = row_groups(path)
    scratch.parent.mkdir(parents=True, exist_ok=True)

    def holds(chosen: list[list[tuple[int, bytes]]]) -> bool:
        scratch.write_bytes(header + b"".join(text if text.endswith(b"\n") else text + b"\n"
                                              for group in chosen for _, text in group))
        return keep(scratch)

    return [row for group in fewest(groups, holds) for row in group]


def fewest(items: list[T], holds: Callable[[list[T]], bool]) -> list[T]:
    """The fewest of ``items`` (in their order) for which ``holds`` still holds, leaving out chunks of
    halving size (delta debugging): ``holds`` is never asked about an empty list."""
    chunk = max(len(items) // 2, 1)
    while chunk >= 1:
        start, changed = 0, False
        while start < len(items):
            trial = items[:start] + items[start + chunk:]
            if trial and holds(trial):
                items, changed = trial, True
            else:
                start += chunk
        if not changed:
            chunk //= 2
    return items


def family(path: Path) -> str:
    header = path.read_bytes().splitlines()[0].decode("utf-8", "replace")
    return "msprobe" if "NPU Name" in header else "msaccucmp"


def cut_cases(rule: Rule, rules: list[Rule], outcomes: dict[Path, Outcome], folder: Path) -> list[dict]:
    """The rule's firing and silent cases, written into ``folder`` (their entries for the rule file)."""
    firing = sorted((p for p, o in outcomes.items() if rule.id in o.fired), key=preferred)
    if not firing:
        return []
    source = firing[0]
    wanted = outcomes[source].of(rule.id)
    kept = minimise(source, lambda p: (o := outcome(p, rules)) is not None and rule.id in o.fired
                    and o.of(rule.id) == wanted, folder / ".scratch.csv")
    cases = [_write(rule, "fires", source, kept, folder, outcome_of=lambda p: outcome(p, rules))]
    silent = sorted((p for p, o in outcomes.items() if rule.id not in o.fired and o.fired
                     and family(p) == family(source)), key=preferred)
    if silent:
        source = silent[0]
        expected = outcomes[source].fired
        kept = minimise(source, lambda p: (o := outcome(p, rules)) is not None and set(o.fired) == set(expected),
                        folder / ".scratch.csv")
        cases.append(_write(rule, "silent", source, kept, folder, outcome_of=lambda p: outcome(p, rules)))
    (folder / ".scratch.csv").unlink(missing_ok=True)
    return cases


def _write(rule: Rule, expect: str, source: Path, kept: list[tuple[int, bytes]], folder: Path,
           outcome_of: Callable[[Path], Outcome | None]) -> dict:
    header = source.read_bytes().splitlines(keepends=True)[0]
    name = f"{rule.id}.{expect}.csv"
    target = folder / name
    target.write_bytes(header + b"".join(text if text.endswith(b"\n") else text + b"\n" for _, text in kept))
    lines = [1] + [n for n, _ in kept]
    _record_source(folder, name, source, lines)
    result = outcome_of(target)
    where = source.parent.name if source.parent.parent != DATA else source.stem
    entry = {"name": f"{'fires on' if expect == 'fires' else 'silent on'} rows of {where}",
             "expect": "fire" if expect == "fires" else "silent", "input": f"cases/{name}"}
    if expect == "fires" and result is not None and rule.emit is not None:
        entry["findings"] = [{key: value for key, value in zip(("kind", "op", "index"), found, strict=True)
                              if value is not None} for found in result.of(rule.id)]
    return entry


def _record_source(folder: Path, name: str, source: Path, lines: list[int]) -> None:
    index = folder / "SOURCES.md"
    text = index.read_text(encoding="utf-8") if index.is_file() else (
        "# Where these input cases come from\n\nEach file is the header and whole rows of a real comparison "
        "committed under tests/data (its own provenance is there), cut with `python -m benchmarks.rule_cases`: "
        "nothing is edited, rows are only left out.\n\n")
    entry = f"- `{name}`: {source.relative_to(REPO).as_posix()}, lines {_ranges(lines)}\n"
    text = re.sub(rf"^- `{re.escape(name)}`:.*\n", "", text, flags=re.M) + entry
    index.write_text(text, encoding="utf-8")


def _ranges(numbers: list[int]) -> str:
    spans, start = [], numbers[0]
    for previous, current in zip(numbers, numbers[1:] + [None], strict=True):
        if current != previous + 1:
            spans.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = current
    return ", ".join(spans)


def append_cases(rule: Rule, cases: list[dict]) -> None:
    """The entries appended to the rule's file as ``input_cases:`` (flow style, one line each)."""
    lines = ["input_cases:"]
    for case in cases:
        lines.append(f"  - name: {json.dumps(case['name'])}")
        lines.append(f"    expect: {case['expect']}")
        lines.append(f"    input: {case['input']}")
        if case.get("findings"):
            lines.append("    findings: " + json.dumps(case["findings"], ensure_ascii=False))
    text = rule.source.read_text(encoding="utf-8")
    rule.source.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", nargs="*", help="only these rule ids")
    parser.add_argument("--dry-run", action="store_true", help="say what would be cut, write nothing")
    args = parser.parse_args(argv)
    core = next(p for p in builtin_pack_paths() if p.name == "core")
    rules = load_packs(installed=False).rules
    outcomes = {p: o for p in SOURCES if (o := outcome(p, rules)) is not None}
    lacking = []
    for rule in rules:
        if args.rules and rule.id not in args.rules:
            continue
        if rule.input_cases:
            continue
        if args.dry_run:
            fires = [p for p, o in outcomes.items() if rule.id in o.fired]
            print(f"{rule.id}: {len(fires)} source(s)" if fires else f"{rule.id}: none")
            continue
        cases = cut_cases(rule, rules, outcomes, rule.source.parent / "cases")
        if not cases:
            lacking.append(rule.id)
            continue
        append_cases(rule, cases)
        checked = load_packs(installed=False).rules
        fresh = next(r for r in checked if r.id == rule.id)
        results = [run_input_case(fresh, case, checked) for case in fresh.input_cases]
        print(f"{rule.id}: " + ", ".join(f"{r.expected} {'ok' if r.passed else 'FAILED'}" for r in results))
    if lacking:
        print(f"no comparison alone makes these fire ({core}): " + ", ".join(lacking))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
