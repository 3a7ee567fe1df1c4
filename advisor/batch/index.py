"""The batch's index page (static HTML) and digest (Markdown), from a RunOverview.

View model here, words and layout in ``reports/index.html.j2`` and ``reports/digest.md.j2``. The
page is one offline file: the report stylesheet and the trend sparklines are inlined, nothing is
fetched. Regressions lead both, then failures, then the other changes, then every job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from markupsafe import Markup

from ..advice import AdviceBook, load_page
from ..errors import AdvisorError, UsageError
from ..ownfiles import open_owned
from ..report import write_files
from ..report.labels import labels_for, plural
from ..report.reporters import environment, templates_dir
from ..report.text import fmt_value
from .changes import FindingChanges
from .overview import JobState, RunOverview
from .records import FindingRecord, Verdict
from .sparkline import TrendPoint, trend_svg
from .store import ResultRow

INDEX_FILE, DIGEST_FILE = "index.html", "digest.md"
REPORT_PREFERENCE = ("report.html", "report.md", "report.json", "report.txt")
DIGEST_LIST_LIMIT = 15
TRANSITION_LABELS = {"new": "first run", "regression": "regression", "recovered": "recovered",
                     "changed": "changed", "same": "—", "failed": "failed"}
STATUS_LABELS = {"ok": "analysed", "unchanged": "unchanged (skipped)", "failed": "failed"}


@dataclass(frozen=True)
class JobRow:
    name: str
    status: str                      # ok | unchanged | failed
    status_label: str
    tone: str                        # ok | error | warning | info | failed: colour of the verdict
    verdict: str                     # the report's verdict kind ("problem_node", "consistent"), or "failed"
    verdict_label: str               # the same as a reader says it ("Problem node", "Consistent", "failed")
    previous_verdict: str | None
    previous_label: str | None
    root: str | None                 # "Conv_3 (op 3)"
    cosine: str
    previous_cosine: str | None
    errors: int
    warnings: int
    notes: int
    transition: str
    transition_label: str
    new: tuple[str, ...]             # "Problem node at Conv_3 (error)": one per event, not its propagation
    fixed: tuple[str, ...]
    persists: int
    report: str | None               # link to the preferred report, relative to the index (or --link-base)
    reports: tuple[tuple[str, str], ...]   # (format, link) for every report written
    error: str | None
    trend: Markup
    new_propagated: int = 0          # new findings explained as the propagation of another (not listed)
    fixed_propagated: int = 0


@dataclass(frozen=True)
class IndexView:
    title: str
    run_id: int
    started_at: str
    finished_at: str | None
    version: str
    workers: int
    resumed: int
    totals: dict[str, int]
    regressions: tuple[JobRow, ...]
    failures: tuple[JobRow, ...]
    recovered: tuple[JobRow, ...]
    changed: tuple[JobRow, ...]
    jobs: tuple[JobRow, ...]
    packs: tuple[tuple[str, str, str], ...]     # (name, version, digest prefix), as used this run
    index_link: str
    digest_limit: int = DIGEST_LIST_LIMIT


def build_index_view(overview: RunOverview, output: Path, packs: Sequence[tuple[str, str, str]] = (),
                     link_base: str | None = None) -> IndexView:
    """``output``: where index.html goes (links are relative to it, or to ``link_base`` when given)."""
    rows = tuple(_row(job, output, link_base) for job in overview.jobs)
    pick = {row.name: row for row in rows}

    def of(jobs: list[JobState]) -> tuple[JobRow, ...]:
        return tuple(pick[job.name] for job in jobs)

    run = overview.run
    totals = {"jobs": len(rows), "analysed": overview.count("ok"), "unchanged": overview.count("unchanged"),
              "failed": overview.count("failed"), "regressions": len(overview.regressions),
              "recovered": len(overview.where("recovered")), "changed": len(overview.where("changed")),
              "with_verdict": sum(row.status != "failed" for row in rows)}
    return IndexView(title=run.title, run_id=run.id, started_at=run.started_at, finished_at=run.finished_at,
                     version=run.advisor_version, workers=run.workers, resumed=run.resumed, totals=totals,
                     regressions=of(overview.regressions), failures=of(overview.failures),
                     recovered=of(overview.where("recovered")), changed=of(overview.where("changed")),
                     jobs=rows, packs=tuple(packs), index_link=_link(output / INDEX_FILE, output, link_base))


def render_index(view: IndexView) -> str:
    css = (templates_dir() / "static" / "report.css").read_text(encoding="utf-8")
    return environment(templates_dir()).get_template("index.html.j2").render(view=view, css=Markup(css))


def render_digest(view: IndexView) -> str:
    return environment(templates_dir()).get_template("digest.md.j2").render(view=view)


def write_index(view: IndexView, output: Path) -> list[Path]:
    """index.html and digest.md, rendered first, then written atomically together."""
    check_pages_ours(output)
    return write_files(output, [(INDEX_FILE, render_index(view)), (DIGEST_FILE, render_digest(view))])


# What advisor's own index and digest begin with: a page without it is someone else's and is never replaced.
_OURS = {INDEX_FILE: re.compile(rb'<meta name="generator" content="advisor '),
         DIGEST_FILE: re.compile(rb"\badvisor batch run \d+")}


def check_pages_ours(output: Path) -> None:
    """index.html and digest.md in ``output`` are absent or advisor's (an output folder pointed at a web
    folder must not replace its home page): else a one-line error naming the page, before anything runs."""
    for name, mark in _OURS.items():
        path = output / name
        try:
            fd = open_owned(path, os.O_RDONLY, "batch pages")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise UsageError(f"cannot read: {exc.strerror or exc}", path=path) from None
        with os.fdopen(fd, "rb") as handle:
            head = handle.read(4096)
        if not mark.search(head):
            raise UsageError("was not written by advisor batch, so advisor does not replace it: move it away or "
                             "choose another output folder", path=path)


def check_link_base(link_base: str | None) -> None:
    """``--link-base`` is an absolute http(s) URL or a path a browser resolves on the index's own host: a
    ``javascript:`` (or ``data:``, ``file:``...) prefix would make every report link on the index run or
    open something else when clicked, and ``//host``, ``/\\host`` or ``\\\\host`` lead to another host."""
    if link_base is None:
        return
    if any(ord(c) < 32 or ord(c) == 127 for c in link_base):
        raise UsageError("--link-base must not hold control characters")
    if "\\" in link_base or link_base != link_base.strip():
        # A browser reads a backslash as a slash and drops leading spaces: '/\\host/' and ' //host/'
        # are links to another host.
        raise UsageError(f"--link-base must not hold backslashes or leading or trailing spaces: '{link_base[:80]}'")
    parts = urlsplit(link_base)
    if parts.scheme.lower() in ("http", "https") and parts.netloc:
        return
    if not parts.scheme and not parts.netloc and not link_base.startswith("//") \
            and ":" not in link_base.split("/")[0]:
        return
    raise UsageError(f"--link-base must be an http(s) URL or a relative path, not '{link_base[:80]}'")


