"""advisor's caches (parsed rule packs, compiled report templates) hold only what the user's own advisor
wrote, and nothing is loaded from them before it is verified.

The trust model (docs/robustness.md says it for users):

* The cache folder (``resources.cache_dir``) is trusted only when it is a real folder, not a link,
  owned by the user and writable by nobody else (like ``~/.ssh``). A folder others can write (a
  team-shared ``ADVISOR_CACHE_DIR``, a world-writable ``/tmp`` path) is not used: one warning on
  stderr per process, and advisor works uncached. A folder advisor makes is made ``0700``.
* Every entry is ``MAGIC + HMAC-SHA256(secret, name + payload) + payload``. The secret is 32 random
  bytes in ``<cache>/secret.key``, readable by the user alone; an entry whose tag does not verify
  (written by someone else, copied from another machine, damaged) is ignored before a byte of its
  payload is parsed, and written again. So even a cache a colleague could write into cannot make
  advisor load anything they wrote.
* What is loaded is data where it can be: parsed packs are JSON rebuilt into a fixed set of classes
  (engine/packcodec.py), never pickle. Compiled templates are Python code by nature (Jinja's
  bytecode); they are loaded only once their tag verifies.
* Entries are written atomically (advisor/ownfiles.py: a fresh temporary, never through a link) with
  mode ``0600``, read without following a link, at most ``MAX_ENTRY_BYTES``; what killed writers left
  is collected by the next write; a cache that cannot be read or written only costs the time it saves.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import sys
import time
from functools import cache
from pathlib import Path

from . import resources
from .ownfiles import CLOEXEC, NOFOLLOW, TEMP, replace_file

MAGIC = b"advcache1"
TAG_BYTES = 32
MAX_ENTRY_BYTES = 256 * 2**20
STALE_SECONDS = 60
SECRET = "secret.key"


def folder(kind: str) -> Path | None:
    """The trusted cache folder of ``kind`` (made when missing), or None: caching off, or a folder
    advisor must not trust (warned once)."""
    chosen = resources.cache_dir(kind)
    if chosen is None:
        return None
    for path in (chosen.parent, chosen):
        problem = _untrusted(path)
        if problem:
            _warn(path, problem)
            return None
    return chosen


def _untrusted(path: Path) -> str | None:
    """Why ``path`` cannot hold a cache of this user's (made 0700 when missing), or None."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = os.lstat(path)
    except OSError:
        return None if not path.exists() else "it cannot be read"        # unusable: uncached, no warning
    if stat.S_ISLNK(found.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(found.st_mode):
        return "it is not a folder"
    if hasattr(os, "getuid") and found.st_uid != os.getuid():
        return "it belongs to another user"
    if found.st_mode & 0o022:
        return "others can write into it"
    return None


@cache
def _warn(path: Path, problem: str) -> None:
    print(f"advisor: warning: the cache folder {path} is not used: {problem} (a cache is trusted only when it "
          "is yours and nobody else can write it: chmod go-w, or set ADVISOR_CACHE_DIR)", file=sys.stderr)


def _secret(root: Path) -> bytes | None:
    """The user's cache secret (made on first use), or None when it cannot be had safely."""
    path = root / SECRET
    data = _read_private(path, TAG_BYTES)
    if data is not None and len(data) == TAG_BYTES:
        return data
    try:
        replace_file(path, secrets.token_bytes(TAG_BYTES), mode=0o600)
    except OSError:
        return None
    data = _read_private(path, TAG_BYTES)
    return data if data is not None and len(data) == TAG_BYTES else None


def _read_private(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of this user's that only they can write."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_mode & 0o022 or found.st_size > limit \
                or (hasattr(os, "getuid") and found.st_uid != os.getuid()):
            return None
        return handle.read(limit + 1)


def _tag(secret: bytes, name: str, payload: bytes) -> bytes:
    return hmac.new(secret, name.encode("utf-8") + b"\0" + payload, hashlib.sha256).digest()


def read(kind: str, name: str) -> bytes | None:
    """The verified payload of entry ``name``, or None (absent, unverifiable, untrusted folder)."""
    place = folder(kind)
    secret = _secret(place.parent) if place is not None else None
    if place is None or secret is None:
        return None
    data = _read_private(place / name, MAX_ENTRY_BYTES)
    if data is None or not data.startswith(MAGIC) or len(data) < len(MAGIC) + TAG_BYTES:
        return None
    tag, payload = data[len(MAGIC):len(MAGIC) + TAG_BYTES], data[len(MAGIC) + TAG_BYTES:]
    return payload if hmac.compare_digest(tag, _tag(secret, name, payload)) else None


def write(kind: str, name: str, payload: bytes) -> None:
    """Store ``payload`` as entry ``name`` (signed, atomically, mode 0600); failures only cost the saving."""
    place = folder(kind)
    secret = _secret(place.parent) if place is not None else None
    if place is None or secret is None or len(payload) > MAX_ENTRY_BYTES:
        return
    try:
        replace_file(place / name, MAGIC + _tag(secret, name, payload) + payload, mode=0o600)
        _collect_stale(place)
    except OSError:
        pass


def _collect_stale(place: Path) -> None:
    """Temporaries of writers killed long ago (any entry's: a killed writer's entry may never be written
    again); a minute's grace keeps the temporaries of writers still at work."""
    now = time.time()
    with os.scandir(place) as entries:
        for entry in entries:
            if TEMP.match(entry.name) and entry.is_file(follow_symlinks=False) \
                    and now - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
