"""One run's reports appear together or not at all: the report set lives in one folder that a symlink swap
makes current.

Layout of an output folder::

    OUTDIR/report.html -> .advisor-reports/current/report.html     (one link per top-level name, never changes)
    OUTDIR/remedy      -> .advisor-reports/current/remedy
    OUTDIR/.advisor-reports/current -> run-<token>                  (the only thing a run changes to publish)
    OUTDIR/.advisor-reports/run-<token>/report.html ... remedy/... .advisor-set.json (the files it wrote)

Why a symlink swap and not "rename each file into place": POSIX can replace one name atomically, never
several. Renaming report.html, report.md, report.json, report.txt and the remedy one after the other
leaves a mixed set when the process dies between two renames (the issue saw it in 5 of 6 kills), and a
journal that a later run rolls forward still shows the mixed set until that later run comes. With one
level of indirection a run writes its whole set into a fresh ``run-<token>`` folder, creates the
top-level links its set needs (a new link dangles until the swap: a reader sees no file, as before),
and publishes everything with one ``os.replace`` of the ``current`` link. Killed at any point, the
folder shows the earlier complete set or the new complete set; what a killed run left (a half-written
``run-*`` folder, a ``*.tmp`` link, the links of formats the new set no longer has) is removed by the
next run.

Rules kept: a run holds ``.advisor-reports/lock`` (``flock``) while it publishes, so two runs into one
folder do not remove each other's folders; files a user saved into ``remedy/`` (or anywhere in the
current set) that advisor did not write are hard-linked into the new set, so they survive; nothing
outside ``.advisor-reports/`` is removed except advisor's own links and temporaries.

Only what advisor made is touched. The store is opened as a folder descriptor without following a
link, and every later step works relative to it (``dir_fd``): a store or lock that is a symbolic link
is refused with one line (it used to delete every folder in the link's target), as is a real folder
advisor did not make (it carries ``.advisor-store``; a store of an earlier advisor, holding nothing but
``current``, ``lock`` and ``run-*`` sets, is taken over). A run folder's first file is its marker
``.advisor-run``; only marked ``run-*`` folders (or empty ones: a run killed before its marker) are
ever deleted, so a folder someone put into the store stays.

An output folder written by an older advisor (real ``report.*`` files and a real ``remedy/`` folder
listing its files in ``remedy/.advisor-files``) is adopted once: its files are hard-linked into a set of
their own (marked ``.advisor-adopted``), that set becomes current, and each file is replaced by its
link (content unchanged at every moment; only the old ``remedy/`` folder is briefly absent while it
becomes a link). Every step after the swap is redone by the next run when a kill interrupts it, so a
conversion killed anywhere is finished, never refused, by the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..errors import UsageError, write_failure
from ..ownfiles import (
    CLOEXEC,
    NOFOLLOW,
    TEMP,
    create_at,
    fsync_folder,
    makedirs_at,
    open_folder,
    open_owned,
    temp_name,
)
from .outset_layout import (
    ADOPTED,
    CURRENT,
    LEGACY_REPORTS,
    LOCK,
    MARKS,
    MAX_LIST_BYTES,
    RUN,
    RUN_MARK,
    SET_LIST,
    STORE,
    STORE_MARK,
    STORE_TEMP,
    entry_is,
    entry_stat,
)
from .outset_legacy import adopt

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock; two runs into one folder at once are up to the user
    fcntl = None  # type: ignore[assignment]



def publish(outdir: Path, files: list[tuple[str, str | bytes]]) -> list[Path]:
    """Write ``(relative path, text or bytes)`` as OUTDIR's new report set and make it current; returns
    the paths as a reader opens them (``OUTDIR/<relative path>``), in the order given."""
    names = [_relative(name) for name, _ in files]
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output folder: {exc.strerror or exc}", path=outdir) from None
    try:
        with _Store.open(outdir) as store, store.locked():
            store.collect()
            store.adopt_legacy()
            run = store.write_set(names, [text if isinstance(text, bytes) else text.encode("utf-8")
                                          for _, text in files])
            try:
                store.link_tops(store.tops(run))
                store.swap(run)
            finally:
                store.collect()                  # on failure: the new folder and its new links
    except OSError as exc:
        raise write_failure("the reports", exc, outdir) from None
    return [outdir.joinpath(*n.parts) for n in names]


def collect(outdir: Path) -> None:
    """Remove what killed runs left in OUTDIR's store (a batch job that is not published again, being
    unchanged, still has its leftovers collected); nothing when OUTDIR has no store of advisor's."""
    try:
        with _Store.open(outdir, create=False) as store, store.locked():
            store.collect()
    except (OSError, UsageError):
        pass


