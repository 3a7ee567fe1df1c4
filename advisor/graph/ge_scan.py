"""GE graph dumps as GE prints them, read by their indentation: the fast path of ``ge_text``.

DUMP_GE_GRAPH writes ``DebugString`` output: one field per line, each message's fields indented two
spaces deeper than the message, its ``}`` at the message's own indent. So a message's body is the run
of lines indented deeper than its opener: a graph's or an op's ends at the first ``}`` line at its
indent (``str.find``), and one compiled regex per indent splits an op's body into its fields in C: a
whole one-value attribute (``attr { key value { s: ... } }``, most of a dump's lines) or list
attribute in one match, a ``name: value`` line, or a sub-message with its body. Python then sees one
tuple per field of an op, not one per line or token, and only for what ``ge_ops.build_node`` reads:
op fields it does not read (``stream_id``, ``workspace``...) are not decoded, tensor descriptors are
read for their dtype, shape, layout and ``origin_*`` attributes only (once per distinct descriptor
text: a tensor is most often described alike by the op that writes it and the ops that read it), and
attribute maps arrive decoded (``DecodedAttrs``), with the values ``ge_ops.attr_value`` gives.

Other messages in this layout (GE's ONNX-text dumps: ``ir_version``, ``graph { node {...} }``) are
read field by field the same way into plain dicts. ``scan(text)`` returns the document in the shape
``protobuf_text.parse`` gives (an op's fields as lists, which ``many``/``one`` read alike), or None
as soon as anything is not in that layout (another indent, a comment, two fields on a line, a value
it cannot decode, a missing ``}``...): ``ge_text`` then parses the file with ``protobuf_text``,
which reads any protobuf text and reports errors with their line. Attributes of
rarer shapes (a tensor, a function, nested lists) are handed to ``protobuf_text`` one at a time.
Unread messages of an op are skipped without being checked line by line: a broken line there is
not reported (their indentation is).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from advisor.graph.ge_ops import _LIST_KEYS, DESC_ATTRS, DecodedAttrs, _scalar, attr_entry, attr_value, desc_of
from advisor.graph.model import TensorDesc
from advisor.graph.protobuf_text import Repeated, _line_value, _unescape, parse

__all__ = ["scan"]

_STRING = r'("[^"\\\n]*(?:\\.[^"\\\n]*)*")'
# A value: a string, a number, an enum name or a special float (-inf); ``_line_value`` decodes it.
_VALUE = r'(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"|-?[.\d][\w.+-]*|-?[A-Za-z_][\w.]*)'
_LINE_VALUE = f"({_VALUE})"
_PAIRS = re.compile(rf"^ *([A-Za-z_]\w*): {_LINE_VALUE}\n", re.MULTILINE)  # name: value lines of a checked body
_OP_FIELDS = frozenset({"name", "type", "input", "src_name", "src_index", "id", "subgraph_name"})
_DESCS = frozenset({"input_desc", "output_desc"})
_BOOLS = {"true": True, "false": False}


class _NotThisLayout(Exception):
    """The text is not in DebugString's layout (or holds a value this reader leaves to the parser)."""


@lru_cache(maxsize=16)
def _fields(indent: int) -> re.Pattern[str]:
    """The fields of a body whose lines are indented by ``indent``: one match per field, groups (attr
    key, kind, value | list attr key, its ``name: value`` lines | name, value | message name, message
    body | anything else)."""
    pad = " " * indent
    return re.compile(
        rf"^(?:{pad}attr {{\n{pad}  key: {_STRING}\n{pad}  value {{\n"    # attr { key: "k" value {
        rf"{pad}    ([a-z_]\w*): {_LINE_VALUE}\n{pad}  }}\n{pad}}}"        #   s: "v" } }
        rf"|{pad}attr {{\n{pad}  key: {_STRING}\n{pad}  value {{\n"      # attr { key: "k" value {
        rf"{pad}    list {{\n((?:{pad}      [A-Za-z_]\w*: {_VALUE}\n)*+)"  #   list { i: 1 i: 2
        rf"{pad}    }}\n{pad}  }}\n{pad}}}"                                 #   } } }
        rf"|{pad}([A-Za-z_]\w*): {_LINE_VALUE}"                            # name: value
        rf"|{pad}([A-Za-z_]\w*) {{\n((?:{pad} [^\n]*\n)*+){pad}}}"       # name { deeper lines }
        r"|([^\n]*))\n",                                                  # anything else
        re.MULTILINE,
    )


