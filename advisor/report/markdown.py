"""Markdown filters: show op names, evidence and advice as text, never as markup.

One invariant makes this safe whatever a Markdown parser decides about blocks and code spans: the
output holds no raw ``<`` except in ``<code>`` / ``<pre>`` elements written here around HTML-escaped
text. Outside code, ``<``, backslashes and unpaired backticks are backslash-escaped; a code span or a
fence whose text holds ``<`` becomes ``<code>`` / ``<pre><code>`` (GitHub renders both); other code
spans and fences are kept as written, so commands in advice stay copyable and readable in chat.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

from .text import oneline

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


def _html_code(code: str) -> str:
    return f"<code>{html.escape(code, quote=False)}</code>"


def _code_span(span: str) -> str:
    width = len(_RUN.match(span).group(0))  # type: ignore[union-attr]
    code = span[width:-width].replace("\n", " ")
    if len(code) > 1 and code.startswith(" ") and code.endswith(" ") and code.strip():
        code = code[1:-1]
    return _html_code(code) if "<" in code else span


def _inline(text: str) -> str:
    return "".join(_code_span(piece) if is_code else _TEXT_SPECIAL.sub(r"\\\g<0>", piece)
                   for is_code, piece in _spans(text))


def md_text(value: Any, cell: bool = False) -> str:
    """Prose (evidence, advice) for Markdown. ``cell``: on one line with pipes escaped, for tables."""
    if value is None:
        return "—"
    if cell:
        return _inline(oneline(value)).replace("|", "\\|")
    text = str(value)
    out: list[str] = []
    start = 0
    for fence in _FENCE.finditer(text):
        out.append(_inline(text[start:fence.start()]))
        code = fence.group(1)
        out.append(f"<pre>{_html_code(code.rstrip(chr(10)))}</pre>" if "<" in code else fence.group(0))
        start = fence.end()
    out.append(_inline(text[start:]))
    return "".join(out)


def md_code(value: Any, cell: bool = False) -> str:
    """``value`` (an op name, a path) as inline code, shown literally whatever it holds."""
    if value is None:
        return "—"
    text = oneline(value)
    if "<" in text:
        span = _html_code(text)
    else:
        longest = max((len(run) for run in _RUN.findall(text)), default=0)
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        span = f"{'`' * (longest + 1)}{pad}{text}{pad}{'`' * (longest + 1)}"
    return span.replace("|", "\\|") if cell else span


def md_fence(value: Any, info: str = "") -> str:
    """A whole file as a fenced code block showing it literally: the fence is longer than any run of
    backticks in it; a text holding ``<`` becomes ``<pre><code>`` around the HTML-escaped text."""
    text = str(value).rstrip("\n")
    if "<" in text:
        return f"<pre><code>{html.escape(text, quote=False)}</code></pre>"
    fence = "`" * max(3, 1 + max((len(run) for run in _RUN.findall(text)), default=0))
    return f"{fence}{info}\n{text}\n{fence}"