def _relative(name: str) -> PurePosixPath:
    relative = PurePosixPath(name)
    if relative.is_absolute() or not relative.parts or ".." in relative.parts or relative.parts[0] == STORE:
        raise ValueError(f"not a path inside the output folder: {name!r}")
    return relative


def _readlink(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


class _Store:
    """OUTDIR (``out``) and its store (``fd``) as folder descriptors; every step works relative to them."""

    def __init__(self, outdir: Path, out: int, fd: int) -> None:
        self.outdir, self.out, self.fd = outdir, out, fd
        self.path = outdir / STORE

    @classmethod
    @contextlib.contextmanager
    def open(cls, outdir: Path, create: bool = True) -> Iterator[_Store]:
        out = os.open(outdir, os.O_RDONLY | os.O_DIRECTORY | CLOEXEC)      # OUTDIR itself is the user's choice
        try:
            made = False
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(STORE, 0o777, dir_fd=out)
                    made = True
            fd = open_folder(STORE, out, shown=outdir / STORE, what="report sets")
            try:
                store = cls(outdir, out, fd)
                if made:
                    store._mark()
                else:
                    store._check_ours()
                yield store
            finally:
                os.close(fd)
        finally:
            os.close(out)

    def _check_ours(self) -> None:
        """A store advisor made (its marker), or an earlier advisor's (only its own names): else refused."""
        if entry_is(STORE_MARK, self.fd, stat.S_IFREG):
            return
        names = os.listdir(self.fd)
        foreign = [n for n in names if not self._earlier_advisors(n)]
        if foreign:
            raise UsageError(f"is a folder advisor did not make (it holds '{sorted(foreign)[0][:80]}'): advisor "
                             "keeps its report sets in a folder of its own; move this one away or choose another -o",
                             path=self.path)
        self._mark()

    def _mark(self) -> None:
        """The store's marker (a run started at the same moment may have written it first: same content)."""
        with contextlib.suppress(FileExistsError):
            create_at(self.fd, STORE_MARK, b"advisor report store\n")

    def _earlier_advisors(self, name: str) -> bool:
        if name == CURRENT:
            return entry_is(name, self.fd, stat.S_IFLNK)
        if name == LOCK:
            return entry_is(name, self.fd, stat.S_IFREG)
        if RUN.match(name):
            return entry_is(name, self.fd, stat.S_IFDIR)
        return bool(STORE_TEMP.match(name)) or name.startswith("legacy-remedy.")

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fd = open_owned(Path(LOCK), os.O_RDWR | os.O_CREAT, "report store lock", dir_fd=self.fd,
                        shown=self.path / LOCK)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- what is there -------------------------------------------------------------------------

    def current(self) -> str | None:
        target = _readlink(CURRENT, self.fd)
        return target if target is not None and RUN.match(target) else None

    def _marked(self, name: str) -> bool:
        """A run folder advisor made: it holds one of advisor's marks (an earlier advisor's sets hold
        only their list)."""
        try:
            fd = open_folder(name, self.fd)
        except (OSError, UsageError):
            return False
        try:
            return any(entry_is(mark, fd, stat.S_IFREG) for mark in MARKS)
        finally:
            os.close(fd)

    def remove_run(self, name: str) -> None:
        """Delete a run folder advisor made, its marks last: killed half-way, it is still marked, and
        the next run finishes the job."""
        fd = open_folder(name, self.fd)
        try:
            for entry in os.listdir(fd):
                if entry not in MARKS:
                    if entry_is(entry, fd, stat.S_IFDIR):
                        shutil.rmtree(entry, dir_fd=fd)
                    else:
                        os.unlink(entry, dir_fd=fd)
            for mark in (ADOPTED, SET_LIST, RUN_MARK):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(mark, dir_fd=fd)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=self.fd)

    def _listed(self, run: str) -> set[str]:
        """The files advisor wrote into ``run`` (from its list)."""
        try:
            fd = os.open(f"{run}/{SET_LIST}", os.O_RDONLY | NOFOLLOW | CLOEXEC, dir_fd=self.fd)
            with os.fdopen(fd, "rb") as handle:
                listed = json.loads(handle.read(MAX_LIST_BYTES))
        except (OSError, ValueError, RecursionError):
            return set()
        return {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()

    def tops(self, run: str) -> set[str]:
        fd = open_folder(run, self.fd)
        try:
            return {n for n in os.listdir(fd) if n not in MARKS}
        finally:
            os.close(fd)

    # -- collecting ------------------------------------------------------------------------------

    def collect(self) -> None:
        """Remove what earlier (possibly killed) runs left: marked run folders that are not current (and
        empty ones), ``*.tmp`` names in the store, and in OUTDIR advisor's temporaries and its top-level
        links that point at a file the current set does not have."""
        current = self.current()
        for entry in os.listdir(self.fd):
            if entry == current or not (RUN.match(entry) or STORE_TEMP.match(entry)):
                continue
            if entry_is(entry, self.fd, stat.S_IFDIR):
                if self._marked(entry):
                    self.remove_run(entry)
                else:
                    with contextlib.suppress(OSError):
                        os.rmdir(entry, dir_fd=self.fd)      # a run killed before its marker: empty
            elif STORE_TEMP.match(entry):
                os.unlink(entry, dir_fd=self.fd)
        for entry in os.listdir(self.out):
            temp = TEMP.match(entry)
            ours = f"{STORE}/{CURRENT}/{temp.group(1) if temp else entry}"
            if temp and (_readlink(entry, self.out) == ours
                         or temp.group(1) in LEGACY_REPORTS and entry_is(entry, self.out, stat.S_IFREG)):
                os.unlink(entry, dir_fd=self.out)         # a killed run's staged link (or older file)
            elif not temp and _readlink(entry, self.out) == ours and not self._exists(entry):
                os.unlink(entry, dir_fd=self.out)         # dangling: the current set has no such file

    def _exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.out)
        except OSError:
            return False
        return True

    # -- writing -------------------------------------------------------------------------------

    def new_run(self) -> tuple[str, int]:
        """A new run folder, its marker written first; (name, descriptor)."""
        name = f"run-{secrets.token_hex(6)}"
        os.mkdir(name, 0o777, dir_fd=self.fd)
        fd = open_folder(name, self.fd)
        try:
            create_at(fd, RUN_MARK, b"")
        except BaseException:
            os.close(fd)
            raise
        return name, fd

    def write_set(self, names: list[PurePosixPath], texts: list[bytes]) -> str:
        """A new run folder holding every file (fsync'ed), the user's files from the current set (hard
        links), and the list of what advisor wrote; a failure removes it again."""
        run, fd = self.new_run()
        try:
            for name, text in zip(names, texts, strict=True):
                folder = makedirs_at(fd, name.parts[:-1])
                try:
                    create_at(folder, name.parts[-1], text)
                finally:
                    os.close(folder)
            current = self.current()
            if current is not None:
                self._keep_user_files(current, fd, {n.as_posix() for n in names})
            create_at(fd, SET_LIST, (json.dumps(sorted(n.as_posix() for n in names), indent=1) + "\n").encode())
            fsync_folder(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                self.remove_run(run)
            raise
        os.close(fd)
        return run

    def _keep_user_files(self, old: str, run_fd: int, ours: set[str]) -> None:
        """Hard-link into the new set every file of the old one that advisor did not write."""
        skip = self._listed(old) | ours
        for root, _, files, root_fd in os.fwalk(old, dir_fd=self.fd):
            parts = PurePosixPath(root).parts[1:]
            for name in sorted(files):
                relative = "/".join((*parts, name))
                if relative in skip or (not parts and name in MARKS) or TEMP.match(name) \
                        or not entry_is(name, root_fd, stat.S_IFREG):
                    continue
                folder = makedirs_at(run_fd, parts)
                try:
                    _link_or_copy(name, root_fd, folder)
                finally:
                    os.close(folder)

    def link_tops(self, tops: set[str]) -> None:
        """``OUTDIR/<top> -> .advisor-reports/current/<top>`` for every top-level name of the new set."""
        for top in sorted(tops):
            target = f"{STORE}/{CURRENT}/{top}"
            found = entry_stat(top, self.out)
            if found is None or stat.S_ISLNK(found.st_mode):
                if _readlink(top, self.out) != target:
                    self.replace_with_link(top, target)
            elif stat.S_ISDIR(found.st_mode):
                raise UsageError(f"'{top}' is a folder advisor did not write: move it away", path=self.outdir)
            else:
                raise UsageError(f"'{top}' is a file advisor did not write: move it away", path=self.outdir)

    def replace_with_link(self, name: str, target: str) -> None:
        temp = temp_name(name)
        os.symlink(target, temp, dir_fd=self.out)
        try:
            os.replace(temp, name, src_dir_fd=self.out, dst_dir_fd=self.out)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=self.out)
            raise

    def swap(self, run: str) -> None:
        """The commit point: ``current`` names the new run folder."""
        temp = f"{CURRENT}.{secrets.token_hex(4)}.tmp"
        os.symlink(run, temp, dir_fd=self.fd)
        os.replace(temp, CURRENT, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        fsync_folder(self.fd)

    def adopt_legacy(self) -> None:
        adopt(self)


def _link_or_copy(name: str, src_fd: int, dst_fd: int) -> None:
    try:
        os.link(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
    except OSError:
        source = os.open(name, os.O_RDONLY | NOFOLLOW | CLOEXEC, dir_fd=src_fd)
        with os.fdopen(source, "rb") as handle:
            create_at(dst_fd, name, handle.read())
