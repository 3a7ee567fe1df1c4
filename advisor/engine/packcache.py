"""Rule packs parsed once: the validated pack (and its problems) cached by the content of its files.

The key is a SHA-256 over advisor's version and the code that validates packs (file sizes and times:
an edited checkout counts as another build), the fact schema, the built-in finding kinds and
thresholds a pack is checked against, and every file of the pack (relative name and bytes), so an
edited file, a new provider field or another advisor is a different key, never a stale hit. Two layers:

* in the process, for the jobs of a batch, the tests, and every command that loads packs twice;
* on disk, in the user's cache folder (``packs`` of ``resources.cache_dir``: under
  ``$ADVISOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/advisor``, else ``~/.cache/advisor``), for the next
  ``advisor run``. Written atomically (a temporary file renamed into place); an unreadable or
  foreign entry is ignored and rewritten, and a folder that cannot be written is skipped silently:
  the cache only ever saves time. ``ADVISOR_CACHE_DIR=off`` turns the disk layer off.

Cached packs are shared: nothing may change a loaded pack (``select_rules`` copies the rules it re-rates).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from .. import __version__, resources
from ..advice import builtin_kinds
from ..resources import data_dir
from .rulemodel import pack_files

FORMAT = 2                                  # bump when the pickled classes change shape
_memory: dict[str, Any] = {}                # content key -> (RulePack | None, [Problem])
MAX_MEMORY = 64


def cache_dir() -> Path | None:
    """The on-disk cache folder, or None when turned off."""
    return resources.cache_dir("packs")


def content_key(path: Path, schema_digest: str) -> str:
    """The pack's path as given (problems and rules name their files by it) and its files (pack.yaml
    first, then rule files by name) with the version and schema."""
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{_code_stamp()}\0{schema_digest}\0{path}\0".encode())
    digest.update(" ".join(builtin_kinds()).encode() + b"\0")
    digest.update((data_dir("knowledge") / "thresholds.yaml").read_bytes() + b"\0")
    # The rule files, then the other files of the pack (the input cases' comparison files: validation
    # checks they exist, so adding or removing one is another key).
    others = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".yaml") if path.is_dir() else []
    for file in [*pack_files(path), *others]:
        if not file.is_file():      # a FIFO or device would block the read: let parsing refuse it
            raise OSError(f"not a regular file: {file}")
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode("utf-8") + b"\0")
        digest.update(file.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@cache
def _code_stamp() -> str:
    """Size and modification time of every module of advisor (what validation runs)."""
    root = Path(__file__).resolve().parents[1]
    stats = sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*.py"))
    return hashlib.sha256(repr(stats).encode()).hexdigest()


def cached(path: Path, schema_digest: str, parse: Callable[[], Any]) -> Any:
    """``parse()``'s result for this content, from memory, from disk, or parsed now (and stored)."""
    try:
        key = content_key(path, schema_digest)
    except OSError:
        return parse()          # an unreadable file: parsing names it with its error
    if key in _memory:
        return _memory[key]
    result = _read_disk(key)
    if result is None:
        result = parse()
        _write_disk(key, result)
    if len(_memory) >= MAX_MEMORY:
        _memory.pop(next(iter(_memory)))
    _memory[key] = result
    return result


def clear_memory() -> None:
    _memory.clear()


def _read_disk(key: str) -> Any:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        with open(folder / f"{key}.pickle", "rb") as handle:
            stored_key, result = pickle.load(handle)
    except Exception:  # noqa: BLE001 - missing, truncated or from another build: parse again
        return None
    return result if stored_key == key else None


def _write_disk(key: str, result: Any) -> None:
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(dir=folder, prefix=f".{key[:16]}.", suffix=".tmp", delete=False)
        try:
            with handle:
                pickle.dump((key, result), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(handle.name, folder / f"{key}.pickle")
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise
    except Exception:  # noqa: BLE001,S110 - a read-only or full cache folder only costs the saving
        pass
