"""Command line: one module per subcommand, registered here.

Exit codes (scripts depend on them): 0 analysed, 1 findings at or above --fail-on, 2 bad input or
usage (one line on stderr naming the file and the problem), 3 an internal error (a bug: please report).

A command's module imports at its top only what its parser needs; what the command runs (pandas,
the rule engine, jinja2, numpy) is imported by the functions that run it, so ``advisor COMMAND
--help`` answers in a few hundredths of a second (tests/cli/test_startup.py, benchmarks/startup.py).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from .. import __version__
from ..errors import AdvisorError
from ..memory import release_freed_memory

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

# name -> (module in this package with add_parser(subparsers) and execute(args) -> int, one-line help).
# A command's module, and what it imports (pandas, numpy, the rule engine, jinja2), is loaded only when
# that command is on the command line: `advisor --help` and `--version` need none of it.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "analyse a comparison result and write reports"),
    "rules": ("rules", "validate, test, list, show and document rule packs"),
    "batch": ("batch", "analyse many comparisons (manifest or folder scan), keep a history, write an index"),
    "history": ("history", "list batch runs, show one, diff two"),
    "post": ("post", "compare a golden and a target post-processing's detections and write reports"),
    "compare": ("compare", "compare golden and target dumps into an msaccucmp result CSV"),
    "ops": ("ops", "list the ops of a comparison, filtered and in execution order"),
    "node": ("node", "everything known about one op"),
    "tensor": ("tensor", "statistics and a histogram of one tensor (.npy)"),
    "diff": ("diff", "compare two tensors: metrics, tolerance, worst elements, probes"),
    "docs": ("docs", "the documentation messages cite (docs/NAME.md): list the topics or print one"),
}
FIRST_STEPS = """first steps:
  advisor run RESULT.csv -o report      analyse a comparison, write report.html/md/json/txt
  advisor run RESULT.csv --dumps GOLDEN:TARGET --graph model.onnx --config build.json   with the evidence
  advisor ops RESULT.csv --below cosine=0.98     look at the ops by hand
  advisor docs                           the documentation topics (advisor docs formats...)
  advisor COMMAND --help                 a command's options"""


def command_help(name: str) -> str:
    return COMMANDS[name][1]


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f".{COMMANDS[name][0]}", __name__)


# The cyclic collector's first threshold for a process that ends with its command (Python's default
# is 700 allocations). See _tune_collector.
ONE_COMMAND_GC_THRESHOLD = 10_000


def _tune_collector() -> None:
    """The cyclic garbage collector set for one command whose process then ends.

    * Every object alive now, once the command's module is imported (pandas, numpy, pyarrow,
      advisor: ~70,000 containers that live as long as the process), is moved out of the
      collector's sight (``gc.freeze``), so that no collection during the command, nor the ones at
      exit, walks them again: 0.1 s of a small ``advisor run`` (median of 16 runs of the bundled
      example: 0.83 -> 0.72 s; ~0.05 s of a million-row run, within its noise).
    * A collection of the youngest generation starts after ONE_COMMAND_GC_THRESHOLD allocations
      instead of 700. A run keeps what it builds (facts, findings, their views) to its end, and
      Python's default makes the collector walk that growing heap again and again: a 100k-tensor
      dump.json pair spent 0.60 s of its 5.8 s CPU in 1,319 collections, 0.47 s of it in 8 full
      ones, which found almost nothing to free; at 10,000 it spends 0.15 s in 82, none full (peak
      RSS 540 -> 547 MiB; unchanged at 1M tensors). Cyclic garbage is still collected, only later.

    Only for a process that ends with the command: a frozen object is never collected, even once it
    is garbage."""
    import gc

    gc.freeze()
    gc.set_threshold(ONE_COMMAND_GC_THRESHOLD, *gc.get_threshold()[1:])


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Every command with its options; given ``argv``, only the command it names is loaded and the
    others are listed by their one-line help (enough for ``advisor --help``)."""
    parser = _Parser(prog="advisor", description="Explain why a network's numbers drifted after migration.",
                     epilog=FIRST_STEPS, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"advisor {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    named = next((arg for arg in argv if not arg.startswith("-")), None) if argv is not None else None
    for name in COMMANDS:
        if argv is None or name == named:
            command_module(name).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=command_help(name))
    return parser


def main(argv: Sequence[str] | None = None, *, freeze_imports: bool = False) -> int:
    """Run one command; its exit code. ``freeze_imports``: the process ends with the command (the
    ``advisor`` program), so what its imports made can be frozen and the collector tuned
    (_tune_collector); a caller that goes on (tests, a Python session) keeps its collector as it was."""
    argv = list(sys.argv[1:] if argv is None else argv)
    release_freed_memory()
    parser = build_parser(argv)
    if not argv:                      # `advisor` alone: what it does and the commands, not one error line
        print(parser.format_help(), end="")
        return EXIT_BAD_INPUT
    args = parser.parse_args(argv)
    if freeze_imports:
        _tune_collector()
    try:
        return command_module(args.command).execute(args)
    except AdvisorError as exc:
        print(f"advisor: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # The reader of our output went away (`advisor rules list | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug; keep the exit code apart from bad input
        print(f"advisor: internal error: {type(exc).__name__}: {exc} (please report this with the input)",
              file=sys.stderr)
        return EXIT_INTERNAL


def entry_point() -> None:
    sys.exit(main(freeze_imports=True))
