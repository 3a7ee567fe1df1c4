"""A large JSON document read one member at a time, never whole.

msprobe's ``dump.json`` is one object whose ``data`` member holds a member per API or module call:
hundreds of MB for a large model. ``json.loads`` of it holds the file's bytes, its text and every
decoded value at once (4x the file and more). :class:`JsonText` reads the text in chunks and hands
over the members of one object of the top-level object one by one, each parsed alone by the
standard library's C decoder (``raw_decode``), so a reader holds one call's values, never the
document. The other members of the top-level object (``task``, ``framework``...) are parsed whole
and kept in ``JsonText.top``.

The same bounds and errors as :func:`advisor.nesting.loads_json`: invalid JSON names its line and
column in the file, nesting deeper than MAX_DEPTH levels (counted from the document's top) is
refused, text that is not UTF-8 is refused; each as the caller's error class naming the file. A
name that appears twice in the streamed object is refused too: ``json.loads`` would keep the
last value, silently dropping the first.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from .errors import AdvisorError
from .nesting import MAX_DEPTH, check_depth, too_deep

CHUNK_BYTES = 4 * 2**20
_BLANK = re.compile(r"[ \t\n\r]*")
# A key without escapes and its ":" (a dump.json's keys, nearly all): read in one match
_PLAIN_KEY = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:')
_DECODER = json.JSONDecoder()
# A value cut at the end of the text held fails at most this many characters before it ("-Infinit")
_TRUNCATED = 16


def text_chunks(handle: BinaryIO, path: str | Path, error: type[AdvisorError],
                size: int = CHUNK_BYTES) -> Iterator[str]:
    """The text of ``handle`` (UTF-8, a byte-order mark dropped) in pieces of about ``size`` bytes."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    while True:
        try:
            data = handle.read(size)
        except OSError as exc:
            raise error(f"cannot read: {exc.strerror or exc}", path=path) from None
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError:
            raise error("not UTF-8 text", path=path) from None
        if text:
            yield text
        if not data:
            return


