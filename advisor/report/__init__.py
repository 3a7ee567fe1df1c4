"""The report stage: Diagnosis -> view model (once) -> html, md, json, txt, and the remedy's files.

``write_reports`` renders every requested format (and, when the diagnosis has a remedy,
``remedy/README.md`` and ``remedy/step<N>/<backend>/<file>``; with ``--verify``, the repro packs
``replay/<index>_<op>/...``) before it touches the disk, then
publishes them as one set: written into a fresh folder and made current by one symlink swap
(:mod:`.outset` says why), so a failure or a kill -9 at any point leaves the earlier complete set or
the new complete set, never a mix, and no earlier report survives beside a newer one. Single pages
written by others (the batch index and digest, ``write_files``) are each staged beside their final
place and moved in with ``os.replace``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..defaults import DEFAULT_FORMATS
from ..diagnosis import Diagnosis
from ..errors import UsageError, write_failure
from ..ownfiles import CLOEXEC, DIRECTORY, collect_temps, create_at, temp_name
from .model import SCHEMA, ReportView
from .outset import publish
from .reporters import REPORTERS, Reporter, environment, get_reporter, register, templates_dir
from .view import build_view, check_language

__all__ = ["DEFAULT_FORMATS", "REPORTERS", "SCHEMA", "ReportView", "Reporter", "build_view",
           "get_reporter", "register", "remedy_files", "render", "repro_files", "write_files", "write_outputs",
           "write_reports"]


def render(diagnosis: Diagnosis, fmt: str, lang: str = "en", base: Path | None = None) -> str:
    """One report as text; ``base``: the folder it will be written to (paths are shown relative to it)."""
    reporter = get_reporter(fmt)
    return reporter.render(build_view(diagnosis, lang, base))


def write_reports(diagnosis: Diagnosis, outdir: str | Path,
                  formats: Iterable[str] | str = DEFAULT_FORMATS, lang: str = "en") -> list[Path]:
    """Write ``OUTDIR/report.<ext>`` for each format, then the remedy's files; returns the paths in
    that order (the reports in the order asked)."""
    check_language(lang)
    if isinstance(formats, str):                 # "html,md" as given to --format
        formats = [f.strip() for f in formats.split(",") if f.strip()]
    reporters = [get_reporter(fmt) for fmt in dict.fromkeys(formats)]
    if not reporters:
        raise UsageError(f"no report format given: choose from {', '.join(REPORTERS)}")
    view = build_view(diagnosis, lang, Path(outdir))
    # Each report as bytes as soon as it is rendered: its text is then freed before the next is made.
    rendered: list[tuple[str, str | bytes]] = [(r.filename, r.render(view).encode("utf-8")) for r in reporters]
    return write_outputs(outdir, rendered + remedy_files(view) + repro_files(diagnosis))


def repro_files(diagnosis: Diagnosis) -> list[tuple[str, bytes]]:
    """``(path relative to OUTDIR, bytes)`` of the repro packs ``--verify`` made (``replay/<op>/...``)."""
    verification = diagnosis.verification
    return [(f.path, f.content) for f in verification.files] if verification is not None else []


def write_outputs(outdir: str | Path, files: Iterable[tuple[str, str | bytes]]) -> list[Path]:
    """One run's reports and remedy files as OUTDIR's report set, swapped in as a whole (see
    :mod:`advisor.report.outset`): a kill at any moment leaves the earlier set or this one, and a file
    of the earlier set this run does not write (``report.html`` when only txt is asked now, an older
    remedy's step 3) is gone with it. Files advisor did not write are kept."""
    return publish(Path(outdir), list(files))


def remedy_files(view: ReportView) -> list[tuple[str, str]]:
    """``(path relative to OUTDIR, text)`` of the remedy: its README, then every step's files."""
    if view.remedy is None:
        return []
    readme = environment(templates_dir()).get_template("remedy.md.j2").render(view=view, t=view.labels)
    return [(view.remedy.readme, readme)] + [(f.path, f.text) for step in view.remedy.steps for f in step.files]


def write_files(outdir: str | Path, files: Iterable[tuple[str, str]]) -> list[Path]:
    """Write ``(filename, text)`` pairs into ``outdir`` the way reports are written: all staged
    first, then moved into place, so a reader never sees a half-written file. A filename may name
    subfolders (``remedy/step1/ascend/keep_dtype.cfg``). Other writers of whole pages (the batch
    index and digest) use this instead of their own copy."""
    return _write_all(Path(outdir), list(files))


def _write_all(outdir: Path, files: list[tuple[str, str]]) -> list[Path]:
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output folder: {exc.strerror or exc}", path=outdir) from None
    staged: list[tuple[int, str, Path]] = []          # (folder descriptor, temporary name, final path)
    created: list[Path] = []
    try:
        for filename, text in files:
            final = _inside(outdir, filename)
            created += _make_folders(outdir, final.parent)
            folder = os.open(final.parent, os.O_RDONLY | DIRECTORY | CLOEXEC)
            staged.append((folder, temp_name(final.name), final))
            collect_temps(folder, {final.name})
            create_at(folder, staged[-1][1], text.encode("utf-8"))
        for folder, temp, final in staged:
            os.replace(temp, final.name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as exc:
        _discard(staged, created)
        raise write_failure("the reports", exc, outdir) from None
    except BaseException:
        _discard(staged, created)
        raise
    finally:
        for folder, _, _ in staged:
            os.close(folder)
    return [final for _, _, final in staged]


def _discard(staged: list[tuple[int, str, Path]], created: list[Path]) -> None:
    """Remove what a failed write staged, then the folders made for it (they are empty again)."""
    for folder, temp, _ in staged:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _inside(outdir: Path, filename: str) -> Path:
    """``outdir / filename``, refusing anything that would land outside ``outdir``."""
    relative = PurePosixPath(filename)
    if relative.is_absolute() or not relative.parts or ".." in relative.parts:
        raise ValueError(f"not a path inside the output folder: {filename!r}")
    return outdir.joinpath(*relative.parts)


def _make_folders(outdir: Path, folder: Path) -> list[Path]:
    """Create ``folder`` (inside ``outdir``) and its missing parents; returns those created, outermost first."""
    missing = []
    while folder != outdir and not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
    return missing[::-1]
