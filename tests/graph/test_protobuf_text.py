"""The schema-less protobuf text parser: every piece of syntax GE and ONNX text dumps use, and
errors that point at the line."""

from __future__ import annotations

import math

import pytest

from advisor.graph.protobuf_text import ProtobufTextError, Repeated, many, one, parse


def test_scalars_keep_their_types():
    doc = parse('i: 7 n: -1 f: 1.5e-05 g: .5 h: 1.0f x: 0x1F b: true c: false e: DT_FLOAT s: "text"')
    assert doc == {"i": 7, "n": -1, "f": 1.5e-05, "g": 0.5, "h": 1.0, "x": 31, "b": True, "c": False,
                   "e": "DT_FLOAT", "s": "text"}


def test_special_floats():
    doc = parse("a: inf b: -inf c: nan")
    assert doc["a"] == math.inf and doc["b"] == -math.inf and math.isnan(doc["c"])


def test_nested_messages_with_and_without_colon_and_angle_brackets():
    doc = parse('graph { name: "g" op: { name: "a" } op < name: "b" > }')
    assert doc == {"graph": {"name": "g", "op": [{"name": "a"}, {"name": "b"}]}}


def test_a_field_seen_once_is_bare_and_a_repeated_one_is_a_list():
    doc = parse('op { input: "x:0" } op { input: "x:0" input: "y:-1" }')
    first, second = doc["op"]
    assert first["input"] == "x:0" and second["input"] == ["x:0", "y:-1"]
    assert isinstance(doc["op"], Repeated)
    assert many(first["input"]) == ["x:0"] and many(None) == [] and one(second["input"]) == "y:-1"


def test_list_syntax_and_separators():
    doc = parse("dims: [1, 2, 3]; dims: 4, empty: [] nodes: [{a: 1}, {a: 2}] one: [ENUM]")
    assert doc["dims"] == [1, 2, 3, 4] and doc["empty"] == []
    assert doc["nodes"] == [{"a": 1}, {"a": 2}] and doc["one"] == ["ENUM"]


def test_string_escapes_decode_bytes_as_utf8():
    # GE prints bytes fields with octal escapes: \344\270\255 is UTF-8 for 中
    doc = parse(r's: "a\"b\\c\n\t\x41\101\344\270\255\u00e9" q: ' + r"'it\'s'")
    assert doc["s"] == 'a"b\\c\n\tAA中é'
    assert doc["q"] == "it's"


def test_adjacent_strings_concatenate():
    assert parse('s: "ab" "cd"\n  \'ef\'')["s"] == "abcdef"


def test_comments_are_ignored_but_not_inside_strings():
    doc = parse('# header\na: 1  # trailing\ns: "# not a comment"\n')
    assert doc == {"a": 1, "s": "# not a comment"}


def test_extension_and_any_names():
    doc = parse("[ext.field]: 3 [type.googleapis.com/pkg.Msg] { x: 1 }")
    assert doc == {"[ext.field]": 3, "[type.googleapis.com/pkg.Msg]": {"x": 1}}


def test_empty_document_and_empty_message():
    assert parse("") == {}
    assert parse("  \n# only a comment\n") == {}
    assert parse("shape { }") == {"shape": {}}


@pytest.mark.parametrize(("text", "line", "message"), [
    ('a: 1\nb: "open\n', 2, "unterminated string"),
    ("graph {\n  op {\n    name: 1\n  }\n", 4, "missing '}'"),
    ("a: 1\n}\n", 2, "expected a field name"),
    ("a: 1\nb c\n", 2, "expected ':' or '{'"),
    ("a:\n", 1, "missing a value"),
    ('\n\ns: "\\q"', 3, "invalid escape"),
    ("a: [1 2]", 1, "expected ',' or ']'"),
    ("a: @", 1, "expected a value"),
    ("a { b: 1 >", 1, "expected a field name"),
    ("# c\n# c\nx: 1.2.3", 3, "invalid number"),
])
def test_syntax_errors_name_the_line(text, line, message):
    with pytest.raises(ProtobufTextError) as caught:
        parse(text)
    assert caught.value.line == line
    assert message in caught.value.message


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(ProtobufTextError, match="nested too deeply"):
        parse("a { " * 5000 + "}" * 5000)
