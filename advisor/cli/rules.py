"""``advisor rules``: validate, test, list, show and document rule packs; scaffold a new one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..inputfiles import input_path
from ..resources import data_dir
from ..text import suggest
from . import command_help

if TYPE_CHECKING:
    from ..engine.packs import Rule
    from ..engine.registry import Registry


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rules", help=command_help("rules"))
    actions = parser.add_subparsers(dest="rules_command", required=True)
    packs_help = "pack folders or files (default: the built-in and installed packs)"
    for name, help_text in (("validate", "report every mistake in a pack, with file, line and column"),
                            ("test", "run each rule's own cases (must fire / must stay silent)"),
                            ("list", "list the rules of the packs")):
        sub = actions.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("packs", nargs="*", type=input_path, metavar="PACK", help=packs_help)
    show = actions.add_parser("show", help="everything about one rule", description="everything about one rule")
    show.add_argument("rule_id", metavar="ID")
    show.add_argument("--rules", action="append", type=input_path, default=[], metavar="PACK", help="extra pack")
    show.add_argument("--lang", choices=("en", "zh"), default="en")
    docs = actions.add_parser("docs", help="one Markdown page per rule (what, why, example, fix)",
                              description="write one Markdown page per rule (what, why, example, fix)")
    docs.add_argument("packs", nargs="*", type=input_path, metavar="PACK", help=packs_help)
    docs.add_argument("-o", "--output", type=Path, metavar="DIR", help="folder for the pages (default: print)")
    docs.add_argument("--lang", choices=("en", "zh"), default="en")
    fields = actions.add_parser("fields", help="the facts rules can match: kinds, fields, types, meanings",
                                description="print the fact schema (with installed fact providers' kinds): "
                                            "every field a 'when' pattern or an evidence template can name")
    fields.add_argument("fact", nargs="?", metavar="FACT", help="one fact kind, e.g. op (default: every kind)")
    new = actions.add_parser("new", help="scaffold a pack with one rule and its cases",
                             description="scaffold a pack with one working rule and its two cases")
    new.add_argument("name", help="pack name, kebab-case (e.g. my-team)")
    new.add_argument("--dir", type=Path, default=Path("."), help="parent folder (default: .)")


def execute(args: argparse.Namespace) -> int:
    from ..engine.registry import Registry
    from ..engine.scaffold import scaffold_pack
    from ..facts.providers import load_providers

    command = args.rules_command
    # Installed fact providers add fact kinds that installed or named packs may use.
    registry = Registry()
    for warning in load_providers(registry)[1]:
        print(warning, file=sys.stderr)
    if command == "fields":
        return _fields(registry, args.fact)
    if command == "new":
        folder = scaffold_pack(args.name, args.dir)
        print(f"created {folder}: edit {folder / (args.name + '-slow-softmax.yaml')}, then run "
              f"'advisor rules test {folder}' and 'advisor run RESULT.csv --rules {folder}'")
        return 0
    if command == "show":
        return _show(args.rule_id, args.rules, args.lang, registry)
    paths = args.packs or _default_paths()
    if command == "docs":
        return _docs(paths, args.output, args.lang, registry)
    return {"validate": _validate, "test": _test, "list": _list}[command](paths, registry)


def _fields(registry: Registry, kind: str | None) -> int:
    from ..engine.registry import describe

    if kind is not None and kind not in registry.fields:
        raise UsageError(f"no fact kind '{kind}'{suggest(kind, list(registry.fields))}; "
                         f"known: {', '.join(registry.fields)}")
    current = None
    for fact, name, field_type, description in describe(registry.fields, kind):
        if fact != current:
            owner = registry.providers.get(fact)
            print(("" if current is None else "\n") + f"{fact}" + (f" (fact provider '{owner}')" if owner else ""))
            current = fact
        print(f"  {name:<30} {field_type:<7} {description}")
    return 0


def _default_paths() -> list[Path]:
    from ..engine.loading import builtin_pack_paths, installed_packs

    installed = []
    for name, dist, path, error in installed_packs():
        if error:
            print(f"installed rule pack '{name}' ({dist}) cannot be loaded: {error}", file=sys.stderr)
        else:
            installed.append(path)
    return builtin_pack_paths() + installed


def _validate(paths: list[Path], registry: Registry) -> int:
    from ..engine.packs import check_pack

    failed = False
    for path in paths:
        pack, problems = check_pack(path, registry)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            failed = True
            print(f"{path}: {len(problems)} problem(s)", file=sys.stderr)
        else:
            print(f"{path}: pack '{pack.name}' {pack.version}, {len(pack.rules)} rules, valid")
    return 2 if failed else 0


def _test(paths: list[Path], registry: Registry) -> int:
    from ..engine.loading import builtin_pack_paths
    from ..engine.packs import load_pack
    from ..pipeline_cases import run_pack_cases

    failures = total = 0
    builtin = {p.resolve() for p in builtin_pack_paths()}
    for path in paths:
        pack = load_pack(path, registry)
        # Input cases run as a run would load them: the built-in packs, and this one.
        extra = [] if Path(path).resolve() in builtin else [Path(path)]
        for result in run_pack_cases(pack, extra):
            total += 1
            failures += not result.passed
            detail = f" ({result.error or result.mismatch})" if result.error or result.mismatch else (
                "" if result.passed else f" (expected to {result.expected}, "
                                         f"{'fired' if result.fired else 'stayed silent'})")
            print(f"{'PASS' if result.passed else 'FAIL'} {pack.name}/{result.rule}: {result.case} "
                  f"[{result.expected}]{detail}")
    print(f"rule cases: {total - failures} passed, {failures} failed")
    return 1 if failures else 0


def _list(paths: list[Path], registry: Registry) -> int:
    from ..engine.packs import load_pack

    for path in paths:
        pack = load_pack(path, registry)
        print(f"{pack.name} {pack.version} ({pack.source})")
        for rule in pack.rules:
            kind = rule.emit.kind if rule.emit else f"(judges {rule.judges})" if rule.judges else "(explains)"
            status = "" if rule.status == "stable" else f" [{rule.status}]"
            print(f"  {rule.id:<36} {rule.severity:<8} {kind:<24} {rule.title['en']}{status}")
    return 0


def _find_rule(rule_id: str, extra: list[Path], registry: Registry) -> Rule:
    from ..engine.loading import load_packs, rules_by_name

    rules = load_packs(extra, registry=registry).rules
    named = rules_by_name(rules)
    if rule_id in named:
        return named[rule_id]
    raise UsageError(f"no rule '{rule_id}'{suggest(rule_id, [r.id for r in rules])}")


def _show(rule_id: str, extra: list[Path], lang: str, registry: Registry) -> int:
    import yaml

    rule = _find_rule(rule_id, extra, registry)
    print(f"{rule.id}: {rule.title[lang]}")
    print(f"  pack {rule.pack}, {rule.source}:{rule.line}")
    print(f"  severity {rule.severity}{', names a root cause' if rule.root_cause else ''}, priority {rule.priority}")
    print(f"  status {rule.status}" + (f", formerly {', '.join(rule.aliases)}" if rule.aliases else ""))
    if rule.tags:
        print(f"  tags: {', '.join(rule.tags)}")
    own = [f"{k}={v}" for k, v in rule.params.items() if k not in rule.shared]
    if own:
        print("  params: " + ", ".join(own))
    if rule.shared:
        print(f"  pack params (--set {rule.pack}.NAME=VALUE): "
              + ", ".join(f"{k}={rule.params[k]}" for k in rule.shared))
    for section in ("what", "why", "fix"):
        print(f"  {section}: {rule.docs[lang][section]}")
    when = [_plain({"as": alias, **pattern} if len(rule.patterns) > 1 else pattern) for alias, pattern in rule.patterns]
    print("  when:\n" + _indent(yaml.safe_dump(when if len(when) > 1 else when[0], allow_unicode=True,
                                               sort_keys=False), 4))
    if rule.emit:
        print(f"  emits: {rule.emit.kind} (confidence {rule.emit.confidence})")
    elif rule.judges:
        print(f"  judges: {rule.judges}, for every comparison row")
    else:
        print(f"  explains: {rule.explain['symptom']} by {rule.explain['cause']}")
    print(f"  cases: {len(rule.cases)} ({sum(c['expect'] == 'fire' for c in rule.cases)} fire)")
    return 0


def _docs(paths: list[Path], output: Path | None, lang: str, registry: Registry) -> int:
    import yaml
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from ..engine.packs import load_pack
    from ..report.labels import labels_for

    env = Environment(loader=FileSystemLoader(data_dir("reports")), undefined=StrictUndefined,
                      keep_trailing_newline=True, autoescape=False)
    template = env.get_template("rule-doc.md.j2")
    labels = {key.split(".", 1)[1]: text for key, text in labels_for(lang).items() if key.startswith("ruledoc.")}
    pages = []
    for path in paths:
        for rule in load_pack(path, registry).rules:
            firing = next(case for case in rule.cases if case["expect"] == "fire")
            example = yaml.safe_dump(_plain(firing["facts"]), allow_unicode=True, sort_keys=False).rstrip()
            pages.append((rule.id, template.render(rule=rule, lang=lang, labels=labels, example=example)))
    if output is None:
        print("\n\n".join(text for _, text in pages))
        return 0
    output.mkdir(parents=True, exist_ok=True)
    for rule_id, text in pages:
        (output / f"{rule_id}.md").write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} page(s) to {output}")
    return 0


def _plain(value: object) -> object:
    """LineDicts back to plain dicts, for yaml.safe_dump."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.rstrip().splitlines())
