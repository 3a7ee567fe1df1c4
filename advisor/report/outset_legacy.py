"""Taking over an output folder an older advisor wrote: real ``report.*`` files and a real ``remedy/``
folder listing its files in ``remedy/.advisor-files`` (see outset.py for the layout they move into).

The files are hard-linked into a set of their own (marked ``.advisor-adopted``) and that set is made
current with the same swap as any other; then each real file is replaced by its link (same content at
every moment) and the real ``remedy/`` folder is moved into a marked run folder (collected like any
other) and replaced by its link. Each of these steps is redone by :func:`adopt` when a kill left it
undone: a real report file that is the same file as the adopted set's, or a real legacy ``remedy/``
beside an adopted set, is finished by the next run instead of making every later run refuse the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import PurePosixPath
from typing import Protocol

from ..ownfiles import CLOEXEC, NOFOLLOW, TEMP, create_at, makedirs_at, open_folder
from .outset_layout import (
    ADOPTED,
    CURRENT,
    LEGACY_REMEDY_LIST,
    LEGACY_REPORTS,
    MAX_LIST_BYTES,
    SET_LIST,
    STORE,
    entry_is,
)


class Store(Protocol):
    """What taking over needs of the store outset.py opens: OUTDIR and the store as folder descriptors."""

    out: int
    fd: int

    def current(self) -> str | None: ...
    def swap(self, run: str) -> None: ...
    def new_run(self) -> tuple[str, int]: ...
    def replace_with_link(self, name: str, target: str) -> None: ...
    def remove_run(self, run: str) -> None: ...


def adopt(store: Store) -> None:
    reports = [n for n in LEGACY_REPORTS if entry_is(n, store.out, stat.S_IFREG)]
    remedy = entry_is("remedy", store.out, stat.S_IFDIR) and _is_file(LEGACY_REMEDY_LIST, store.out)
    if not reports and not remedy:
        return
    current = store.current()
    if current is None:
        current = _adopted_set(store, reports, remedy)
        store.swap(current)
    set_fd = open_folder(current, store.fd)
    try:
        if not entry_is(ADOPTED, set_fd, stat.S_IFREG):
            return                        # a newer set is current: real files here are someone else's
        for name in reports:
            if _same_file(name, store.out, set_fd):
                store.replace_with_link(name, f"{STORE}/{CURRENT}/{name}")
        if remedy and entry_is("remedy", set_fd, stat.S_IFDIR):
            aside, aside_fd = store.new_run()
            os.close(aside_fd)
            os.rename("remedy", f"{aside}/remedy", src_dir_fd=store.out, dst_dir_fd=store.fd)
            store.replace_with_link("remedy", f"{STORE}/{CURRENT}/remedy")
            store.remove_run(aside)
    finally:
        os.close(set_fd)


def _adopted_set(store: Store, reports: list[str], remedy: bool) -> str:
    """A run folder of hard links to the older advisor's files, with the list of what it wrote."""
    run, fd = store.new_run()
    try:
        listed = list(reports)
        for name in reports:
            os.link(name, name, src_dir_fd=store.out, dst_dir_fd=fd, follow_symlinks=False)
        if remedy:
            _link_tree(store.out, fd)
            listed += _legacy_remedy_list(store.out)
        create_at(fd, SET_LIST, (json.dumps(sorted(listed), indent=1) + "\n").encode())
        create_at(fd, ADOPTED, b"")
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            store.remove_run(run)
        raise
    os.close(fd)
    return run


def _link_tree(out_fd: int, run_fd: int) -> None:
    for root, _, files, root_fd in os.fwalk("remedy", dir_fd=out_fd):
        parts = PurePosixPath(root).parts
        for name in files:
            if TEMP.match(name) or not _is_file(name, root_fd):
                continue
            folder = makedirs_at(run_fd, parts)
            try:
                os.link(name, name, src_dir_fd=root_fd, dst_dir_fd=folder, follow_symlinks=False)
            finally:
                os.close(folder)


def _is_file(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISREG(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _same_file(name: str, a_fd: int, b_fd: int) -> bool:
    try:
        a, b = os.lstat(name, dir_fd=a_fd), os.lstat(name, dir_fd=b_fd)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _legacy_remedy_list(out_fd: int) -> list[str]:
    try:
        fd = os.open(LEGACY_REMEDY_LIST, os.O_RDONLY | NOFOLLOW | CLOEXEC, dir_fd=out_fd)
        with os.fdopen(fd, "rb") as handle:
            names = json.loads(handle.read(MAX_LIST_BYTES))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(names, list):
        return []
    return [n for n in names if isinstance(n, str) and n.startswith("remedy/")] + [LEGACY_REMEDY_LIST]
