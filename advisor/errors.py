"""One small exception hierarchy. Every error a user can cause says which file (and line or
field) is wrong and what to do; the CLI prints it on one line and exits with code 2."""

from __future__ import annotations

import errno
from pathlib import Path

from .text import oneline

MAX_MESSAGE = 2_000       # characters of a message (a hostile file can put megabytes into a name or a cell)
MAX_PATH = 300


def bounded(text: str, limit: int) -> str:
    """``text`` cut in the middle when longer than ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit + 40
    return f"{text[:limit * 3 // 4]} …({cut:,} characters cut)… {text[-(limit // 4 - 40):]}"


class AdvisorError(Exception):
    """Base class: an error a user can fix. ``str(err)`` is the one-line message."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 column: int | None = None, field: str | None = None) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.column = column
        self.field = field
        super().__init__(self.one_line())

    def location(self) -> str:
        parts = []
        if self.path:
            where = bounded(self.path, MAX_PATH)
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            parts.append(where)
        if self.field:
            parts.append(f"field '{bounded(self.field, MAX_PATH)}'")
        return ", ".join(parts)

    def one_line(self) -> str:
        where = self.location()
        text = bounded(oneline(self.message), MAX_MESSAGE)  # one line, of bounded length
        return f"{where}: {text}" if where else text


class InputFormatError(AdvisorError):
    """A comparison result, graph, dump or config could not be read."""


class RulePackError(AdvisorError):
    """A rule pack (YAML) is malformed or refers to unknown facts, fields or advice."""


class KnowledgeError(AdvisorError):
    """The knowledge base (thresholds, advice pages, op catalogs) is malformed."""


class EngineError(AdvisorError):
    """A rule action failed while the engine ran; names the rule."""


class UsageError(AdvisorError):
    """A command-line option is invalid."""


class DiskFullError(UsageError):
    """The disk (or the user's quota) is full: every later write fails too, so a batch stops on it
    rather than failing each job in turn."""


def write_failure(what: str, exc: OSError, path: str | Path) -> UsageError:
    """``cannot write WHAT: reason`` for ``path``; a DiskFullError when the disk or the quota is full."""
    kind = DiskFullError if exc.errno in (errno.ENOSPC, errno.EDQUOT) else UsageError
    return kind(f"cannot write {what}: {exc.strerror or exc}", path=path)
