"""Op names into generated files, inert whatever they hold.

Op names come from the comparison and the model: untrusted text. Every name enters a file only as a
literal of that file's language (a Python string via ``repr``, a JSON string via ``json.dumps``, a
shell word via ``shlex.quote``, a protobuf text-format string with C escapes). Formats without any
quoting (ATC's keep_dtype list, trtexec's layer specs) take only the names they can hold; the
writers say how many they had to leave out. Comments never carry a name; what they do carry is made
printable first, so nothing can end a comment line early.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any


def py_str(value: str) -> str:
    """A Python string literal of ``value``."""
    return repr(str(value))


def py_list(values: Iterable[str], indent: str = "    ") -> str:
    """A Python list of string literals, one per line (``[]`` when empty)."""
    items = [f"{indent}{py_str(v)},\n" for v in values]
    return "[\n" + "".join(items) + "]" if items else "[]"


def py_dict(mapping: Mapping[str, Any], indent: str = "    ") -> str:
    """A Python dict of string keys to literals, one entry per line (``{}`` when empty)."""
    items = [f"{indent}{py_str(k)}: {py_value(v)},\n" for k, v in mapping.items()]
    return "{\n" + "".join(items) + "}" if items else "{}"


def py_value(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return py_str(value)


def json_text(data: Any) -> str:
    """A JSON document (deterministic: keys in the order given, two-space indent, trailing newline)."""
    return json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def shell_word(value: str) -> str:
    """One POSIX shell word that stands for exactly ``value``."""
    return shlex.quote(str(value))


def proto_str(value: str) -> str:
    """A protobuf text-format string literal: C escapes, and every byte outside printable ASCII in
    octal, so the file stays ASCII and no name can end the literal or the line."""
    out = []
    for byte in str(value).encode("utf-8", "surrogatepass"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def comment_text(value: Any) -> str:
    """``value`` made safe to put in a one-line comment: every unprintable character becomes '?'."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(value))


def plain_line(value: str) -> bool:
    """True when ``value`` can stand alone on a line of a format without quoting: printable, no
    surrounding blanks (tools strip them), not empty."""
    return bool(value) and value == value.strip() and value.isprintable()
