"""Report templates compiled once: Jinja's bytecode, kept in advisor's cache and loaded only once verified.

Compiling report.html.j2 and report.md.j2 costs ~70 ms of every ``advisor run`` (more than the
rules on a small comparison); Jinja can keep the compiled code of a template and load it in a
millisecond. Compiled code is Python code, so an entry is loaded only after advisor/cachefiles.py
verified it (its tag is keyed by a secret only the user can read, in a folder only the user can
write): a planted entry is ignored, never run. Jinja checks the template's source (an edited template
is compiled again) and its own bytecode format; the key here adds what else shapes the compiled code:
advisor's and Jinja's versions, the environment's syntax and whitespace options and whether the
template autoescapes, and the template's path. A damaged or unverifiable entry, or a folder that
cannot be used, only costs the saving, as for parsed rule packs (``ADVISOR_CACHE_DIR=off`` turns it off).
"""

from __future__ import annotations

import hashlib

import jinja2
from jinja2 import BytecodeCache, Environment
from jinja2.bccache import Bucket

from .. import __version__, cachefiles

KIND = "templates"


class CompiledTemplates(BytecodeCache):
    def __init__(self, env: Environment) -> None:
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
        payload = cachefiles.read(KIND, f"{bucket.key}.cache")
        if payload is None:
            return
        try:
            bucket.bytecode_from_string(payload)
        except (ValueError, EOFError, TypeError):   # damaged: compile again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        cachefiles.write(KIND, f"{bucket.key}.cache", bucket.bytecode_to_string())
