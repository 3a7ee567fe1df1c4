"""The one check every input path goes through before a reader opens it: advisor reads regular files
and folders, never a FIFO, a device or a socket (a FIFO blocks the reader forever, ``/dev/zero`` never
ends). A path that does not exist passes: the reader names what is missing in its own words."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from .errors import AdvisorError, UsageError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_input(path: str | Path, error: type[AdvisorError] = UsageError) -> Path:
    """``path`` if it is a regular file, a folder or does not exist; else ``error`` naming what it is."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return path
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise error(f"is {kind}, not a file: advisor reads regular files", path=path)


def input_path(text: str) -> Path:
    """argparse ``type=`` for an input file or folder: refused at the command line, one line, exit 2."""
    try:
        return check_input(text)
    except AdvisorError as exc:
        raise argparse.ArgumentTypeError(exc.one_line()) from None


def input_text(text: str) -> str:
    """Like :func:`input_path` for arguments that are a file or a name (``advisor tensor FILE|OP``)."""
    input_path(text)
    return text
