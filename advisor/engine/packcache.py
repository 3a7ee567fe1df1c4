"""Rule packs parsed once: the validated pack (and its problems) cached by the content of its files.

The key is a SHA-256 over advisor's version and the code that validates packs (file sizes and times:
an edited checkout counts as another build), the fact schema, the built-in finding kinds and
thresholds a pack is checked against, and every file of the pack (relative name and bytes), so an
edited file, a new provider field or another advisor is a different key, never a stale hit. Two layers:

* in the process, for the jobs of a batch, the tests, and every command that loads packs twice;
* on disk, in the user's cache folder (``packs`` of ``resources.cache_dir``: under
  ``$ADVISOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/advisor``, else ``~/.cache/advisor``), for the next
  ``advisor run``: as JSON data (packcodec.py), signed and verified by advisor/cachefiles.py before it
  is parsed, in a folder only the user can write; never pickle, so a cache entry cannot run code. An
  unverifiable or foreign entry is ignored and rewritten, and a folder that cannot be used is skipped:
  the cache only ever saves time. ``ADVISOR_CACHE_DIR=off`` turns the disk layer off.

Cached packs are shared: nothing may change a loaded pack (``select_rules`` copies the rules it re-rates).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__, cachefiles
from ..advice import builtin_kinds
from ..errors import AdvisorError, RulePackError
from ..inputfiles import MAX_WHOLE_BYTES, listed, read_input
from ..resources import data_dir
from ..yamlfile import MAX_YAML_BYTES
from . import packcodec
from .rulemodel import pack_files

FORMAT = 3                   # bump when the stored classes change shape (2: JSON, packcodec; 3: Rule.judges)
_memory: dict[str, Any] = {}                # content key -> (RulePack | None, [Problem])
MAX_MEMORY = 64


def content_key(path: Path, schema_digest: str) -> str:
    """The pack's path as given (problems and rules name their files by it) and its files (pack.yaml
    first, then rule files by name) with the version and schema."""
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{_code_stamp()}\0{schema_digest}\0{path}\0".encode())
    digest.update(" ".join(builtin_kinds()).encode() + b"\0")
    digest.update((data_dir("knowledge") / "thresholds.yaml").read_bytes() + b"\0")
    # The rule files, then the other files of the pack (the input cases' files: validation checks they
    # exist, so adding or removing one is another key). Each read through read_input: a FIFO or device is
    # refused without blocking, and the pack is then parsed, which names it.
    rules = pack_files(path)
    others = [p for p in listed(path.rglob("*"), path, "pack", RulePackError)
              if p.is_file() and p not in rules] if path.is_dir() else []
    for file in [*rules, *others]:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode("utf-8") + b"\0")
        bound = MAX_YAML_BYTES if file.suffix == ".yaml" else MAX_WHOLE_BYTES
        digest.update(read_input(file, RulePackError, max_bytes=bound))
        digest.update(b"\0")
    return digest.hexdigest()


@cache
def _code_stamp() -> str:
    """Size and modification time of every module of advisor (what validation runs)."""
    root = Path(__file__).resolve().parents[1]
    stats = sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*.py"))
    return hashlib.sha256(repr(stats).encode()).hexdigest()


def cached(path: Path, schema_digest: str, fields: Mapping[str, Any], parse: Callable[[], Any]) -> Any:
    """``parse()``'s result for this content, from memory, from disk, or parsed now (and stored);
    ``fields``: the fact schema of ``schema_digest``, given back to the rules read from disk."""
    try:
        key = content_key(path, schema_digest)
    except (OSError, AdvisorError):
        return parse()          # an unreadable file: parsing names it with its error
    if key in _memory:
        return _memory[key]
    result = _read_disk(key, fields)
    if result is None:
        result = parse()
        _write_disk(key, result)
    if len(_memory) >= MAX_MEMORY:
        _memory.pop(next(iter(_memory)))
    _memory[key] = result
    return result


def clear_memory() -> None:
    _memory.clear()


def _read_disk(key: str, fields: Mapping[str, Any]) -> Any:
    payload = cachefiles.read("packs", f"{key}.json")
    if payload is None:
        return None
    try:
        return packcodec.loads(payload, fields)
    except packcodec.Unreadable:       # from another build of the codec: parse again
        return None


def _write_disk(key: str, result: Any) -> None:
    try:
        payload = packcodec.dumps(result)
    except TypeError:                  # a value the codec does not store (a YAML type it does not know)
        return
    cachefiles.write("packs", f"{key}.json", payload)
