"""The history database (SQLite): every run, every job's result, its findings and rule packs.

One writer, the batch's parent process, which commits each job's result the moment it arrives
(WAL mode: ``advisor history`` can read while a batch writes). A batch holds an exclusive lock file
beside the database for its whole run, so two batches (an overlapping cron job) never write the
same history; the lock dies with its process, so a killed batch never leaves it stuck.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import UsageError
from ..nesting import loads_json
from ..ownfiles import link_refused, open_owned
from .jobs import Batch
from .records import FindingRecord, JobOutcome, PackRecord, Verdict
from .schema import MIGRATIONS, SCHEMA_VERSION

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock, one batch at a time is up to the user
    fcntl = None  # type: ignore[assignment]

VERDICT_STATUSES = ("ok", "unchanged")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunRow:
    id: int
    source: str
    title: str
    started_at: str
    finished_at: str | None
    status: str
    advisor_version: str
    workers: int
    jobs: int
    resumed: int
    counts: dict[str, int]          # result status -> jobs


@dataclass(frozen=True)
class ResultRow:
    id: int
    run_id: int
    job: str
    status: str
    job_hash: str | None
    reused_from: int | None
    verdict: Verdict | None
    error: str | None
    report_dir: str | None
    report_files: list[str]
    inputs: dict[str, dict[str, str]]
    input_warnings: list[str]
    duration: float
    cpu: float
    finished_at: str

    @property
    def origin(self) -> int:
        """The result whose analysis this row stands for (itself unless unchanged)."""
        return self.reused_from or self.id


@dataclass(frozen=True)
class RunStart:
    run_id: int
    resumed: bool
    done: frozenset[str]            # jobs already recorded in a resumed run


class HistoryStore:
    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.db = connection
        self.path = path

    @classmethod
    def open(cls, path: Path, create: bool = False) -> HistoryStore:
        if path.is_dir():
            path = path / "history.sqlite"
        if create and path.is_symlink():
            raise link_refused(path, "history")
        if not path.is_file():
            if not create:
                raise UsageError("no history database here (run `advisor batch` first, or give --db)", path=path)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(f"cannot create the history folder: {exc.strerror or exc}", path=path) from None
        read_only = not create and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
        try:
            if read_only:     # a read-only copy or filesystem: no journal can be made, nothing changes under us
                connection = sqlite3.connect(f"{path.absolute().as_uri()}?immutable=1", uri=True, timeout=30)
            else:
                connection = sqlite3.connect(path, timeout=30)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA foreign_keys = ON")
            store = cls(connection, path)
            if read_only:
                store._check_readable()
            else:
                connection.execute("PRAGMA journal_mode = WAL")
                store._migrate()
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"not a readable history database: {exc}", path=path) from None
        return store

    def close(self) -> None:
        self.db.close()

    def schema_version(self) -> int:
        exists = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")
        if exists.fetchone() is None:
            return 0
        return int(self.db.execute("SELECT version FROM schema_version").fetchone()[0])

    def _check_readable(self) -> None:
        """A history this advisor can read without changing it (it cannot migrate a read-only one)."""
        version = self.schema_version()
        if version != SCHEMA_VERSION:
            raise UsageError(f"the history database has schema version {version} and this advisor reads version "
                             f"{SCHEMA_VERSION}; it is read-only here, so it cannot be upgraded: copy it to a "
                             "writable folder first", path=self.path)

    def _migrate(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise UsageError(f"the history database has schema version {version}, newer than this advisor "
                             f"({__version__}) knows ({SCHEMA_VERSION}); upgrade advisor to read it",
                             path=self.path)
        for target in range(version + 1, SCHEMA_VERSION + 1):
            # executescript commits first; BEGIN ... COMMIT makes each migration all or nothing.
            self.db.executescript(f"BEGIN;\n{MIGRATIONS[target - 1]}\n"
                                  f"UPDATE schema_version SET version = {target};\nCOMMIT;")

    # -- writing (the batch's parent process only) --------------------------------------------

    @contextmanager
    def writer_lock(self) -> Iterator[None]:
        """Exclusive for the batch's lifetime; refused at once (exit 2) when another batch holds it."""
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = open_owned(lock_path, os.O_RDWR | os.O_CREAT, "history lock")
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            if fcntl is not None:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown"
                    raise UsageError(f"another advisor batch (pid {holder}) is writing this history; wait for it "
                                     f"to finish or give another --db", path=self.path) from None
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def begin_run(self, batch: Batch, workers: int) -> RunStart:
        """Resume this batch's run if a killed process left it unfinished, else start a new one.
        Call under ``writer_lock``: then any run still marked running is dead."""
        with self.db:
            stale = self.db.execute("SELECT id, source, batch_digest FROM runs WHERE status = 'running' "
                                    "ORDER BY id DESC").fetchall()
            resume = next((row["id"] for row in stale
                           if row["source"] == batch.source and row["batch_digest"] == batch.digest), None)
            for row in stale:
                if row["id"] != resume:
                    self.db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (row["id"],))
            if resume is not None:
                self.db.execute("UPDATE runs SET resumed = resumed + 1, workers = ?, pid = ? WHERE id = ?",
                                (workers, os.getpid(), resume))
                done = {row[0] for row in self.db.execute("SELECT job FROM results WHERE run_id = ?", (resume,))}
                return RunStart(resume, True, frozenset(done))
            cursor = self.db.execute(
                "INSERT INTO runs (source, batch_digest, title, started_at, status, advisor_version, workers, jobs,"
                " host, pid) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                (batch.source, batch.digest, batch.title, now(), __version__, workers, len(batch.jobs),
                 socket.gethostname(), os.getpid()))
            return RunStart(int(cursor.lastrowid), False, frozenset())

    def record(self, run_id: int, outcome: JobOutcome, reused: ResultRow | None = None) -> int:
        """Store one job's outcome, committed at once. ``reused``: for an unchanged job, the earlier
        result it stands for (its verdict and report files are copied; findings stay with it)."""
        verdict = reused.verdict if reused is not None else outcome.verdict
        report_dir = reused.report_dir if reused is not None else outcome.report_dir
        report_files = reused.report_files if reused is not None else outcome.report_files
        warnings = reused.input_warnings if reused is not None else outcome.warnings
        values = _verdict_columns(verdict)
        with self.db:
            self.db.execute("DELETE FROM results WHERE run_id = ? AND job = ?", (run_id, outcome.job))
            cursor = self.db.execute(
                "INSERT INTO results (run_id, job, status, job_hash, reused_from, verdict, severity, root_op,"
                " root_index, output_cosine, errors, warnings, notes, explained, verdict_title, error, report_dir,"
                " report_files, inputs, input_warnings, duration, cpu, finished_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, outcome.job, outcome.status, outcome.job_hash, reused.origin if reused else None, *values,
                 outcome.error, report_dir, json.dumps(report_files), json.dumps(outcome.inputs, ensure_ascii=False),
                 json.dumps(warnings, ensure_ascii=False), outcome.duration, outcome.cpu, now()))
            result_id = int(cursor.lastrowid)
            self.db.executemany(
                "INSERT INTO findings (result_id, position, rule, kind, op, op_index, severity, confidence,"
                " root_cause, explained, evidence, rule_aliases) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(result_id, i, f.rule, f.kind, f.op, f.index, f.severity, f.confidence, int(f.root_cause),
                  int(f.explained), f.evidence, ",".join(f.rule_aliases) or None)
                 for i, f in enumerate(outcome.findings)])
            self.db.executemany("INSERT INTO packs (result_id, name, version, source, digest) VALUES (?, ?, ?, ?, ?)",
                                [(result_id, p.name, p.version, p.source, p.digest) for p in outcome.packs])
        return result_id

    def finish_run(self, run_id: int) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status = 'complete', finished_at = ? WHERE id = ?", (now(), run_id))

    # -- reading ---------------------------------------------------------------------------------

    def runs(self, job: str | None = None) -> list[RunRow]:
        """Every run, oldest first; with ``job``, only runs that have a result for it."""
        where, args = ("WHERE id IN (SELECT run_id FROM results WHERE job = ?)", (job,)) if job else ("", ())
        rows = self.db.execute(f"SELECT * FROM runs {where} ORDER BY id", args).fetchall()
        counts: dict[int, dict[str, int]] = {}
        for row in self.db.execute("SELECT run_id, status, COUNT(*) FROM results GROUP BY run_id, status"):
            counts.setdefault(row[0], {})[row[1]] = row[2]
        return [RunRow(id=r["id"], source=r["source"], title=r["title"], started_at=r["started_at"],
                       finished_at=r["finished_at"], status=r["status"], advisor_version=r["advisor_version"],
                       workers=r["workers"], jobs=r["jobs"], resumed=r["resumed"], counts=counts.get(r["id"], {}))
                for r in rows]

    def run(self, run_id: int) -> RunRow | None:
        return next((r for r in self.runs() if r.id == run_id), None)

    def results(self, run_id: int) -> list[ResultRow]:
        rows = self.db.execute("SELECT * FROM results WHERE run_id = ? ORDER BY id", (run_id,))
        return [_result(row) for row in rows]

    def result(self, run_id: int, job: str) -> ResultRow | None:
        row = self.db.execute("SELECT * FROM results WHERE run_id = ? AND job = ?", (run_id, job)).fetchone()
        return _result(row) if row else None

    def reusable(self, job: str) -> ResultRow | None:
        """The job's latest good result (analysed or unchanged): a job with the same hash can skip."""
        row = self.db.execute("SELECT * FROM results WHERE job = ? AND status IN ('ok', 'unchanged') "
                              "ORDER BY run_id DESC, id DESC LIMIT 1", (job,)).fetchone()
        return _result(row) if row else None

    def previous(self, job: str, before_run: int) -> ResultRow | None:
        """The job's latest result with a verdict in a run before ``before_run`` (failures skipped)."""
        row = self.db.execute("SELECT * FROM results WHERE job = ? AND run_id < ? AND status IN ('ok', 'unchanged') "
                              "ORDER BY run_id DESC LIMIT 1", (job, before_run)).fetchone()
        return _result(row) if row else None

    def trend(self, job: str, up_to_run: int, limit: int) -> list[ResultRow]:
        """The job's last ``limit`` results up to ``up_to_run``, oldest first (failures included)."""
        rows = self.db.execute("SELECT * FROM results WHERE job = ? AND run_id <= ? ORDER BY run_id DESC LIMIT ?",
                               (job, up_to_run, limit)).fetchall()
        return [_result(row) for row in reversed(rows)]

    def findings(self, result: ResultRow) -> list[FindingRecord]:
        rows = self.db.execute("SELECT * FROM findings WHERE result_id = ? ORDER BY position", (result.origin,))
        return [FindingRecord(rule=r["rule"], kind=r["kind"], op=r["op"], index=r["op_index"], severity=r["severity"],
                              confidence=r["confidence"], root_cause=bool(r["root_cause"]),
                              explained=bool(r["explained"]), evidence=r["evidence"],
                              rule_aliases=tuple(filter(None, (r["rule_aliases"] or "").split(","))))
                for r in rows]

    def packs(self, result: ResultRow) -> list[PackRecord]:
        rows = self.db.execute("SELECT * FROM packs WHERE result_id = ? ORDER BY rowid", (result.origin,))
        return [PackRecord(r["name"], r["version"], r["source"], r["digest"]) for r in rows]