def scan(text: str) -> dict[str, Any] | None:
    """The document of a protobuf text in DebugString's layout (a GE dump: its ModelDef), or None (see the
    module docstring)."""
    if not text.endswith("\n"):
        text += "\n"
    try:
        return _model(text)
    except (_NotThisLayout, ValueError, TypeError, AttributeError, RecursionError):
        return None  # the parser reads it (and says what is wrong with it, and where)


def _model(text: str) -> dict[str, Any]:
    model: dict[str, Any] = {}
    attrs = DecodedAttrs()
    descs: dict[str, TensorDesc] = {}
    for start, end, item in _items(text, 0, len(text), 0, "graph {\n"):
        if item is None:
            _put(model, "graph", _graph(text, start, end, descs))
        elif not _attribute(attrs, item):
            _field(model, item, 2)
    if attrs:
        model["attr"] = attrs
    return model


def _graph(text: str, start: int, end: int, descs: dict[str, TensorDesc]) -> dict[str, Any]:
    graph: dict[str, Any] = {}
    attrs = DecodedAttrs()
    ops: list[dict[str, Any]] = []
    for op_start, op_end, item in _items(text, start, end, 2, "  op {\n"):
        if item is None:
            ops.append(_op(text, op_start, op_end, descs))
        elif not _attribute(attrs, item):
            _field(graph, item, 4)
    if ops:
        graph["op"] = ops
    if attrs:
        graph["attr"] = attrs
    return graph


def _items(text: str, start: int, end: int, indent: int, opener: str) -> Iterator[tuple[int, int, tuple | None]]:
    """The fields of a model or graph body: (start, end, None) for each ``opener`` message (a graph,
    an op: its body, found by its closing line, not matched line by line: most of the file), else
    (pos, pos, the field's groups)."""
    pattern = _fields(indent)
    closer = "\n" + " " * indent + "}\n"
    pos = start
    while pos < end:
        if text[pos] == "\n":  # a blank line between a model's or a graph's fields (an edited file's end)
            pos += 1
        elif text.startswith(opener, pos):
            close = text.find(closer, pos + len(opener) - 1, end)
            if close < 0:
                raise _NotThisLayout  # truncated, or not indented as GE indents
            yield pos + len(opener), close + 1, None
            pos = close + len(closer)
        else:
            m = pattern.match(text, pos, end)
            yield pos, pos, m.groups()
            pos = m.end()


def _field(message: dict[str, Any], item: tuple, indent: int) -> None:
    """A field of a model or graph other than its graphs, ops and attributes (an ONNX model's are all
    here): in the parser's shape. ``indent``: the indent of a sub-message's fields."""
    name, value, block, body = item[5], item[6], item[7], item[8]
    if name:
        _put(message, name, _line_value(value))
    elif block:
        _put(message, block, _message(body, indent))
    else:
        raise _NotThisLayout


def _message(body: str, indent: int) -> dict[str, Any]:
    """Any message in this layout, as the parser gives it (ONNX text's nodes, tensors, value infos...)."""
    message: dict[str, Any] = {}
    for akey, kind, token, lkey, lbody, name, value, block, inner, _ in _fields(indent).findall(body):
        if akey:
            _put(message, "attr", {"key": _key(akey), "value": {kind: _line_value(token)}})
        elif lkey:
            items: dict[str, Any] = {}
            for item_name, item_value in _PAIRS.findall(lbody):
                _put(items, item_name, _line_value(item_value))
            _put(message, "attr", {"key": _key(lkey), "value": {"list": items}})
        elif name:
            _put(message, name, _line_value(value))
        elif block:
            _put(message, block, _message(inner, indent + 2))
        else:
            raise _NotThisLayout
    return message


def _attribute(attrs: DecodedAttrs, item: tuple) -> bool:
    """Adds ``item`` to ``attrs`` when it is an attribute; False when it is not."""
    akey, kind, token, lkey, lbody, _, _, block, body, _ = item
    if akey:
        attrs[_key(akey)] = _attr(kind, token)
    elif lkey:
        attrs[_key(lkey)] = _list(lbody)
    elif block == "attr":
        key, value = _attr_message(body)
        attrs[key] = value
    else:
        return False
    return True