class JsonText:
    """The text of a JSON document, parsed from the front; only what is not parsed yet is held
    (``buffer[position:]``, at least a chunk)."""

    def __init__(self, chunks: Iterator[str], path: str | Path, error: type[AdvisorError]) -> None:
        self.chunks, self.path, self.error = chunks, path, error
        self.top: dict[str, Any] = {}
        self.streamed = False              # whether the object asked for by ``members`` was found
        self.buffer, self.position, self.ended = "", 0, False
        self._counted, self._line = 0, 1   # buffer[_counted] is on line _line
        self._column = 0                   # buffer[0] is at this column (0-based) of its line
        self._line_of_key = 1
        self._start = 0                    # where the value parsed last starts in the buffer

    # --- the buffer --------------------------------------------------------------------------

    def _more(self, at_least: int = 1) -> bool:
        """Drop what is parsed, read at least ``at_least`` more characters; False at the end."""
        if self.ended:
            return False
        line = self.line_at(self.position)
        newline = self.buffer.rfind("\n", 0, self.position)
        self._column = self.position - newline - 1 if newline >= 0 else self._column + self.position
        pieces, added = [self.buffer[self.position:]], 0
        while added < at_least:
            piece = next(self.chunks, None)
            if piece is None:
                self.ended = True
                break
            pieces.append(piece)
            added += len(piece)
        self.buffer, self.position, self._counted, self._line = "".join(pieces), 0, 0, line
        return added > 0

    def line_at(self, position: int) -> int:
        """The line (1-based) of ``buffer[position]``; positions are asked for in file order."""
        if position >= self._counted:
            self._line += self.buffer.count("\n", self._counted, position)
            self._counted = position
            return self._line
        return self._line - self.buffer.count("\n", position, self._counted)

    def invalid(self, message: str, position: int | None = None) -> AdvisorError:
        """``not valid JSON: message`` at ``position`` (default: where parsing stands)."""
        position = self.position if position is None else position
        newline = self.buffer.rfind("\n", 0, position)
        column = position - newline if newline >= 0 else self._column + position + 1
        return self.error(f"not valid JSON: {message}", path=self.path, line=self.line_at(position), column=column)

    def peek(self) -> str:
        """The next character that is not blank (JSON's blanks), or "" at the end of the text."""
        while True:
            self.position = _BLANK.match(self.buffer, self.position).end()
            if self.position < len(self.buffer):
                return self.buffer[self.position]
            if not self._more():
                return ""

    def rest(self) -> str:
        """All the text not parsed yet (for a format read whole)."""
        text = self.buffer[self.position:] + "".join(self.chunks)
        self.buffer, self.position, self.ended = "", 0, True
        return text

    def _parse(self, decode: Callable[[str, int], tuple[Any, int]]) -> Any:
        """One value parsed from the current position. Where the text held may end too soon (the
        decoder fails at its end, or at the start of a string left open; a value ends right at its
        end), more is read, doubling what is held (a huge value costs O(its size)), and it is parsed
        again: an error is reported only from the whole text."""
        self.peek()
        while True:
            try:
                value, end = decode(self.buffer, self.position)
            except json.JSONDecodeError as exc:
                if not self.ended and (exc.pos >= len(self.buffer) - _TRUNCATED
                                       or exc.msg.startswith("Unterminated string")):
                    self._more(len(self.buffer) - self.position)
                    continue
                raise self.invalid(exc.msg, exc.pos) from None
            except RecursionError:
                raise too_deep(self.path, self.error, self.line_at(self.position)) from None
            except ValueError as exc:            # an integer of more than 4,300 digits (maybe cut short)
                if not self.ended:
                    self._more(len(self.buffer) - self.position)
                    continue
                raise self.invalid(str(exc)) from None
            if end == len(self.buffer) and not self.ended:
                self._more(len(self.buffer) - self.position)
                continue
            self._start, self.position = self.position, end
            return value

    def _value(self, depth: int, line: int | None = None) -> Any:
        """The next value, at level ``depth`` of the document, its nesting checked. Each level opens
        with a bracket: a value holding fewer brackets than the levels left cannot be too deep and is
        not walked (nearly every member of a dump.json: walking them was a third of reading one)."""
        value = self._parse(_DECODER.raw_decode)
        text, start, end = self.buffer, self._start, self.position
        if depth - 1 + text.count("[", start, end) + text.count("{", start, end) > MAX_DEPTH:
            check_depth(value, self.path, self.error, depth=depth, line=line)
        return value

    def _string(self) -> str:
        return self._parse(lambda text, at: json.decoder.scanstring(text, at + 1))

    def _expect(self, character: str, message: str) -> None:
        if self.peek() != character:
            raise self.invalid(message)
        self.position += 1

    # --- the document ------------------------------------------------------------------------

    def members(self, name: str) -> Iterator[tuple[str, Any, int]]:
        """``(key, value, line of the key)`` for each member of the object that is the top-level
        object's member ``name``, in file order. Every other top-level member (or ``name`` when it
        is not an object) is parsed whole into ``top``. The whole text is checked."""
        self._expect("{", "Expecting value")
        for key in self._keys():
            if key == name and self.peek() == "{":
                if self.streamed:
                    raise self.error("given twice in one object", path=self.path, line=self._line_of_key, field=name)
                self.streamed = True
                yield from self._object_members(key)
            else:
                self.top[key] = self._value(depth=2)
        if self.peek():
            raise self.invalid("Extra data")

    def _object_members(self, name: str) -> Iterator[tuple[str, Any, int]]:
        self.position += 1   # the "{"
        seen: set[str] = set()
        for key in self._keys():
            line = self._line_of_key
            if key in seen:
                raise self.error("given twice in one object", path=self.path, line=line, field=f"{name}.{key}")
            seen.add(key)
            yield key, self._value(depth=3, line=line), line

    def _keys(self) -> Iterator[str]:
        """The keys of the object whose "{" was just read, each followed by its ":" (the caller
        parses the value); ends after the closing "}"."""
        if self.peek() == "}":
            self.position += 1
            return
        while True:
            if self.peek() != '"':
                raise self.invalid("Expecting property name enclosed in double quotes")
            self._line_of_key = self.line_at(self.position)
            plain = _PLAIN_KEY.match(self.buffer, self.position)
            if plain is not None:
                key, self.position = plain.group(1), plain.end()
            else:   # escapes, or the text held ends inside the key: parsed (and read on) by the decoder
                key = self._string()
                self._expect(":", "Expecting ':' delimiter")
            yield key
            following = self.peek()
            self.position += 1
            if following == "}":
                return
            if following != ",":
                self.position -= 1
                raise self.invalid("Expecting ',' delimiter")
