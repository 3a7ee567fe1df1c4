"""A schema-less parser for the protobuf text format (what ``DebugString`` and GE graph dumps print).

``parse(text)`` returns the top-level message as a plain ``dict``: a field that appears once maps to
its value, a field that appears several times maps to a ``Repeated`` list (use ``many()`` to read
either uniformly). Nested messages are dicts; strings are ``str`` (escapes decoded as bytes, then
UTF-8); ``true``/``false`` are ``bool``; numbers are ``int`` or ``float``; enum names stay ``str``.

Why not ``google.protobuf.text_format`` with GE's message descriptors: GE dumps come from many CANN
versions whose ``ge_ir.proto`` differ (fields and enum values get added), and a descriptor-based
parse rejects any field or enum it does not know; the schema-less parse takes them all and the
readers pick the fields they understand. It is also several times faster: one ``re.findall``
tokenises the file and a small recursive-descent parser walks the token list.

Accepted syntax: ``name: value``, ``name { ... }``, ``name: { ... }``, ``name < ... >``, list values
``name: [1, 2]`` / ``name: [{...}, {...}]``, optional ``;`` or ``,`` after a field, ``#`` comments,
single- and double-quoted strings with C escapes (octal, hex, ``\\u``), adjacent string
concatenation, extension and ``Any`` names in brackets. Errors raise ``ProtobufTextError`` with the
1-based line of the offending token.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ProtobufTextError", "Repeated", "many", "one", "parse"]

# Leading whitespace is part of each match (one regex step per token instead of one per blank), and
# the alternatives come in order of frequency in GE dumps.
_TOKEN = re.compile(
    r"""\s*(
     [{}<>:;,]                           # punctuation
    |\[(?:[A-Za-z_][\w./-]*\])?           # [ alone, or [extension.name], [type.googleapis.com/Any]
    |\]
    |[A-Za-z_][\w.]*                     # identifier, enum name, true/false
    |"[^"\\\n]*(?:\\.[^"\\\n]*)*"         # double-quoted string
    |[-+]?\.?\d(?:[eE][-+]|[\w.])*         # number: 7, -1, 0x1F, 1.5e-05, .5f (junk like 1.2.3 too: reported)
    |-[A-Za-z_][\w.]*                    # -inf, -nan
    |'[^'\\\n]*(?:\\.[^'\\\n]*)*'         # single-quoted string
    |\#[^\n]*                           # comment
    |\S                                 # anything else: reported as an error
    )""",
    re.VERBOSE,
)
_EOF = ""
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_[")
_IDENT_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS = frozenset("0123456789-+.")
_QUOTES = frozenset("\"'")
_SEPARATORS = frozenset(";,")
_CLOSER = {"{": "}", "<": ">"}
_SIMPLE_ESCAPES = {"n": b"\n", "r": b"\r", "t": b"\t", '"': b'"', "'": b"'", "\\": b"\\", "a": b"\a",
                   "b": b"\b", "f": b"\f", "v": b"\v", "?": b"?"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.S)
_IDENT_VALUES: dict[str, Any] = {"true": True, "True": True, "false": False, "False": False,
                                 "inf": float("inf"), "-inf": float("-inf"), "infinity": float("inf"),
                                 "-infinity": float("-inf"), "nan": float("nan"), "-nan": float("nan")}


class ProtobufTextError(ValueError):
    """A syntax error; ``line`` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.message = message
        self.line = line


class Repeated(list):
    """The values of a field that occurred more than once (or was written as ``[...]``)."""


def many(value: Any) -> list:
    """A field's values as a list, whether it occurred once (a bare value), several times or never."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def one(value: Any, default: Any = None) -> Any:
    """A singular field's value; the last one wins when it was written several times (protobuf rule)."""
    if isinstance(value, list):
        return value[-1] if value else default
    return default if value is None else value


def parse(text: str) -> dict[str, Any]:
    """Parse a whole protobuf text document into nested dicts (see the module docstring)."""
    tokens = _TOKEN.findall(text)
    if "#" in text:
        tokens = [t for t in tokens if t[0] != "#"]
    tokens.append(_EOF)
    parser = _Parser(text, tokens)
    try:
        message, _ = parser.message(0, _EOF)
    except RecursionError:
        raise ProtobufTextError("messages nested too deeply", 1) from None
    return message


class _EscapeError(ValueError):
    """An escape the text format does not have."""


def _unescape(body: str) -> str:
    """A string's body with its C escapes decoded (as bytes, then UTF-8)."""
    if "\\" not in body:
        return body
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode("utf-8")
        octal, hex_, u4, u8, simple = m.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hex_ is not None:
            out.append(int(hex_, 16))
        elif u4 is not None or u8 is not None:
            try:
                out += chr(int(u4 or u8, 16)).encode("utf-8", "surrogatepass")
            except (ValueError, OverflowError):
                raise _EscapeError(f"invalid unicode escape {m.group(0)!r}") from None
        elif simple in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[simple]
        else:
            raise _EscapeError(f"invalid escape {m.group(0)!r} in a string")
        pos = m.end()
    out += body[pos:].encode("utf-8")
    return out.decode("utf-8", "replace")


def _line_value(tok: str) -> Any:
    """A value token (a string, a number, an enum name) decoded as the parser decodes it; ValueError
    for a bad number or escape (``ge_scan`` reads GE dumps' values with it)."""
    first = tok[0]
    if first == '"':
        return _unescape(tok[1:-1])
    if first in _IDENT_START:
        return _IDENT_VALUES.get(tok, tok)
    return _number(tok)


def _number(tok: str) -> int | float:
    """A number token as the token parser reads it (ValueError when it is none)."""
    try:
        return int(tok)
    except ValueError:
        pass
    lowered = tok.lower()
    if lowered in _IDENT_VALUES:
        return _IDENT_VALUES[lowered]
    try:
        return float(tok[:-1] if lowered.endswith("f") and not lowered.startswith(("0x", "-0x")) else tok)
    except ValueError:
        return int(tok, 0)


class _Parser:
    __slots__ = ("text", "tokens")

    def __init__(self, text: str, tokens: list[str]) -> None:
        self.text = text
        self.tokens = tokens

    def message(self, i: int, closer: str) -> tuple[dict[str, Any], int]:
        """Fields up to ``closer``; returns the message and the index after the closer.

        The hot loop of a load: plain strings, integers and enum names are decoded inline; anything
        else goes through ``scalar``."""
        tokens = self.tokens
        msg: dict[str, Any] = {}
        while True:
            name = tokens[i]
            if name == closer:
                return msg, i + 1
            if name[:1] not in _NAME_START:
                if name == _EOF:
                    raise self.error(i, f"unexpected end of file: missing '{closer}'")
                raise self.error(i, f"expected a field name, found {name!r}")
            sep = tokens[i + 1]
            if sep == ":":
                tok = tokens[i + 2]
                first = tok[:1]
                if first == '"' and len(tok) > 1 and "\\" not in tok and tokens[i + 3][:1] not in _QUOTES:
                    value: Any = tok[1:-1]
                    i += 3
                elif first in _IDENT_START:
                    value = _IDENT_VALUES.get(tok, tok)
                    i += 3
                elif first in _DIGITS:
                    try:
                        value = int(tok)
                        i += 3
                    except ValueError:
                        value, i = self.scalar(i + 2)
                elif first in _CLOSER:
                    value, i = self.message(i + 3, _CLOSER[first])
                elif tok == "[":
                    value, i = self.list_value(i + 3)
                elif first == "[":  # [ENUM_NAME] tokenises like an extension name: a one-item list
                    value = Repeated([_IDENT_VALUES.get(tok[1:-1], tok[1:-1])])
                    i += 3
                else:
                    value, i = self.scalar(i + 2)
            elif sep in _CLOSER:
                value, i = self.message(i + 2, _CLOSER[sep])
            else:
                raise self.error(i + 1, f"expected ':' or '{{' after field {name!r}, found {sep!r}")
            if name in msg:
                old = msg[name]
                if type(old) is not Repeated:
                    old = msg[name] = Repeated([old])
                if type(value) is Repeated:
                    old.extend(value)
                else:
                    old.append(value)
            else:
                msg[name] = value
            if tokens[i] in _SEPARATORS:
                i += 1

    def list_value(self, i: int) -> tuple[Repeated, int]:
        """``[a, b, ...]`` after the opening bracket: scalars or messages."""
        tokens = self.tokens
        values = Repeated()
        if tokens[i] == "]":
            return values, i + 1
        while True:
            tok = tokens[i]
            if tok in _CLOSER:
                value, i = self.message(i + 1, _CLOSER[tok])
            else:
                value, i = self.scalar(i)
            values.append(value)
            tok = tokens[i]
            if tok == "]":
                return values, i + 1
            if tok != ",":
                raise self.error(i, f"expected ',' or ']' in a list, found {tok!r}")
            i += 1

    def scalar(self, i: int) -> tuple[Any, int]:
        tok = self.tokens[i]
        if tok == _EOF:
            raise self.error(i, "unexpected end of file: missing a value")
        first = tok[0]
        if first == '"' or first == "'":
            parts = []
            while tok[:1] in ('"', "'"):  # "a" "b" is one string
                if len(tok) < 2 or tok[-1] != tok[0]:
                    raise self.error(i, "unterminated string (a string must end on the line it starts)")
                parts.append(self.string(i))
                i += 1
                tok = self.tokens[i]
            return "".join(parts), i
        if first.isdigit() or first in "-+.":
            return self.number(i), i + 1
        if first.isalpha() or first == "_":
            value = _IDENT_VALUES.get(tok, tok)
            return value, i + 1
        raise self.error(i, f"expected a value, found {tok!r}")

    def string(self, i: int) -> str:
        try:
            return _unescape(self.tokens[i][1:-1])
        except _EscapeError as exc:
            raise self.error(i, str(exc)) from None

    def number(self, i: int) -> int | float:
        try:
            return _number(self.tokens[i])
        except ValueError:
            raise self.error(i, f"invalid number {self.tokens[i]!r}") from None

    def error(self, index: int, message: str) -> ProtobufTextError:
        return ProtobufTextError(message, self.line_of(index))

    def line_of(self, index: int) -> int:
        """Line of the ``index``-th token: rescans the text (errors only, so speed does not matter)."""
        seen = 0
        for m in _TOKEN.finditer(self.text):
            if m.group(1)[0] == "#":
                continue
            if seen == index:
                return self.text.count("\n", 0, m.start(1)) + 1
            seen += 1
        return max(1, self.text.count("\n") + (not self.text.endswith("\n")))  # the end of the file


_MISSING = object()
