"""Files advisor makes, made so that nothing else is ever touched: the one way to create, replace and
collect them (report sets, the batch index and digest, compare's CSV and journal, locks, cache entries).

* Nothing is opened through a symbolic link: every create uses ``O_NOFOLLOW`` and ``O_EXCL`` (a link
  planted at a name advisor is about to write makes the write fail, it is never followed), and folders
  are opened as descriptors (``O_DIRECTORY | O_NOFOLLOW``) that later calls work relative to
  (``dir_fd``), so a folder swapped for a link after it was checked is not followed either.
* A file is replaced atomically: written to a fresh temporary name beside it (``.<name>.<8 hex>.tmp``,
  :func:`temp_name`), fsync'ed, renamed over the old one. A writer killed before the rename leaves that
  temporary; :func:`collect_temps` removes the temporaries of a name before it is written again.
* Locks and journals (:func:`open_owned`) are regular files opened without following a link; anything
  else at their name is refused with one line naming it.

What the output folder's report store adds (markers saying which folders advisor made, so only those
are ever deleted) lives in advisor/report/outset.py.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import AdvisorError, UsageError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
TEMP = re.compile(r"^\.(.+)\.[0-9a-f]{8}\.tmp$")     # how advisor names a file or link before it is in place


def temp_name(name: str) -> str:
    """A fresh temporary name for ``name`` in the same folder (hidden; collected by :func:`collect_temps`)."""
    return f".{name}.{secrets.token_hex(4)}.tmp"


def _is_link(name: str | Path, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def link_refused(path: str | Path, what: str, error: type[AdvisorError] = UsageError) -> AdvisorError:
    return error(f"is a symbolic link: advisor writes its {what} only where it made it, never through a link "
                 "(the place it points at is left as it is); remove the link", path=path)


def open_folder(name: str | Path, dir_fd: int | None = None, *, shown: str | Path | None = None,
                what: str = "files", error: type[AdvisorError] = UsageError) -> int:
    """A descriptor of the folder ``name`` (relative to ``dir_fd``), its last part not followed when it
    is a link: a link or a non-folder there is ``error`` naming ``shown`` (default ``name``)."""
    try:
        return os.open(name, os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            if _is_link(name, dir_fd):
                raise link_refused(shown or name, what, error) from None
            raise error("is not a folder", path=shown or name) from None
        raise


def makedirs_at(dir_fd: int, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder ``parts`` below ``dir_fd``, each part made when missing and never
    followed when it is a link. The caller closes it (it is a new descriptor even for no parts)."""
    fd = os.dup(dir_fd)
    for part in parts:
        try:
            os.mkdir(part, 0o777, dir_fd=fd)
        except FileExistsError:
            pass
        try:
            inner = open_folder(part, fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


def create_at(dir_fd: int, name: str, data: bytes, mode: int = 0o666) -> None:
    """A new file ``name`` in ``dir_fd`` holding ``data``, fsync'ed; fails if anything (a file, a link)
    is there already."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _unlink_quietly(name, dir_fd)
        raise


def fsync_folder(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:             # some filesystems cannot sync a folder; the data are synced
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise


def replace_at(dir_fd: int, name: str, data: bytes, mode: int = 0o666) -> None:
    """``name`` in ``dir_fd`` replaced by ``data`` atomically (a reader sees the old file or the new
    one); the temporaries earlier writers of ``name`` left are collected first."""
    collect_temps(dir_fd, {name})
    temp = temp_name(name)
    create_at(dir_fd, temp, data, mode)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        _unlink_quietly(temp, dir_fd)
        raise


@contextlib.contextmanager
def writing(path: Path, mode: int = 0o666) -> Iterator[BinaryIO]:
    """A handle on a new temporary beside ``path`` that becomes ``path`` atomically when the block ends
    (fsync'ed, then renamed over it); removed when the block fails. The folder is made when missing;
    temporaries earlier writers of ``path`` left are collected first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_RDONLY | DIRECTORY | CLOEXEC)
    try:
        collect_temps(folder, {path.name})
        temp = temp_name(path.name)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, mode, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            _unlink_quietly(temp, folder)
            raise
        fsync_folder(folder)
    finally:
        os.close(folder)


def replace_file(path: Path, data: bytes, mode: int = 0o666) -> Path:
    """``path`` replaced by ``data`` atomically (see :func:`writing`)."""
    with writing(path, mode) as handle:
        handle.write(data)
    return path


def collect_temps(dir_fd: int, names: set[str] | None = None) -> None:
    """Remove the temporaries (files or links, never folders) that writers of ``names`` (any name when
    None) left in ``dir_fd`` when they were killed."""
    for entry in os.listdir(dir_fd):
        temp = TEMP.match(entry)
        if temp is None or (names is not None and temp.group(1) not in names):
            continue
        try:
            if not stat.S_ISDIR(os.lstat(entry, dir_fd=dir_fd).st_mode):
                os.unlink(entry, dir_fd=dir_fd)
        except FileNotFoundError:
            pass


def open_owned(path: Path, flags: int, what: str, error: type[AdvisorError] = UsageError,
               dir_fd: int | None = None, shown: Path | None = None) -> int:
    """Open (or create, with ``os.O_CREAT`` in ``flags``) a regular file advisor keeps for itself: a
    lock, a journal. A link or a special file at ``path`` is ``error`` naming it; it never blocks."""
    shown = shown or path
    try:
        fd = os.open(path, flags | NOFOLLOW | CLOEXEC | NONBLOCK, 0o666, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENXIO and _is_link(path, dir_fd)):
            raise link_refused(shown, what, error) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"is not a regular file: advisor keeps its {what} in a file of its own; move it away",
                    path=shown)
    os.set_blocking(fd, True)
    return fd


def _unlink_quietly(name: str, dir_fd: int | None) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
