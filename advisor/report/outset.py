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
outside ``.advisor-reports/`` is removed except advisor's own links. An output folder written by an
older advisor (real ``report.*`` files and a real ``remedy/`` folder listing its files in
``remedy/.advisor-files``) is adopted once: its files are hard-linked into a set of their own, that set
becomes current, and each file is replaced by its link (content unchanged at every moment; only the
old ``remedy/`` folder is briefly absent while it becomes a link).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..errors import UsageError, write_failure

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock; two runs into one folder at once are up to the user
    fcntl = None  # type: ignore[assignment]

STORE = ".advisor-reports"
CURRENT = "current"
SET_LIST = ".advisor-set.json"
LEGACY_REMEDY_LIST = "remedy/.advisor-files"
_LEGACY_REPORTS = ("report.html", "report.md", "report.json", "report.txt")
_TEMP = re.compile(r"^\.(.+)\.[0-9a-f]{8}\.tmp$")     # how advisor names a file or link before it is in place


def publish(outdir: Path, files: list[tuple[str, str | bytes]]) -> list[Path]:
    """Write ``(relative path, text or bytes)`` as OUTDIR's new report set and make it current; returns the
    paths as a reader opens them (``OUTDIR/<relative path>``), in the order given."""
    names = [_relative(name) for name, _ in files]
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output folder: {exc.strerror or exc}", path=outdir) from None
    store = outdir / STORE
    try:
        store.mkdir(exist_ok=True)
        with _locked(store):
            _collect_leftovers(outdir, store)
            _adopt_legacy(outdir, store)
            run = _write_set(store, names, [text for _, text in files], _current_set(store))
            try:
                _link_tops(outdir, {p.name for p in run.iterdir() if p.name != SET_LIST})
                _swap(store, run.name)
            finally:
                _collect_leftovers(outdir, store)         # on failure: the new folder and its new links
    except OSError as exc:
        raise write_failure("the reports", exc, outdir) from None
    return [outdir.joinpath(*n.parts) for n in names]


def _relative(name: str) -> PurePosixPath:
    relative = PurePosixPath(name)
    if relative.is_absolute() or not relative.parts or ".." in relative.parts or relative.parts[0] == STORE:
        raise ValueError(f"not a path inside the output folder: {name!r}")
    return relative


