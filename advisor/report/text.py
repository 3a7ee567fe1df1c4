"""Formatting of values, and the HTML filters templates use.

Op names, evidence and advice come from models and packs: in HTML every one of them is escaped (Jinja
autoescape, plus ``html_text`` which only adds ``<code>`` and ``<pre>`` around already escaped text).
Markdown has its own module (markdown.py); txt is plain.
"""

from __future__ import annotations

import base64
import json
import math
import re
from functools import lru_cache
from typing import Any

from markupsafe import Markup, escape

# Advice texts mark code the Markdown way: `inline` and ``` fences. In HTML that is only presentation
# (the text is escaped first), so a loose match is fine.
FENCE = re.compile(r"^```[^`\n]*\n(.*?)^ {0,3}`{3,}[ \t]*$", re.S | re.M)


def fmt_value(value: Any) -> str:
    """A value as a short human string: floats to 6 significant digits, NaN/inf spelled out."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(json_safe(value), ensure_ascii=False, sort_keys=True)
    if hasattr(value, "item"):            # numpy scalar
        return fmt_value(value.item())
    return str(value)


def fmt_confidence(confidence: float) -> str:
    if not math.isfinite(confidence):
        return "—"
    return f"{confidence:.0%}"


def json_safe(value: Any) -> Any:
    """Plain JSON values: NaN and infinities become None, numpy scalars Python ones, keys strings."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist"):          # numpy scalar or array
        return json_safe(value.tolist())
    return str(value)


def sentence(text: str, lang: str) -> str:
    """``text`` ending in a full stop of the language (unless it already ends in punctuation)."""
    text = text.strip()
    if not text or text[-1] in ".!?。！？":
        return text
    return text + ("。" if lang == "zh" else ".")


def join_sentences(sentences: list[str], lang: str) -> str:
    parts = [sentence(s, lang) for s in sentences if s.strip()]
    return ("" if lang == "zh" else " ").join(parts)


# --- HTML -----------------------------------------------------------------------------------------

# Prose filters are memoised by text: a large comparison's findings repeat the same advice sections
# (every finding of a kind shares its "why" and its references, often its fixes) thousands of times.
# Those stay in a small cache as they recur; texts naming one op pass through (a large cache held
# 36 MB of them at the peak of a 100k-row report, for no hits).
PROSE_CACHE = 128


def html_text(value: Any) -> Markup:
    """Escaped text where `code` and ```fenced``` blocks become <code> and <pre>."""
    return _html_text(str(value))


@lru_cache(maxsize=PROSE_CACHE)
def _html_text(text: str) -> Markup:
    if "```" not in text:                 # no fence (most texts): the inline markup alone
        return _html_inline(text)
    parts: list[Markup] = []
    pos = 0
    for match in FENCE.finditer(text):
        parts.append(_html_inline(text[pos:match.start()]))
        parts.append(Markup("<pre><code>{}</code></pre>").format(match.group(1).rstrip("\n")))
        pos = match.end()
    parts.append(_html_inline(text[pos:]))
    return Markup("").join(parts)


_CODE_SPAN = re.compile(r"(?<![`\\])`([^`\n]+)`(?!`)")


def _html_inline(text: str) -> Markup:
    escaped = str(escape(text))           # backticks survive escaping; what they hold is escaped
    return Markup(_CODE_SPAN.sub(r"<code>\1</code>", escaped) if "`" in escaped else escaped)


NAME_BREAK = re.compile(r"(?<=[/._])(?=[^\s/._])")   # after a separator, before what follows it


def name_breaks(value: Any) -> Markup:
    """Escaped text where a long name may break after ``/``, ``.`` and ``_`` (a ``<wbr>``), so
    ``layer1/attn/softmax`` wraps at ``/`` and never mid-word."""
    return _name_breaks(str(value))


@lru_cache(maxsize=PROSE_CACHE)
def _name_breaks(text: str) -> Markup:
    return Markup("<wbr>").join(escape(part) for part in NAME_BREAK.split(text))


def ref_link(value: Any) -> Markup:
    """A reference: a link when it is an http(s) URL, escaped text otherwise."""
    text = str(value).strip()
    if re.fullmatch(r"https?://[^\s<>\"']+", text):
        return Markup('<a href="{0}">{0}</a>').format(text)
    return html_text(text)


def data_uri(text: str) -> str:
    """``text`` as a data: URI (base64, so no character of it can mean anything in an attribute)."""
    return "data:text/plain;charset=utf-8;base64," + base64.b64encode(text.encode("utf-8")).decode("ascii")
