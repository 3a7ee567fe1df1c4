"""``advisor docs [TOPIC]``: the documentation that messages and the README cite (``docs/*.md``),
shipped inside the package, so an installed advisor can show ``docs/formats.md`` without the checkout."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..errors import UsageError
from ..resources import data_dir
from ..text import suggest
from . import command_help


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "docs", help=command_help("docs"),
        description="List the documentation topics, or print one (Markdown). Messages that cite "
                    "docs/NAME.md mean 'advisor docs NAME'.")
    parser.add_argument("topic", nargs="?", metavar="TOPIC", help="a topic (formats, verify, docs/remedy.md...)")
    parser.add_argument("--path", action="store_true", help="print where the topic's file is instead of its text")


def topics() -> dict[str, Path]:
    """topic -> its Markdown file, in name order."""
    return {path.stem: path for path in sorted(data_dir("docs").glob("*.md"))}


def topic_file(name: str) -> Path:
    """The file of ``name`` (``formats``, ``formats.md`` or ``docs/formats.md``); a usage error naming the
    topics (and the nearest one) for anything else."""
    key = Path(name.strip()).name.removesuffix(".md").lower()
    known = topics()
    if key not in known:
        raise UsageError(f"no documentation topic '{name}'{suggest(key, list(known))}; topics: {', '.join(known)}")
    return known[key]


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return re.sub(r"^#+\s*", "", line).strip()
    return ""


def execute(args: argparse.Namespace) -> int:
    if args.topic is None:
        known = topics()
        width = max(map(len, known), default=0)
        print("\n".join(f"{name:<{width}}  {_title(path)}" for name, path in known.items()))
        print("\nadvisor docs TOPIC prints one.")
        return 0
    path = topic_file(args.topic)
    print(path if args.path else path.read_text(encoding="utf-8"), end="" if not args.path else "\n")
    return 0
