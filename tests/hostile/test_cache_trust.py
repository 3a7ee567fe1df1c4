"""Caches that cannot run code: whoever can write advisor's cache folder (a team-shared ADVISOR_CACHE_DIR)
must not be able to make a later run execute or believe what they wrote. Entries are verified (a tag
keyed by a secret only the user can read) before anything is loaded, parsed packs are stored as JSON
data, and a cache folder others can write is not used at all (one warning)."""

from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.engine import packcache
from advisor.engine.packs import load_pack
from advisor.engine.registry import Registry
from tests.conftest import EXAMPLE, REPO
from tests.engine.test_rule_authoring import make_pack


class _Plant:
    """Unpickling this runs ``open(marker, 'w')``: what an attacker's cache entry would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(folder))
    packcache.clear_memory()
    yield folder
    packcache.clear_memory()


def test_a_planted_pack_entry_never_runs_and_is_not_believed(cache, tmp_path):
    pack = make_pack(tmp_path)
    load_pack(pack)                                           # the user's own entry exists
    packcache.clear_memory()
    key = packcache.content_key(pack, Registry().schema_digest())
    marker = tmp_path / "code-ran"
    folder = cache / "packs"
    (folder / f"{key}.pickle").write_bytes(pickle.dumps((key, _Plant(marker))))       # the old format
    for entry in folder.glob(f"{key}.json"):                                           # the new one, forged
        entry.write_bytes(entry.read_bytes().replace(b"pow-in-fp16", b"forged-rule"))
    rules = [r.id for r in load_pack(pack).rules]
    assert not marker.exists()
    assert rules == ["pow-in-fp16"]


def test_a_pack_read_from_the_cache_equals_the_parsed_one(cache):
    core = REPO / "rules" / "core"
    parsed = load_pack(core)
    packcache.clear_memory()
    cached = load_pack(core)
    assert cached is not parsed and cached == parsed
    assert all(rule.fields == parsed.rules[0].fields for rule in cached.rules)


def test_cached_packs_are_data_not_pickles(cache, tmp_path):
    load_pack(make_pack(tmp_path))
    entries = list((cache / "packs").iterdir())
    assert entries and all(e.suffix == ".json" for e in entries)
    assert all(b"\x80\x04" not in e.read_bytes()[:64] for e in entries)
    assert all(e.stat().st_mode & 0o077 == 0 for e in entries)


def _forged_bytecode(template_source: str, marker: Path) -> bytes:
    """What Jinja's own file cache would load and run: its header, the source checksum, marshalled code."""
    from jinja2.bccache import bc_magic

    code = compile(f"open({str(marker)!r}, 'w').close()\n", "<template>", "exec")
    checksum = hashlib.sha1(template_source.encode("utf-8")).hexdigest()
    return bc_magic + pickle.dumps(checksum, 2) + marshal.dumps(code)


def test_a_planted_compiled_template_never_runs(cache, tmp_path):
    from advisor.report import reporters
    from advisor.report.template_cache import CompiledTemplates

    templates = tmp_path / "templates"
    templates.mkdir()
    source = "<p>{{ text }}</p>\n"
    (templates / "page.html.j2").write_text(source, encoding="utf-8")
    env = reporters.environment.__wrapped__(templates)
    key = CompiledTemplates(env).get_cache_key("page.html.j2", str(templates / "page.html.j2"))
    marker = tmp_path / "code-ran"
    (cache / "templates").mkdir(parents=True, exist_ok=True)
    for name in (f"__jinja2_{key}.cache", f"{key}.cache"):
        (cache / "templates" / name).write_bytes(_forged_bytecode(source, marker))
    assert env.get_template("page.html.j2").render(text="<b>") == "<p>&lt;b&gt;</p>\n"
    assert not marker.exists()


@pytest.mark.parametrize("shape", ["writable by others", "a link"])
def test_a_cache_folder_others_can_write_is_not_used(tmp_path, shape):
    folder = tmp_path / "shared-cache"
    if shape == "a link":
        (tmp_path / "real").mkdir(mode=0o700)
        os.symlink(tmp_path / "real", folder)
    else:
        folder.mkdir()
        folder.chmod(0o777)
    env = {**os.environ, "ADVISOR_CACHE_DIR": str(folder), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "advisor", "run", str(EXAMPLE), "-o", str(tmp_path / "out"), "-q",
                           "--format", "txt"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    warnings = [line for line in done.stderr.splitlines() if "cache folder" in line]
    assert len(warnings) == 1 and str(folder) in warnings[0]
    assert not any((tmp_path / "real" if shape == "a link" else folder).rglob("*.json"))
    assert (tmp_path / "out" / "report.txt").is_file()


def test_temporaries_killed_writers_left_are_collected(cache, tmp_path):
    load_pack(make_pack(tmp_path))
    folder = cache / "packs"
    stale, fresh = folder / ".0123.json.89abcdef.tmp", folder / ".4567.json.01234567.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"half an entry")
    os.utime(stale, (1, 1))
    packcache.clear_memory()
    (tmp_path / "team" / "rule.yaml").write_text((tmp_path / "team" / "rule.yaml").read_text() + "\n")
    load_pack(tmp_path / "team")                                # another content: a write
    assert not stale.exists() and fresh.exists()               # a writer still at work keeps its temporary
