"""The names of an output folder's report store (outset.py describes the layout), and how to look at
one of its entries without following a link: what publishing (outset.py) and taking over an older
advisor's folder (outset_legacy.py) share."""

from __future__ import annotations

import os
import re
import stat

STORE = ".advisor-reports"
CURRENT = "current"
LOCK = "lock"
STORE_MARK = ".advisor-store"         # in the store: advisor made this folder
RUN_MARK = ".advisor-run"             # the first file of every run folder: advisor made it
ADOPTED = ".advisor-adopted"          # in a set made of an older advisor's files
SET_LIST = ".advisor-set.json"        # the files advisor wrote into a set
MARKS = (RUN_MARK, ADOPTED, SET_LIST)
LEGACY_REMEDY_LIST = "remedy/.advisor-files"
LEGACY_REPORTS = ("report.html", "report.md", "report.json", "report.txt")
RUN = re.compile(r"^run-[0-9a-f]{12}$")
STORE_TEMP = re.compile(r"^current\.[0-9a-f]{8}\.tmp$")
MAX_LIST_BYTES = 1 << 20


def entry_stat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None


def entry_is(name: str, dir_fd: int, kind: int) -> bool:
    """Whether ``name`` in ``dir_fd`` is of ``kind`` (stat.S_IFDIR, S_IFREG, S_IFLNK), links not followed."""
    found = entry_stat(name, dir_fd)
    return found is not None and stat.S_IFMT(found.st_mode) == kind
