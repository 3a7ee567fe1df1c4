"""The reference pages say what the code does: the generated ones are current (docs/facts.md,
docs/report-json.md, docs/thresholds.md: `python -m advisor.docsgen` rewrites them), docs/batch.md names
every manifest key and history table, and every page a message or docstring points to exists and
ships inside the wheel."""

from __future__ import annotations

import re
import sqlite3
import tomllib

import pytest

from advisor.batch.manifest import DUMPS_KEYS, JOB_KEYS, TOP_KEYS
from advisor.batch.schema import MIGRATIONS
from advisor.docsgen import facts_markdown, report_markdown, thresholds_markdown
from advisor.facts.schema import FACT_FIELDS
from tests.conftest import REPO

DOCS = REPO / "docs"


@pytest.mark.parametrize(("page", "generate"), [("facts.md", facts_markdown), ("report-json.md", report_markdown),
                                                ("thresholds.md", thresholds_markdown)])
def test_generated_pages_are_current(page, generate):
    assert (DOCS / page).read_text(encoding="utf-8") == generate(), \
        f"docs/{page} is out of date: run python -m advisor.docsgen"


def test_the_facts_page_lists_every_field_of_every_kind():
    text = (DOCS / "facts.md").read_text(encoding="utf-8")
    missing = [f"{kind}.{name}" for kind, table in FACT_FIELDS.items() for name in table
               if f"| `{name}` |" not in text]
    assert missing == []


def test_the_batch_page_names_every_manifest_key_and_history_table():
    text = (DOCS / "batch.md").read_text(encoding="utf-8")
    keys = [key for key in (*TOP_KEYS, *JOB_KEYS, *DUMPS_KEYS) if f"`{key}`" not in text]
    assert keys == []
    db = sqlite3.connect(":memory:")
    for migration in MIGRATIONS:
        db.executescript(migration)
    columns = [f"{table}.{column}" for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
               for (_, column, *_) in db.execute(f"PRAGMA table_info({table})")
               if table != "schema_version" and column not in ("id", "run_id", "result_id")
               and f"`{column}`" not in text]
    assert columns == []


def test_every_page_the_code_points_to_exists():
    named = set()
    for path in (REPO / "advisor").rglob("*.py"):
        named.update(re.findall(r"docs/([a-z0-9-]+\.md)", path.read_text(encoding="utf-8")))
    for path in (REPO / "rules").rglob("*.yaml"):
        named.update(re.findall(r"docs/([a-z0-9-]+\.md)", path.read_text(encoding="utf-8")))
    assert sorted(name for name in named if not (DOCS / name).is_file()) == []


def test_the_docs_ship_inside_the_wheel():
    """Terminal messages and reports name docs/*.md: an installed advisor carries them
    (advisor/_data/docs, advisor.resources.data_dir('docs'))."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert shipped.get("docs") == "advisor/_data/docs"


def test_code_docs_and_advice_cite_only_files_in_the_repository():
    """A docstring or an advice page pointing to a note outside the repository leaves its reader stranded."""
    outside = []
    sources = [*(REPO / "advisor").rglob("*.py"), *(REPO / "knowledge").rglob("*.yaml"), *DOCS.glob("*.md")]
    for path in sources:
        for name in re.findall(r"\b([A-Z]+\.md)\b", path.read_text(encoding="utf-8")):
            if not any(REPO.glob(name)) and not any((REPO / top).rglob(name) for top in ("docs", "tests", "examples")):
                outside.append(f"{path.relative_to(REPO)}: {name}")
    assert outside == []
