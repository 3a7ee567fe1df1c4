"""``advisor rules``: validate and test rule packs, list their rules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..engine.cases import run_pack_cases
from ..engine.loading import builtin_pack_paths
from ..engine.packs import check_pack, load_pack


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rules", help="validate, test and list rule packs")
    actions = parser.add_subparsers(dest="rules_command", required=True)
    for name, help_text in (("validate", "report every mistake in a pack, with file, line and column"),
                            ("test", "run each rule's own cases (must fire / must stay silent)"),
                            ("list", "list the rules of the packs")):
        sub = actions.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("packs", nargs="*", type=Path, metavar="PACK",
                         help="pack folders or files (default: the built-in packs)")


def execute(args: argparse.Namespace) -> int:
    paths = args.packs or builtin_pack_paths()
    return {"validate": _validate, "test": _test, "list": _list}[args.rules_command](paths)


def _validate(paths: list[Path]) -> int:
    failed = False
    for path in paths:
        pack, problems = check_pack(path)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            failed = True
            print(f"{path}: {len(problems)} problem(s)", file=sys.stderr)
        else:
            print(f"{path}: pack '{pack.name}' {pack.version}, {len(pack.rules)} rules, valid")
    return 2 if failed else 0


def _test(paths: list[Path]) -> int:
    failures = 0
    total = 0
    for path in paths:
        pack = load_pack(path)
        for result in run_pack_cases(pack):
            total += 1
            status = "PASS" if result.passed else "FAIL"
            failures += not result.passed
            detail = f" ({result.error})" if result.error else (
                "" if result.passed else f" (expected to {result.expected}, "
                                         f"{'fired' if result.fired else 'stayed silent'})")
            print(f"{status} {pack.name}/{result.rule}: {result.case} [{result.expected}]{detail}")
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


def _list(paths: list[Path]) -> int:
    for path in paths:
        pack = load_pack(path)
        print(f"{pack.name} {pack.version} ({pack.source})")
        for rule in pack.rules:
            print(f"  {rule.id:<34} {rule.severity:<8} {rule.title['en']}")
    return 0
