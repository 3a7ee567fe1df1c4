"""`advisor history`: list, show and diff runs; errors name the database and say what exists."""

from __future__ import annotations

import sqlite3

from advisor.batch.schema import SCHEMA_VERSION

from .conftest import CLEAN, OVERFLOW, PROBLEM, Workspace


def _two_nights(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN, "bert": OVERFLOW})
    workspace.batch(manifest)
    workspace.put("resnet", PROBLEM)
    workspace.batch(manifest)


def test_list_and_show_in_text_and_json(workspace: Workspace) -> None:
    _two_nights(workspace)
    listing = workspace.history()
    assert listing.code == 0
    lines = listing.out.splitlines()
    assert lines[0].split()[:3] == ["run", "started", "(UTC)"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2"]
    runs = workspace.history_json("list")
    assert [(r["id"], r["status"], r["counts"]) for r in runs] == \
        [(1, "complete", {"ok": 2}), (2, "complete", {"ok": 1, "unchanged": 1})]

    shown = workspace.history("show", "2").out
    assert "REGRESSION resnet: problem_node at Conv_3, cosine 0.79611 [ok] (+1 new, -0 fixed)" in shown
    job = workspace.history_json("show", "latest", "--job", "bert")
    assert job["status"] == "unchanged" and job["reused_from"] is not None
    assert {p["name"] for p in job["packs"]} == {"core"} and all(p["digest"] for p in job["packs"])
    assert job["findings"][0]["root_cause"] is True


def test_errors_exit_2_with_a_hint(workspace: Workspace) -> None:
    missing = workspace.history()
    assert missing.code == 2 and "no history database here" in missing.err
    _two_nights(workspace)
    assert "no job 'resnte' in this history (did you mean 'resnet'?)" in workspace.history("--job", "resnte").err
    assert "no run 9 here (runs: 1, 2)" in workspace.history("show", "9").err
    assert "usage: advisor history diff [RUN_A RUN_B]" in workspace.history("diff", "1").err
    assert "expected a run id, 'latest' or 'previous'" in workspace.history("show", "last").err


def test_a_history_from_a_newer_advisor_is_refused(workspace: Workspace) -> None:
    _two_nights(workspace)
    with sqlite3.connect(workspace.db) as connection:
        connection.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    run = workspace.history()
    assert run.code == 2
    assert f"schema version {SCHEMA_VERSION + 1}, newer than this advisor" in run.err


def test_the_schema_is_created_and_versioned(workspace: Workspace) -> None:
    manifest = workspace.manifest({"resnet": CLEAN})
    workspace.batch(manifest)
    with sqlite3.connect(workspace.db) as connection:
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"schema_version", "runs", "results", "findings", "packs"} <= tables


def test_a_version_1_history_is_upgraded_and_its_verdicts_keep_their_titles(workspace: Workspace) -> None:
    """Histories written before verdict titles were kept: the next batch migrates them in place, and
    their verdicts are titled from the built-in advice pages."""
    manifest = workspace.manifest({"resnet": PROBLEM})
    workspace.batch(manifest)
    with sqlite3.connect(workspace.db) as connection:
        connection.execute("ALTER TABLE results DROP COLUMN verdict_title")
        connection.execute("ALTER TABLE findings DROP COLUMN rule_aliases")     # added in version 3
        connection.execute("UPDATE schema_version SET version = 1")
    assert workspace.history_json("show", "1", "--job", "resnet")["verdict"]["verdict"] == "problem_node"
    workspace.put("resnet", OVERFLOW)
    assert workspace.batch(manifest).code == 0
    with sqlite3.connect(workspace.db) as connection:
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        titles = connection.execute("SELECT run_id, verdict, verdict_title FROM results ORDER BY run_id").fetchall()
    assert titles == [(1, "problem_node", None), (2, "fp16_overflow", "FP16 overflow")]
    html = (workspace.out / "index.html").read_text(encoding="utf-8")
    assert "Problem node" in html and "FP16 overflow" in html
