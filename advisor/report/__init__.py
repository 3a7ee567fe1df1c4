"""The report stage: Diagnosis -> view model (once) -> html, md, json, txt.

``write_reports`` renders every requested format before it touches the disk, then stages each file
as a temporary file in the output folder and moves them into place with ``os.replace``: a failure
while rendering or staging leaves the folder as it was, and a reader never sees half a report.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

from ..diagnosis import Diagnosis
from ..errors import UsageError
from .model import SCHEMA, ReportView
from .reporters import REPORTERS, Reporter, get_reporter, register
from .view import build_view, check_language

DEFAULT_FORMATS: tuple[str, ...] = ("html", "md", "json", "txt")

__all__ = ["DEFAULT_FORMATS", "REPORTERS", "SCHEMA", "ReportView", "Reporter", "build_view",
           "get_reporter", "register", "render", "write_files", "write_reports"]


def render(diagnosis: Diagnosis, fmt: str, lang: str = "en") -> str:
    """One report as text."""
    reporter = get_reporter(fmt)
    return reporter.render(build_view(diagnosis, lang))


def write_reports(diagnosis: Diagnosis, outdir: str | Path,
                  formats: Iterable[str] | str = DEFAULT_FORMATS, lang: str = "en") -> list[Path]:
    """Write ``OUTDIR/report.<ext>`` for each format; returns the paths in the order asked."""
    check_language(lang)
    if isinstance(formats, str):                 # "html,md" as given to --format
        formats = [f.strip() for f in formats.split(",") if f.strip()]
    reporters = [get_reporter(fmt) for fmt in dict.fromkeys(formats)]
    if not reporters:
        raise UsageError(f"no report format given: choose from {', '.join(REPORTERS)}")
    view = build_view(diagnosis, lang)
    rendered = [(r.filename, r.render(view)) for r in reporters]
    return _write_all(Path(outdir), rendered)


def write_files(outdir: str | Path, files: Iterable[tuple[str, str]]) -> list[Path]:
    """Write ``(filename, text)`` pairs into ``outdir`` the way reports are written: all staged
    first, then moved into place, so a reader never sees a half-written file. Other writers of
    whole pages (the batch index and digest) use this instead of their own copy."""
    return _write_all(Path(outdir), list(files))


def _write_all(outdir: Path, files: list[tuple[str, str]]) -> list[Path]:
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output folder: {exc.strerror or exc}", path=outdir) from None
    staged: list[tuple[Path, Path]] = []
    try:
        for filename, text in files:
            staged.append((_stage(outdir, filename, text), outdir / filename))
        for temp, final in staged:
            os.replace(temp, final)
    except OSError as exc:
        raise UsageError(f"cannot write the reports: {exc.strerror or exc}", path=outdir) from None
    finally:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
    return [final for _, final in staged]


def _stage(outdir: Path, filename: str, text: str) -> Path:
    """Write ``text`` to a new hidden file beside ``filename`` (created with the umask's permissions)."""
    temp = outdir / f".{filename}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp
