"""The one way advisor opens a file it reads, whether the command line named it or advisor found it
inside a folder (a dump folder, a rule pack, an ONNX model's external weights, a graph's side files).

* Regular files and folders only: a FIFO blocks its reader forever, ``/dev/zero`` never ends, and a
  link named like a dump may lead to either. :func:`check_input` refuses them from ``stat`` before
  anything is opened; :func:`open_input` opens with ``O_NONBLOCK`` (opening a FIFO then returns at once
  instead of waiting for a writer) and checks the open descriptor itself, so what was checked is what
  is read, then reads normally.
* Bounds: a file read whole is at most ``max_bytes`` (its size is known before a byte is read), and
  a folder is listed up to ``MAX_FOLDER_FILES`` files of its kind.
* A library that opens a file by its name (numpy's memory maps, pandas' chunked CSV reader) gets it
  after :func:`regular_file` said it is one.

Every refusal is the caller's error class naming the file, so the CLI prints one line and exits 2.
A path that does not exist passes :func:`check_input`: the reader names what is missing in its words.
"""

from __future__ import annotations

import argparse
import itertools
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from .errors import AdvisorError, InputFormatError, UsageError

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)

#: Files of one kind a folder may hold: far beyond what real ones hold (a rule pack: tens of rules; a
#: dump folder: a few hundred thousand tensors), small enough that listing them stays cheap.
MAX_FOLDER_FILES = {"pack": 10_000, "dumps": 5_000_000}
#: A file read whole (a graph, a dump.json, a config): the largest real ones are a few hundred MiB.
MAX_WHOLE_BYTES = 2 * 2**30
#: A settings file (a build config, advisor.toml, a mapping): real ones are a few KiB.
MAX_SETTINGS_BYTES = 16 * 2**20


def _refusal(mode: int, path: str | Path, error: type[AdvisorError]) -> AdvisorError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return error(f"is {kind}, not a file: advisor reads regular files", path=path)


def check_input(path: str | Path, error: type[AdvisorError] = UsageError) -> Path:
    """``path`` if it is a regular file, a folder or does not exist; else ``error`` naming what it is."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return path
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path
    raise _refusal(mode, path, error)


def regular_file(path: str | Path, error: type[AdvisorError] = InputFormatError) -> Path:
    """``path`` if it is a regular file (links followed); else ``error`` naming what it is instead."""
    _check_regular(path, error)
    return Path(path)


def _check_regular(path: str | Path, error: type[AdvisorError]) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error("file not found", path=Path(path)) from None
    except (OSError, ValueError) as exc:
        raise error(f"cannot read: {getattr(exc, 'strerror', None) or exc}", path=Path(path)) from None
    if stat.S_ISDIR(mode):
        raise error("is a folder, expected a file", path=Path(path))
    if not stat.S_ISREG(mode):
        raise _refusal(mode, path, error)


def open_input(path: str | Path, error: type[AdvisorError] = InputFormatError, *,
               max_bytes: int | None = None, what: str = "file") -> BinaryIO:
    """``path`` opened for reading in binary, never blocking: a regular file of at most ``max_bytes``,
    else ``error`` naming it (``what`` names the kind of file in the size message)."""
    return os.fdopen(open_input_fd(path, error, max_bytes=max_bytes, what=what), "rb")


def open_input_fd(path: str | Path, error: type[AdvisorError] = InputFormatError, *,
                  max_bytes: int | None = None, what: str = "file") -> int:
    """:func:`open_input` as a bare file descriptor (the caller closes it): for a reader that
    fills its own buffers and needs no buffered file around them."""
    _check_regular(path, error)
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise error("file not found", path=Path(path)) from None
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}", path=Path(path)) from None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):          # swapped since the check above
            raise _refusal(found.st_mode, path, error)
        if max_bytes is not None and found.st_size > max_bytes:
            raise error(f"is {found.st_size / 2**20:,.0f} MiB: larger than the {max_bytes / 2**20:,.0f} MiB advisor "
                        f"reads of a {what}", path=Path(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_input(path: str | Path, error: type[AdvisorError] = InputFormatError, *,
               max_bytes: int | None = None, what: str = "file") -> bytes:
    """The bytes of ``path``, opened by :func:`open_input`."""
    with open_input(path, error, max_bytes=max_bytes, what=what) as handle:
        try:
            return handle.read()
        except OSError as exc:
            raise error(f"cannot read: {exc.strerror or exc}", path=path) from None


def read_input_text(path: str | Path, error: type[AdvisorError] = InputFormatError, *, encoding: str = "utf-8",
                    errors: str = "strict", max_bytes: int | None = MAX_WHOLE_BYTES, what: str = "file") -> str:
    """The text of ``path`` (read whole, opened by :func:`open_input`); undecodable text is ``error``."""
    data = read_input(path, error, max_bytes=max_bytes, what=what)
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError:
        raise error(f"not {encoding.upper().removesuffix('-SIG')} text", path=path) from None


def listed(files: Iterable[Path], folder: Path, kind: str,
           error: type[AdvisorError] = InputFormatError) -> list[Path]:
    """``files`` found in ``folder`` (an iterator: read no further than the bound), sorted, if there are
    at most MAX_FOLDER_FILES[kind]; else ``error`` naming the folder."""
    limit = MAX_FOLDER_FILES[kind]
    found = list(itertools.islice(files, limit + 1))
    if len(found) > limit:
        raise error(f"holds more than {limit:,} files to read, more than advisor reads from one folder",
                    path=folder)
    return sorted(found)


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