def _op(text: str, start: int, end: int, descs: dict[str, TensorDesc]) -> dict[str, Any]:
    """An OpDef: the fields ``build_node`` reads, as lists; attributes decoded; descriptors as
    TensorDesc (``descs``: by body text, as a tensor is most often described alike by the op that
    writes it and the ops that read it)."""
    op: dict[str, Any] = {}
    attrs = DecodedAttrs()
    for akey, kind, token, lkey, lbody, name, value, block, body, _ in _fields(4).findall(text, start, end):
        if akey:  # the usual attributes decoded inline: this runs for most of the lines of a dump
            key = akey[1:-1] if "\\" not in akey else _key(akey)
            if kind == "s" and token[0] == '"' and "\\" not in token:
                attrs[key] = token[1:-1]
            elif kind == "b" and token in _BOOLS:
                attrs[key] = _BOOLS[token]
            elif kind == "i" and token.isdecimal():
                attrs[key] = int(token)
            else:
                attrs[key] = _attr(kind, token)
        elif lkey:
            attrs[_key(lkey)] = _list(lbody)
        elif name:
            if name in _OP_FIELDS:
                op.setdefault(name, []).append(_line_value(value))
        elif block:
            if block in _DESCS:
                desc = descs.get(body)
                if desc is None:
                    desc = descs[body] = _desc(body)
                op.setdefault(block, []).append(desc)
            elif block == "attr":
                key, val = _attr_message(body)
                attrs[key] = val
            # any other message of an op (GE adds some over versions) is not read
        else:
            raise _NotThisLayout
    op["attr"] = attrs
    return op


def _desc(body: str) -> TensorDesc:
    """A TensorDescriptor at indent 6: dtype, shape, layout and the origin_* attributes."""
    dtype = layout = dims = None
    extra: dict[str, Any] = {}
    for akey, kind, token, lkey, lbody, name, value, block, inner, _ in _fields(6).findall(body):
        if akey:
            key = _key(akey)
            if key in DESC_ATTRS:
                extra[key] = _attr(kind, token)
        elif lkey:
            key = _key(lkey)
            if key in DESC_ATTRS:
                extra[key] = _list(lbody)
        elif name:
            if name == "dtype":
                dtype = _line_value(value)
            elif name == "layout":
                layout = _line_value(value)
        elif block == "shape":
            pairs = _PAIRS.findall(inner)
            if len(pairs) != inner.count("\n"):
                raise _NotThisLayout  # a message inside a shape
            dims = [_line_value(v) for n, v in pairs if n == "dim"]
        elif block == "attr":
            if _message_key(inner) in DESC_ATTRS:
                key, val = _attr_message(inner)
                extra[key] = val
        elif not block:
            raise _NotThisLayout
    return desc_of(dtype, dims, layout, extra)


def _attr(kind: str, token: str) -> Any:
    """A one-value attribute ``kind: token`` decoded as ``attr_value`` decodes it."""
    first = token[0]
    if kind == "s" and first == '"':
        return _unescape(token[1:-1]) if "\\" in token else token[1:-1]
    if kind == "i" and first != '"':
        try:
            return int(token)
        except ValueError:
            pass
    elif kind == "b" and token in _BOOLS:
        return _BOOLS[token]
    return attr_value({kind: _line_value(token)})


def _list(body: str) -> list:
    """The ``name: value`` lines of ``list { ... }`` as ``attr_value`` reads them (the first kind
    there is of ``s``, ``i``, ``f``...; ``val_type`` says nothing more)."""
    pairs = _PAIRS.findall(body)
    for kind in _LIST_KEYS:
        values = [token for name, token in pairs if name == kind]
        if values:
            if kind == "s" and not any("\\" in v or v[0] != '"' for v in values):
                return [v[1:-1] for v in values]
            return [_scalar(kind, _line_value(v)) for v in values]
    return []


def _attr_message(body: str) -> tuple[str, Any]:
    """An ``attr { ... }`` entry of a rarer shape (a tensor, a function, nested lists...): (key, value),
    by the parser."""
    return attr_entry(parse(body))


def _message_key(body: str) -> Any:
    """The key of an attr entry's body (its first line, as GE writes it)."""
    m = _PAIRS.match(body)
    if not m or m.group(1) != "key":
        raise _NotThisLayout
    return _line_value(m.group(2))


def _key(token: str) -> str:
    return _unescape(token[1:-1]) if "\\" in token else token[1:-1]


def _put(message: dict[str, Any], name: str, value: Any) -> None:
    """A field as ``protobuf_text`` stores it: a bare value, a ``Repeated`` list once it repeats."""
    if name in message:
        old = message[name]
        if type(old) is not Repeated:
            old = message[name] = Repeated([old])
        old.append(value)
    else:
        message[name] = value
