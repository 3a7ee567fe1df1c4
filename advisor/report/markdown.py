"""Markdown filters: show op names, evidence and advice as text, never as markup.

Outside code, ``<``, backslashes and unpaired backticks are backslash-escaped, so no text can open
an HTML tag, an autolink or a code span. Code is written as Markdown code (CommonMark shows a code
span's and a fence's text literally, ``<`` included): code spans and fences of advice are kept as
written, and op names and paths become code spans whose backtick run is longer than any run inside.
The report never holds HTML of its own, so it reads the same as plain text in chat and in an issue.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ..text import oneline
from .text import PROSE_CACHE

# A fence that starts on a line of its own (after the label the template puts before the text).
_FENCE = re.compile(r"(?<=\n)```[^`\n]*\n(.*?)^ {0,3}`{3,}[ \t]*$", re.S | re.M)
_RUN = re.compile(r"`+")
_TEXT_SPECIAL = re.compile(r"[\\`<]")


def _spans(text: str) -> Iterator[tuple[bool, str]]:
    """(is_code, piece): CommonMark code spans (a backtick run closed by the next run of the same
    length) and the text around them; a run that is never closed stays in the text."""
    start = search = 0
    while (opening := _RUN.search(text, search)) is not None:
        width = len(opening.group(0))
        closing = next((r for r in _RUN.finditer(text, opening.end()) if len(r.group(0)) == width), None)
        if closing is None:
            search = opening.end()
            continue
        if opening.start() > start:
            yield False, text[start:opening.start()]
        yield True, text[opening.start():closing.end()]
        start = search = closing.end()
    if start < len(text):
        yield False, text[start:]


def _code_span(span: str) -> str:
    """A code span of the text, on one line (a line break inside would end a table cell or a list item)."""
    return span.replace("\n", " ")


def _inline(text: str) -> str:
    if "`" not in text:         # no code span: most evidence and table cells
        return _TEXT_SPECIAL.sub(r"\\\g<0>", text)
    return "".join(_code_span(piece) if is_code else _TEXT_SPECIAL.sub(r"\\\g<0>", piece)
                   for is_code, piece in _spans(text))


def md_text(value: Any, cell: bool = False) -> str:
    """Prose (evidence, advice) for Markdown. ``cell``: on one line with pipes escaped, for tables."""
    if value is None:
        return "—"
    return _md_text(str(value), cell)


@lru_cache(maxsize=PROSE_CACHE)
def _md_text(text: str, cell: bool) -> str:
    if cell:
        return _inline(oneline(text)).replace("|", "\\|")
    if "```" not in text:       # no fence (most texts)
        return _inline(text)
    out: list[str] = []
    start = 0
    for fence in _FENCE.finditer(text):
        out.append(_inline(text[start:fence.start()]))
        out.append(fence.group(0))
        start = fence.end()
    out.append(_inline(text[start:]))
    return "".join(out)


def md_code(value: Any, cell: bool = False) -> str:
    """``value`` (an op name, a path) as inline code, shown literally whatever it holds; "—" when
    there is nothing to show (an empty code span reads as two stray backticks)."""
    if value is None or not str(value).strip():
        return "—"
    text = oneline(value)
    longest = max((len(run) for run in _RUN.findall(text)), default=0)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{'`' * (longest + 1)}{pad}{text}{pad}{'`' * (longest + 1)}"
    return span.replace("|", "\\|") if cell else span


def md_fence(value: Any, info: str = "") -> str:
    """A whole file as a fenced code block showing it literally: the fence is longer than any run of
    backticks in it."""
    text = str(value).rstrip("\n")
    fence = "`" * max(3, 1 + max((len(run) for run in _RUN.findall(text)), default=0))
    return f"{fence}{info}\n{text}\n{fence}"