def _row(job: JobState, output: Path, link_base: str | None) -> JobRow:
    result, previous = job.result, job.previous
    verdict = result.verdict
    reports = tuple((name.rpartition(".")[2], _link(Path(result.report_dir) / name, output, link_base))
                    for name in _preferred(result.report_files)) if result.report_dir else ()
    changes = job.changes or FindingChanges((), (), ())
    return JobRow(
        name=job.name, status=result.status, status_label=STATUS_LABELS[result.status],
        tone=("ok" if verdict.severity == "ok" else verdict.severity) if verdict else "failed",
        verdict=verdict.verdict if verdict else "failed",
        verdict_label=_title(verdict) if verdict else "failed",
        previous_verdict=previous.verdict.verdict if previous and previous.verdict else None,
        previous_label=_title(previous.verdict) if previous and previous.verdict else None,
        root=_root(result), cosine=_cosine(result), previous_cosine=_cosine(previous) if previous else None,
        errors=verdict.errors if verdict else 0, warnings=verdict.warnings if verdict else 0,
        notes=verdict.notes if verdict else 0, transition=job.transition,
        transition_label=TRANSITION_LABELS[job.transition],
        new=_events(changes.new), fixed=_events(changes.fixed),
        new_propagated=sum(f.explained for f in changes.new), fixed_propagated=sum(f.explained for f in changes.fixed),
        persists=len(changes.persists), report=reports[0][1] if reports else None, reports=reports,
        error=result.error, trend=Markup(trend_svg([_point(r) for r in job.trend])))


def _point(result: ResultRow) -> TrendPoint:
    verdict = result.verdict
    if verdict is None:
        return TrendPoint(result.run_id, None, 0, 0, "failed", f"run {result.run_id}: failed: {result.error}")
    words = labels_for("en")
    label = (f"run {result.run_id}: {_title(verdict)}, "
             f"output cosine {fmt_value(verdict.output_cosine)}, {plural(words, 'term.errors', verdict.errors)}, "
             f"{plural(words, 'term.warnings', verdict.warnings)}")
    return TrendPoint(result.run_id, verdict.output_cosine, verdict.errors, verdict.warnings,
                      "ok" if verdict.severity == "ok" else verdict.severity, label)


def verdict_label(kind: str, book: AdviceBook | None = None) -> str:
    """A verdict kind as the reports title it: the advice page's title ("Problem node"), or the
    label of "consistent" / "unexplained". ``book``: the job's advice pages, rule packs' own
    included (the worker titles the verdict with them); the kind itself when no page is known."""
    words = labels_for("en")
    if f"{kind}.title" in words:
        return words[f"{kind}.title"]
    try:
        return str(load_page(kind, book)["title"]["en"])
    except (AdvisorError, KeyError, TypeError):
        return kind


def _title(verdict: Verdict) -> str:
    """The title the job's report gave its verdict; results recorded before titles were kept are
    titled from the built-in pages."""
    return verdict.title or verdict_label(verdict.verdict)


def _root(result: ResultRow) -> str | None:
    verdict = result.verdict
    if verdict is None or verdict.root_op is None:
        return None
    return f"{verdict.root_op} (op {verdict.root_index})" if verdict.root_index is not None else verdict.root_op


def _cosine(result: ResultRow) -> str:
    return fmt_value(result.verdict.output_cosine) if result.verdict else "—"


def _events(findings: Sequence[FindingRecord]) -> tuple[str, ...]:
    """One line per finding that is not explained as another's propagation, titled as the report titles
    it ("Problem node at Conv_3 (error)"): five ops deviating after a root cause are one new problem."""
    return tuple(_finding_text(f) for f in findings if not f.explained)


def _finding_text(finding: FindingRecord) -> str:
    where = f" at {finding.op}" if finding.op else ""
    return f"{verdict_label(finding.kind)}{where} ({finding.severity})"


def _preferred(files: Sequence[str]) -> list[str]:
    return sorted(files, key=lambda n: REPORT_PREFERENCE.index(n) if n in REPORT_PREFERENCE else len(files))


def _link(target: Path, output: Path, link_base: str | None) -> str:
    relative = Path(os.path.relpath(target.absolute(), output.absolute())).as_posix()
    href = quote(relative)
    return f"{link_base.rstrip('/')}/{href}" if link_base else href
