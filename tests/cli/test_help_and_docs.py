"""A newcomer's first commands: ``advisor`` alone says what it does and lists the commands, ``run --help``
groups its options, and every docs/NAME.md a message cites ships with the package (``advisor docs NAME``)."""

from __future__ import annotations

import re

import pytest

from advisor.cli import COMMANDS, main

from ..conftest import REPO


def test_advisor_alone_prints_usage_and_the_commands(capsys) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: advisor")
    for name in COMMANDS:
        assert re.search(rf"^\s+{name}\s", out, re.M), name
    assert "advisor run RESULT.csv" in out and "advisor docs" in out


def test_run_help_groups_its_options(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    sections = re.split(r"^(\S[^\n]*):\n", out, flags=re.M)
    headings = sections[1::2]
    assert headings[:1] == ["options"] and headings[1:] == ["inputs", "evidence", "thresholds and rules", "output"]
    by_heading = dict(zip(headings, sections[2::2], strict=True))
    assert re.findall(r"^\s+(--?[\w-]+)", by_heading["options"], re.M) == ["-h"]
    assert "--dumps" in by_heading["evidence"] and "--graph" in by_heading["evidence"]
    assert "--threshold" in by_heading["thresholds and rules"] and "--format" in by_heading["output"]


def _cited_topics() -> set[str]:
    cited = set()
    for source in (REPO / "advisor").rglob("*.py"):
        cited.update(re.findall(r"docs/([a-z0-9-]+)\.md", source.read_text(encoding="utf-8")))
    return cited


@pytest.mark.parametrize("topic", sorted(_cited_topics()))
def test_every_doc_a_message_cites_ships_and_prints(capsys, topic: str) -> None:
    assert main(["docs", topic]) == 0
    text = capsys.readouterr().out
    assert text == (REPO / "docs" / f"{topic}.md").read_text(encoding="utf-8")


def test_docs_lists_the_topics_and_suggests_on_a_typo(capsys) -> None:
    assert main(["docs"]) == 0
    listed = capsys.readouterr().out
    assert "formats  " in listed and "verify  " in listed
    assert main(["docs", "formatz"]) == 2
    assert "did you mean 'formats'" in capsys.readouterr().err