def _verdict_columns(verdict: Verdict | None) -> tuple[Any, ...]:
    if verdict is None:
        return (None,) * 10
    return (verdict.verdict, verdict.severity, verdict.root_op, verdict.root_index, verdict.output_cosine,
            verdict.errors, verdict.warnings, verdict.notes, verdict.explained, verdict.title)


def _stored(text: str) -> Any:
    """A JSON column, with the nesting bound of every JSON advisor reads (a history may come from elsewhere)."""
    return loads_json(text, "the history database", UsageError)


def _result(row: sqlite3.Row) -> ResultRow:
    verdict = None
    if row["verdict"] is not None:
        verdict = Verdict(verdict=row["verdict"], severity=row["severity"], root_op=row["root_op"],
                          root_index=row["root_index"], output_cosine=row["output_cosine"], errors=row["errors"],
                          warnings=row["warnings"], notes=row["notes"], explained=row["explained"],
                          title=row["verdict_title"])
    return ResultRow(id=row["id"], run_id=row["run_id"], job=row["job"], status=row["status"],
                     job_hash=row["job_hash"], reused_from=row["reused_from"], verdict=verdict, error=row["error"],
                     report_dir=row["report_dir"], report_files=_stored(row["report_files"]),
                     inputs=_stored(row["inputs"]), input_warnings=_stored(row["input_warnings"]),
                     duration=row["duration"], cpu=row["cpu"], finished_at=row["finished_at"])
