"""Report templates compiled once: Jinja's own bytecode cache, in advisor's cache folder.

Compiling report.html.j2 and report.md.j2 costs ~70 ms of every ``advisor run`` (more than the
rules on a small comparison); Jinja can keep the compiled code of a template on disk and load it
in a millisecond. Its file cache checks the template's source (an edited template is compiled
again) and its own bytecode format; the key here adds what else shapes the compiled code: advisor's
and Jinja's versions, the environment's syntax and whitespace options and whether the template
autoescapes, and the template's path. Written atomically by Jinja (a temporary file renamed into
place); a folder that cannot be read or written, or a damaged entry, only costs the saving, as for
parsed rule packs (``resources.cache_dir``: ``templates``; ``ADVISOR_CACHE_DIR=off`` turns it off).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import jinja2
from jinja2 import Environment, FileSystemBytecodeCache
from jinja2.bccache import Bucket

from .. import __version__


class CompiledTemplates(FileSystemBytecodeCache):
    def __init__(self, folder: Path, env: Environment) -> None:
        super().__init__(str(folder))
        self._env = env
        options = (env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
                   env.comment_start_string, env.comment_end_string, env.line_statement_prefix,
                   env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks, env.newline_sequence,
                   env.keep_trailing_newline, sorted(env.extensions), env.optimized, env.finalize is not None,
                   env.is_async)
        self._stamp = repr((__version__, jinja2.__version__, options))

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        autoescape = self._env.autoescape(name) if callable(self._env.autoescape) else self._env.autoescape
        return hashlib.sha256(repr((self._stamp, bool(autoescape), name, filename)).encode("utf-8")).hexdigest()

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError, TypeError):  # unreadable or damaged: compile again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:  # a read-only or full cache folder only costs the saving
            pass