@contextlib.contextmanager
def _locked(store: Path) -> Iterator[None]:
    fd = os.open(store / "lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _current_target(store: Path) -> str | None:
    try:
        target = os.readlink(store / CURRENT)
    except OSError:
        return None
    return target if "/" not in target and target.startswith("run-") else None


def _current_set(store: Path) -> tuple[Path, set[str]] | None:
    """The current run folder and the files advisor wrote into it (from its list)."""
    target = _current_target(store)
    if target is None or not (store / target).is_dir():
        return None
    try:
        listed = json.loads((store / target / SET_LIST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        listed = []
    return store / target, {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()


def _write_set(store: Path, names: list[PurePosixPath], texts: list[str | bytes],
               previous: tuple[Path, set[str]] | None) -> Path:
    """A new ``run-<token>`` folder holding every file (fsync'ed), the user's files from the current
    set (hard links), and the list of what advisor wrote; a failure removes it again."""
    run = store / f"run-{secrets.token_hex(6)}"
    run.mkdir()
    try:
        for name, text in zip(names, texts, strict=True):
            _write_file(run.joinpath(*name.parts), text)
        if previous is not None:
            _keep_user_files(previous[0], previous[1], run, {n.as_posix() for n in names})
        _write_file(run / SET_LIST, json.dumps(sorted(n.as_posix() for n in names), indent=1) + "\n")
        _fsync_dir(run)
    except BaseException:
        shutil.rmtree(run, ignore_errors=True)
        raise
    return run


def _write_file(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(text if isinstance(text, bytes) else text.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


def _keep_user_files(old: Path, listed: set[str], run: Path, ours: set[str]) -> None:
    """Hard-link into the new set every file of the old one that advisor did not write."""
    for path in sorted(old.rglob("*")):
        relative = path.relative_to(old).as_posix()
        if path.is_symlink() or not path.is_file() or relative in listed or relative == SET_LIST:
            continue
        if relative in ours or _TEMP.match(path.name):
            continue                                     # advisor writes that name now / a killed run's file
        target = run / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)


def _link_tops(outdir: Path, tops: set[str]) -> None:
    """``OUTDIR/<top> -> .advisor-reports/current/<top>`` for every top-level name of the new set."""
    for top in sorted(tops):
        link, target = outdir / top, f"{STORE}/{CURRENT}/{top}"
        if link.is_symlink() and os.readlink(link) == target:
            continue
        if link.exists() and not link.is_symlink() and link.is_dir():
            raise UsageError(f"'{top}' is a folder advisor did not write: move it away", path=outdir)
        _replace_with_link(link, target)


def _replace_with_link(link: Path, target: str) -> None:
    temp = link.parent / f".{link.name}.{secrets.token_hex(4)}.tmp"
    os.symlink(target, temp)
    try:
        os.replace(temp, link)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _swap(store: Path, run_name: str) -> None:
    """The commit point: ``current`` names the new run folder."""
    temp = store / f"{CURRENT}.{secrets.token_hex(4)}.tmp"
    os.symlink(run_name, temp)
    os.replace(temp, store / CURRENT)
    _fsync_dir(store)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _collect_leftovers(outdir: Path, store: Path) -> None:
    """Remove what earlier (possibly killed) runs left: run folders that are not current, ``*.tmp``
    names in the store and the output folder's hidden temporary links, and top-level links of ours
    that point at a file the current set does not have."""
    current = _current_target(store)
    for entry in store.iterdir():
        if entry.name in (CURRENT, "lock") or entry.name == current:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.endswith(".tmp"):
            entry.unlink(missing_ok=True)
    for entry in outdir.iterdir():
        temp = _TEMP.match(entry.name)
        if temp and (temp.group(1) in _LEGACY_REPORTS or temp.group(1) == "remedy") and not entry.is_dir():
            entry.unlink(missing_ok=True)                # a killed run's staged file or link
        elif entry.is_symlink() and os.readlink(entry) == f"{STORE}/{CURRENT}/{entry.name}" and not entry.exists():
            entry.unlink(missing_ok=True)                # dangling: the current set has no such file


def _adopt_legacy(outdir: Path, store: Path) -> None:
    """An output folder from an older advisor (real report files, a real ``remedy/`` folder) becomes a
    set of its own before the first swap, so the swap replaces it as a whole like any other set."""
    if _current_target(store) is not None:
        return
    reports = [outdir / n for n in _LEGACY_REPORTS if (outdir / n).is_file() and not (outdir / n).is_symlink()]
    remedy = outdir / "remedy"
    legacy_remedy = remedy.is_dir() and not remedy.is_symlink() and (outdir / LEGACY_REMEDY_LIST).is_file()
    if not reports and not legacy_remedy:
        return
    run = store / f"run-{secrets.token_hex(6)}"
    run.mkdir()
    listed = [p.name for p in reports]
    for path in reports:
        os.link(path, run / path.name)
    if legacy_remedy:
        for path in sorted(remedy.rglob("*")):
            if path.is_file() and not path.is_symlink() and not _TEMP.match(path.name):
                target = run / "remedy" / path.relative_to(remedy)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(path, target)
        listed += _legacy_remedy_list(outdir)
    _write_file(run / SET_LIST, json.dumps(sorted(listed), indent=1) + "\n")
    _swap(store, run.name)
    for path in reports:                                 # same content before and after each replace
        _replace_with_link(path, f"{STORE}/{CURRENT}/{path.name}")
    if legacy_remedy:
        aside = store / f"legacy-remedy.{secrets.token_hex(4)}"
        os.rename(remedy, aside)
        _replace_with_link(remedy, f"{STORE}/{CURRENT}/remedy")
        shutil.rmtree(aside, ignore_errors=True)


def _legacy_remedy_list(outdir: Path) -> list[str]:
    try:
        names = json.loads((outdir / LEGACY_REMEDY_LIST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [n for n in names if isinstance(n, str) and n.startswith("remedy/")] + [LEGACY_REMEDY_LIST] \
        if isinstance(names, list) else []
