"""Report templates are compiled once and their code kept in advisor's cache folder: the next process
renders from it, and nothing about the cache may change what is rendered or stop a report."""

from __future__ import annotations

import pytest
from jinja2 import Environment

from advisor.report import reporters
from advisor.report.template_cache import CompiledTemplates


@pytest.fixture
def templates(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "page.html.j2").write_text("<p>{{ text }}</p>\n", encoding="utf-8")
    (folder / "page.md.j2").write_text("{{ text }}\n", encoding="utf-8")
    return folder


def fresh(folder):
    """The environment a new process would build (reporters.environment is cached per process)."""
    return reporters.environment.__wrapped__(folder)


def compiles(env: Environment, monkeypatch) -> list[str]:
    compiled: list[str] = []
    original = env.compile
    monkeypatch.setattr(env, "compile", lambda source, name=None, filename=None, *a, **k:
                        compiled.append(name) or original(source, name, filename, *a, **k))
    return compiled


def test_the_next_process_renders_from_the_compiled_code(templates, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    first = fresh(templates)
    assert first.get_template("page.html.j2").render(text="<b>") == "<p>&lt;b&gt;</p>\n"
    assert list((tmp_path / "cache" / "templates").glob("*.cache"))
    second = fresh(templates)
    compiled = compiles(second, monkeypatch)
    assert second.get_template("page.html.j2").render(text="<b>") == "<p>&lt;b&gt;</p>\n"
    assert second.get_template("page.md.j2").render(text="<b>") == "<b>\n"   # Markdown: no autoescape
    assert compiled == ["page.md.j2"]   # the HTML one came from the cache


def test_an_edited_template_is_compiled_again(templates, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    fresh(templates).get_template("page.md.j2").render(text="x")
    (templates / "page.md.j2").write_text("edited {{ text }}\n", encoding="utf-8")
    assert fresh(templates).get_template("page.md.j2").render(text="x") == "edited x\n"


def test_what_shapes_the_compiled_code_is_in_the_key(templates, tmp_path):
    env = fresh(templates)
    cache = CompiledTemplates(env)
    other = Environment(trim_blocks=False)
    assert cache.get_cache_key("page.html.j2", "a") != cache.get_cache_key("page.md.j2", "a")  # autoescape
    assert cache.get_cache_key("page.md.j2", "a") != cache.get_cache_key("page.md.j2", "b")    # another checkout
    assert cache.get_cache_key("page.md.j2", "a") != CompiledTemplates(other).get_cache_key("page.md.j2", "a")


@pytest.mark.parametrize("damage", [b"", b"not jinja", b"j2" + b"\x00" * 40, b"flip"])
def test_a_damaged_entry_is_compiled_again(templates, tmp_path, monkeypatch, damage):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    fresh(templates).get_template("page.md.j2")
    for entry in (tmp_path / "cache" / "templates").glob("*.cache"):
        data = entry.read_bytes()
        entry.write_bytes(data[:-1] + bytes([data[-1] ^ 1]) if damage == b"flip" else damage)
    assert fresh(templates).get_template("page.md.j2").render(text="x") == "x\n"


def test_an_unusable_cache_folder_or_none_only_costs_the_saving(templates, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(blocker / "cache"))
    assert fresh(templates).get_template("page.md.j2").render(text="x") == "x\n"
    monkeypatch.setenv("ADVISOR_CACHE_DIR", "off")
    env = fresh(templates)
    assert env.bytecode_cache is None and env.get_template("page.md.j2").render(text="x") == "x\n"


def test_without_a_home_folder_there_is_no_cache_and_the_report_still_renders(templates, monkeypatch):
    from pathlib import Path

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    for name in ("ADVISOR_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    env = fresh(templates)
    assert env.bytecode_cache is None and env.get_template("page.md.j2").render(text="x") == "x\n"
