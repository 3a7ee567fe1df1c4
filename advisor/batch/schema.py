"""The history database's schema, versioned so a later advisor can migrate an older file.

``schema_version`` holds one row. ``MIGRATIONS[n]`` takes a database from version n to n + 1; a new
version appends a migration and never edits an old one. A file newer than this advisor knows is
refused (reading it could misread columns), with a message that says to upgrade.

Tables (version 1):

* ``runs``: one batch run. ``status`` is ``running`` until the run finishes (``complete``); a run
  left ``running`` by a killed batch is resumed by the next identical batch, or marked
  ``interrupted`` when the batch changed.
* ``results``: one row per job and run. ``status``: ``ok`` (analysed), ``unchanged`` (hash equal
  to an earlier good result: ``reused_from`` points to the row that holds its findings and packs),
  ``failed`` (``error`` holds the one-line reason). The verdict columns are copied into unchanged
  rows so a job's trend is one query.
* ``findings``: the findings of an analysed result, in rank order.
* ``packs``: the rule packs an analysed result used, with their versions and content hashes.

Version 2 adds ``results.verdict_title``: the verdict as the job's own report titled it in English
(a rule pack's finding kind has its title only in that job's packs, which the index page does not load).
Rows written before it hold NULL; the index then titles the kind from the built-in pages.

Version 3 adds ``findings.rule_aliases``: the former ids of the finding's rule (comma-joined), so a
rule renamed between two runs still matches its own findings (changes.finding_changes). NULL before.
"""

from __future__ import annotations

SCHEMA_VERSION = 3

MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1
    """
    CREATE TABLE schema_version (version INTEGER NOT NULL);
    INSERT INTO schema_version (version) VALUES (0);
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,               -- manifest path, or "scan:" + folder
        batch_digest TEXT NOT NULL,         -- every job's definition: resume only the same batch
        title TEXT NOT NULL,
        started_at TEXT NOT NULL,           -- ISO 8601, UTC
        finished_at TEXT,
        status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'interrupted')),
        advisor_version TEXT NOT NULL,
        workers INTEGER NOT NULL,
        jobs INTEGER NOT NULL,              -- jobs in the batch
        resumed INTEGER NOT NULL DEFAULT 0, -- times a killed run was picked up again
        host TEXT,
        pid INTEGER
    );
    CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        job TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'unchanged', 'failed')),
        job_hash TEXT,
        reused_from INTEGER REFERENCES results (id),
        verdict TEXT,
        severity TEXT,
        root_op TEXT,
        root_index INTEGER,
        output_cosine REAL,
        errors INTEGER,
        warnings INTEGER,
        notes INTEGER,
        explained INTEGER,
        error TEXT,
        report_dir TEXT,
        report_files TEXT NOT NULL DEFAULT '[]',     -- JSON list of file names in report_dir
        inputs TEXT NOT NULL DEFAULT '{}',           -- JSON: role -> {path, digest}
        input_warnings TEXT NOT NULL DEFAULT '[]',   -- JSON list of the diagnosis' warnings
        duration REAL NOT NULL,                      -- seconds in the worker, wall clock
        cpu REAL NOT NULL DEFAULT 0,                 -- CPU seconds in the worker
        finished_at TEXT NOT NULL,
        UNIQUE (run_id, job)
    );
    CREATE INDEX results_by_job ON results (job, run_id);
    CREATE TABLE findings (
        result_id INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        rule TEXT NOT NULL,
        kind TEXT NOT NULL,
        op TEXT,
        op_index INTEGER,
        severity TEXT NOT NULL,
        confidence REAL NOT NULL,
        root_cause INTEGER NOT NULL,
        explained INTEGER NOT NULL,
        evidence TEXT NOT NULL,
        PRIMARY KEY (result_id, position)
    );
    CREATE TABLE packs (
        result_id INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        source TEXT NOT NULL,
        digest TEXT NOT NULL
    );
    CREATE INDEX packs_by_result ON packs (result_id);
    """,
    # 1 -> 2
    """
    ALTER TABLE results ADD COLUMN verdict_title TEXT;
    """,
    # 2 -> 3
    """
    ALTER TABLE findings ADD COLUMN rule_aliases TEXT;
    """,
)

assert len(MIGRATIONS) == SCHEMA_VERSION
