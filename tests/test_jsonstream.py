"""advisor.jsonstream: a JSON document read one member at a time, in chunks, as ``json.loads`` reads it
whole: the same values, the same errors at the same line and column, the same bounds."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from advisor import jsonstream
from advisor.errors import InputFormatError
from advisor.jsonstream import JsonText, text_chunks
from advisor.nesting import MAX_DEPTH, loads_json

REPO = Path(__file__).resolve().parents[1]
DUMP = REPO / "tests" / "data" / "msprobe_faults" / "fp16_overflow_target_dump.json"   # msprobe 26.2 wrote it
SIZES = (1, 2, 3, 7, 64, 4096)


def stream(text: str | bytes, size: int, path: str = "dump.json") -> JsonText:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return JsonText(text_chunks(io.BytesIO(data), path, InputFormatError, size=size), path, InputFormatError)


def read(text: str | bytes, size: int) -> tuple[list[tuple[str, object, int]], dict]:
    document = stream(text, size)
    members = list(document.members("data"))
    return members, document.top


def line_of_key(text: str, key: str) -> int:
    return text[:text.index(json.dumps(key))].count("\n") + 1


@pytest.mark.parametrize("size", SIZES)
def test_members_come_one_by_one_as_json_loads_reads_them(size):
    text = DUMP.read_text(encoding="utf-8")
    document = json.loads(text)
    members, top = read(text, size)
    assert [(key, value) for key, value, _ in members] == list(document["data"].items())
    assert [line for _, _, line in members] == [line_of_key(text, key) for key in document["data"]]
    assert top == {key: value for key, value in document.items() if key != "data"}


@pytest.mark.parametrize("size", SIZES)
def test_top_level_members_after_the_streamed_one_and_escaped_keys(size):
    text = '\ufeff{"data": {"a\\u00e9\\"b": [1, 2.5, -Infinity, NaN, "x"],\n "c": {}}, "framework": "mindspore"}'
    members, top = read(text, size)
    assert [(key, line) for key, _, line in members] == [('aé"b', 1), ("c", 2)]
    assert members[0][1][:3] == [1, 2.5, float("-inf")] and top == {"framework": "mindspore"}


BROKEN = [
    '{"data": {"a": [1,\n}',                      # a value missing
    '{"data": {"a": {"b": 1}\n "c": 2}}',           # a comma missing
    '{"data": {"a": 1,}}',                          # a trailing comma
    '{"data": {"a" 1}}',                            # a colon missing
    '{"data": {"a": 1}} x',                         # extra data
    '{"data": {"a": "never closed',                 # a string left open
    '{"task": tru, "data": {}}',                    # a literal cut short, before the streamed object
    '{"data": {"a": -Infinit}}',
    '{"data": {"a": 1}',                            # the document cut short
    '{\n  "data": {\n    "x": {"y": [1, 2, 3]},\n    "z": [1 2]\n  }\n}',
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("text", BROKEN)
def test_invalid_json_is_reported_at_the_line_and_column_json_loads_gives(text, size):
    with pytest.raises(InputFormatError) as expected:
        loads_json(text, "dump.json", InputFormatError)
    with pytest.raises(InputFormatError) as caught:
        read(text, size)
    assert (caught.value.line, caught.value.column, caught.value.message) == \
        (expected.value.line, expected.value.column, expected.value.message)
    assert caught.value.path == "dump.json"


@pytest.mark.parametrize("depth,refused", [(MAX_DEPTH - 2, False), (MAX_DEPTH - 1, True), (100_000, True)])
def test_nesting_is_counted_from_the_top_of_the_document(depth, refused):
    text = '{"data": {"a": ' + "[" * depth + "]" * depth + "}}"   # the member is at level 3
    if refused:
        with pytest.raises(InputFormatError, match=f"nested more than {MAX_DEPTH} levels"):
            read(text, 4096)
    else:
        assert read(text, 4096)[0][0][0] == "a"
    with pytest.raises(InputFormatError, match="nested more than"):
        read('{"task": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + ', "data": {}}', 4096)


def test_a_name_given_twice_is_refused_not_dropped():
    with pytest.raises(InputFormatError, match="given twice") as caught:
        read('{"data": {\n"a": 1,\n"a": 2}}', 4096)
    assert (caught.value.line, caught.value.field) == (3, "data.a")
    with pytest.raises(InputFormatError, match="given twice"):
        read('{"data": {}, "data": {}}', 4096)


def test_text_that_is_not_utf8_is_refused():
    with pytest.raises(InputFormatError, match="not UTF-8"):
        read('{"data": {"a\xe9": 1}}'.encode("latin-1"), 4096)


def test_only_what_is_not_parsed_yet_is_held():
    """A document of many chunks is read holding about a chunk and the member being parsed, never the
    text read before: the buffer stays small however long the document."""
    member = json.dumps({"input_args": [{"dtype": "torch.float16", "shape": [4, 16], "Max": 1.0}] * 3})
    text = '{"task": "statistics", "data": {' + ",\n".join(f'"call.{i}.forward": {member}' for i in range(5000)) + "}}"
    document = stream(text, 4096)
    held, members = 0, 0
    for _ in document.members("data"):
        held, members = max(held, len(document.buffer)), members + 1
    assert members == 5000 and len(text) > 200 * 4096
    assert held <= 2 * 4096 + len(member) + 40


def test_a_member_larger_than_many_chunks_is_parsed_a_few_times_not_once_per_chunk(monkeypatch):
    """A member far larger than a chunk is read by doubling what is held: a parse from its start per
    doubling (logarithmic), not per chunk (quadratic time)."""
    big = json.dumps(list(range(200_000)))
    attempts = []

    class Counting(json.JSONDecoder):
        def raw_decode(self, text, index=0):
            attempts.append(index)
            return super().raw_decode(text, index)

    monkeypatch.setattr(jsonstream, "_DECODER", Counting())
    ((key, value, _),) = list(read('{"data": {"big": ' + big + "}}", 64)[0])
    assert key == "big" and len(value) == 200_000
    assert len(big) // 64 > 10_000 and len(attempts) < 30
