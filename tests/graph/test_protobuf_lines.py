"""The line-at-a-time read of protobuf text (one field per line, as GE dumps are printed) gives what
the token parser gives, on real dumps and generated GE dumps; anything else goes to the token
parser, whose result and errors stay as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.graph import protobuf_text
from advisor.graph.protobuf_text import ProtobufTextError, parse
from benchmarks.graph_load import _op, write_dump

REALDATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "realdata"
DUMPS = sorted([*REALDATA.rglob("*ge_proto*.txt"), *REALDATA.rglob("*ge_onnx*.pbtxt")]) if REALDATA.is_dir() else []


def token_parse(text: str) -> dict:
    tokens = protobuf_text._TOKEN.findall(text)
    if "#" in text:
        tokens = [t for t in tokens if t[0] != "#"]
    tokens.append(protobuf_text._EOF)
    return protobuf_text._Parser(text, tokens).message(0, protobuf_text._EOF)[0]


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.name[-60:])
def test_real_dumps_read_line_by_line_as_by_tokens(path):
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    lines = protobuf_text._parse_lines(text)
    assert lines is not None  # DebugString output: one field per line
    assert lines == token_parse(text)


def test_a_generated_ge_dump_reads_line_by_line_as_by_tokens(tmp_path):
    path = tmp_path / "ge_proto_00000001_graph_0_Build.txt"
    write_dump(path, (_op(i, detailed=True) for i in range(60)))
    text = path.read_text(encoding="utf-8")
    lines = protobuf_text._parse_lines(text)
    assert lines is not None and lines == token_parse(text)
    assert len(lines["graph"]["op"]) == 60


LINE_SHAPED = """graph {
  name: "g"
  attr {
    key: "k"
    value {
      f: 1.5e-05
    }
  }
  attr {
    key: "n"
    value {
      i: -3
    }
  }
  op: {
    name: "a"
    type: "Conv2D"
    attr {
      key: "_datadump_original_op_names"
      value {
        list {
          s: "x"
          s: "y"
          val_type: VT_LIST_STRING
        }
      }
    }
    text: "say \\"hi\\"\\n\\346\\227\\245"
    flag: true
    big: 0x1F
    half: .5
    when: nan
  }

  op {
  }
}
"""


def test_line_shaped_text_keeps_every_value_type():
    assert protobuf_text._parse_lines(LINE_SHAPED) == token_parse(LINE_SHAPED)
    doc = parse(LINE_SHAPED)
    assert doc["graph"]["attr"][0]["value"]["f"] == 1.5e-05 and doc["graph"]["attr"][1]["value"]["i"] == -3
    op = doc["graph"]["op"][0]
    assert (op["big"], op["half"], op["flag"]) == (31, 0.5, True)
    assert op["attr"]["value"]["list"]["s"] == ["x", "y"]


@pytest.mark.parametrize("text", [
    'graph {\n  name: "g"  # a comment\n}\n',          # comment
    'graph {\n  dims: [1, 2]\n}\n',                    # list value
    'graph {\n  name: "a" type: "b"\n}\n',             # two fields on a line
    'graph <\n  name: "g"\n>\n',                       # angle brackets
    'graph {\n  name: "a"\n  "b"\n}\n',                # string continued on the next line
    'graph {\n  v: -inf\n}\n',                         # negative special float
])
def test_other_shapes_go_to_the_token_parser(text):
    assert protobuf_text._parse_lines(text) is None
    assert parse(text) == token_parse(text)


@pytest.mark.parametrize("text, line", [
    ('graph {\n  op {\n    name: "a"\n  }\n', 4),       # missing closer: said at the end
    ('graph {\n  name: "a"\n}\n}\n', 4),                 # closer too many
    ('graph {\n  n: 1.2.3\n}\n', 2),                     # bad number
    ('graph {\n  s: "a\\qb"\n}\n', 2),                  # bad escape
])
def test_errors_still_come_from_the_token_parser_with_their_line(text, line):
    assert protobuf_text._parse_lines(text) is None
    with pytest.raises(ProtobufTextError) as caught:
        parse(text)
    assert caught.value.line == line


def test_deep_nesting_is_left_to_the_token_parser():
    depth = protobuf_text._MAX_LINE_DEPTH + 5
    text = "".join(f"m{i} {{\n" for i in range(depth)) + "}\n" * depth
    assert protobuf_text._parse_lines(text) is None
    assert parse(text) == token_parse(text)
