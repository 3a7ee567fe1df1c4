"""Command line: one module per subcommand, registered here.

Exit codes (scripts depend on them): 0 analysed, 1 findings at or above --fail-on, 2 bad input or
usage (one line on stderr naming the file and the problem), 3 an internal error (a bug: please report).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import AdvisorError
from . import batch as batch_command
from . import compare as compare_command
from . import diff as diff_command
from . import history as history_command
from . import node as node_command
from . import ops as ops_command
from . import rules as rules_command
from . import run as run_command
from . import tensor as tensor_command

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

# name -> module with add_parser(subparsers) and execute(args) -> int
COMMANDS = {"run": run_command, "rules": rules_command, "batch": batch_command, "history": history_command,
            "compare": compare_command}
COMMANDS.update(ops=ops_command, node=node_command, tensor=tensor_command, diff=diff_command)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="advisor", description="Explain why a network's numbers drifted after migration.")
    parser.add_argument("--version", action="version", version=f"advisor {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in COMMANDS.values():
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].execute(args)
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
    sys.exit(main())
