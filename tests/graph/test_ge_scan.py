"""A GE dump in the layout GE prints (DebugString) is read by its indentation (``ge_scan``) into the
graph the protobuf text parser gives, on real dumps, generated Build-stage dumps and every value
shape, and GE's ONNX-text dumps into the parser's document; anything in another layout, and every
malformed file, is read by the parser as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.errors import InputFormatError
from advisor.graph import ge_ops, ge_scan, read_graph
from advisor.graph.protobuf_text import parse
from benchmarks.graph_load import _op, write_dump
from tests.graph.conftest import GE_PROTO_1, GE_PROTO_11, GE_PROTO_OLD, REALDATA
from tests.graph.test_ge_text import FUSED_DUMP

REAL_GE_DUMPS = sorted(REALDATA.rglob("*ge_proto*.txt"))
REAL_ONNX_TEXT = sorted(REALDATA.rglob("*ge_onnx*.pbtxt"))


def graph_state(graph) -> tuple:
    return (graph.name, graph.nodes, graph.inputs, graph.outputs, graph.attributes, graph.subgraphs, graph.links)


def scanned_and_parsed(text: str) -> tuple[tuple, tuple]:
    """The graph built from ``ge_scan`` and from the protobuf text parser, for one text."""
    document = ge_scan.scan(text)
    assert document is not None, "not read by its layout"
    path = Path("dump.txt")
    scanned = ge_ops.build_graph(document, source=path, format="ge-text")
    parsed = ge_ops.build_graph(parse(text), source=path, format="ge-text")
    return graph_state(scanned), graph_state(parsed)


def debug_string(message: dict[str, Any], indent: int = 0) -> str:
    """A parsed message printed in the layout GE prints: one field per line, two spaces a level."""
    pad, lines = " " * indent, []
    for name, value in message.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                lines.append(f"{pad}{name} {{\n{debug_string(item, indent + 2)}{pad}}}\n")
            elif isinstance(item, bool):
                lines.append(f"{pad}{name}: {str(item).lower()}\n")
            elif isinstance(item, str):
                escaped = item.encode("utf-8").decode("latin-1").encode("unicode_escape").decode("ascii")
                lines.append(f'{pad}{name}: "{escaped.replace(chr(34), chr(92) + chr(34))}"\n')
            else:
                lines.append(f"{pad}{name}: {item!r}\n")
    return "".join(lines)


@pytest.mark.parametrize("path", REAL_GE_DUMPS, ids=lambda p: p.name[-40:])
def test_real_dumps_are_read_by_their_layout_into_the_parsers_graph(path):
    scanned, parsed = scanned_and_parsed(path.read_text(encoding="utf-8-sig", errors="replace"))
    assert scanned == parsed


def test_the_real_dumps_are_all_there():
    assert {str(REALDATA / p) for p in (GE_PROTO_1, GE_PROTO_11, GE_PROTO_OLD)} <= {str(p) for p in REAL_GE_DUMPS}


@pytest.mark.parametrize("detailed", [True, False])
def test_generated_build_dumps_are_read_into_the_parsers_graph(tmp_path, detailed):
    path = tmp_path / "ge_proto_00000001_graph_0_Build.txt"
    write_dump(path, (_op(i, detailed=detailed) for i in range(80)))
    scanned, parsed = scanned_and_parsed(path.read_text(encoding="utf-8"))
    assert scanned == parsed
    assert len(scanned[1]) == 80


# Every value shape an attribute or descriptor can take, escapes, repeats, subgraphs, src_name inputs.
SHAPES = r"""
name: "model"
attr { key: "atc_cmdline" value { s: "atc --model=x.onnx" } }
attr { key: "soc" value { list { s: "Ascend310" s: "Ascend910" val_type: VT_LIST_STRING } } }
graph {
  name: "root" input: "x:0" output: "call:0"
  attr { key: "_session_graph_id" value { s: "0_1" } }
  attr { key: "nums" value { list { i: 1 i: -2 val_type: VT_LIST_INT } } }
  op { name: "x" type: "Data" input: "" id: 1
       output_desc { dtype: DT_FLOAT layout: "NCHW" shape { dim: 1 dim: 3 } } }
  op { name: "call" type: "PartitionedCall" src_name: "x" src_index: 0 subgraph_name: "sub_0" id: 2
       input_desc { } output_desc { dtype: DT_FLOAT16 } }
  op { name: "esc\"aped\\name\346\227\245" type: "Conv2D" input: "x:0" input: "call:-1" id: 3 stream_id: 4
       attr { key: "ratio" value { f: 0.5 } } attr { key: "whole" value { f: 2 } }
       attr { key: "huge" value { f: -inf } } attr { key: "hex" value { i: 0x1F } }
       attr { key: "flag" value { b: true } } attr { key: "no" value { b: false } }
       attr { key: "dt" value { dt: 1 } } attr { key: "bytes" value { bt: "\001\002" } }
       attr { key: "tab\tkey" value { s: "line\nbreak" } } attr { key: "unset" value { } }
       attr { key: "empty" value { list { val_type: VT_LIST_NONE } } }
       attr { key: "floats" value { list { f: 1.5 f: 2 } } } attr { key: "bools" value { list { b: true b: false } } }
       attr { key: "names" value { list { s: "a\\b" s: "c" } } }
       attr { key: "pads" value { list_list_int { list_list_i { list_i: 1 list_i: 2 } list_list_i { } } } }
       attr { key: "fn" value { func { name: "f" attr { key: "k" value { i: 7 } } } } }
       attr { key: "td" value { td { dtype: DT_INT8 shape { dim: 4 } } } }
       attr { key: "t" value { t { desc { dtype: DT_FLOAT } data: "\000" } } }
       attr { key: "g" value { g { name: "body" } } }
       attr { key: "_datadump_original_op_names" value { list { s: "c1" s: "c1" s: "b2" } } }
       attr { key: "pass_name" value { s: "ConvBnFusionPass" } }
       attr { key: "ratio" value { f: 0.25 } }
       output_desc { dtype: DT_FLOAT16 layout: "NC1HWC0" shape { dim: 1 dim: 1 dim: 3 dim: 16 }
                     attr { key: "origin_format" value { s: "NCHW" } }
                     attr { key: "origin_data_type" value { s: "DT_FLOAT" } }
                     attr { key: "origin_shape" value { list { i: 1 i: 3 val_type: VT_LIST_INT } } }
                     attr { key: "other" value { list { s: "ignored" } } }
                     attr { key: "other_tensor" value { t { desc { } } } }
                     size: 1024 }
       output_desc { dtype: DT_UNDEFINED shape { } }
       workspace_bytes: 0 has_out_attr: true name: "renamed" }
  op { }
}
graph {
  name: "sub_0"
  op { name: "sub_x" type: "Data" attr { key: "_parent_node_index" value { i: 0 } } }
  op { name: "sub_out" type: "NetOutput" input: "sub_x:0" }
}
"""


def test_every_value_shape_is_read_as_the_parser_reads_it():
    text = debug_string(parse(SHAPES))
    scanned, parsed = scanned_and_parsed(text)
    assert scanned == parsed
    nodes = {n.name: n for n in scanned[1]}
    conv = nodes["renamed"]
    assert conv.attributes["ratio"] == 0.25 and list(conv.attributes)[0] == "ratio"  # the last wins, in place
    assert conv.attributes["tab\tkey"] == "line\nbreak" and conv.attributes["names"] == ["a\\b", "c"]
    assert conv.attributes["pads"] == [[1, 2], []] and conv.attributes["fn"]["attr"] == {"k": 7}
    assert conv.output_descs[0].origin_shape == (1, 3) and conv.output_descs[1].shape == ()


def test_the_fused_dump_printed_as_ge_prints_it_reads_the_same(tmp_path):
    text = debug_string(parse(FUSED_DUMP))
    scanned, parsed = scanned_and_parsed(text)
    assert scanned == parsed
    path = tmp_path / "ge_proto_00000000_Build.txt"
    path.write_text(text, encoding="utf-8")
    assert graph_state(read_graph(path)) == scanned


@pytest.mark.parametrize("text", [
    'graph {\n  name: "g"  # a comment\n}\n',                   # a comment
    'graph {\n\tname: "g"\n}\n',                                 # a tab
    'graph {\n  name: "g" type: "b"\n}\n',                       # two fields on a line
    'graph {\n  op {\n    name: "a"\n  }\n',                     # truncated: no closer
    'graph {\n  op {\n   name: "a"\n  }\n}\n',                   # three spaces
    'graph {\n  op {\n    name: "a"\n    }\n  }\n}\n',           # a closer too many
    'graph {\n  name: 1.2.3\n}\n',                               # a bad number
    'graph {\n  name: "a\\qb"\n}\n',                             # a bad escape
    'graph {\n  op {\n    attr {\n      key: "k"\n      value {\n        s: "a\\q"\n      }\n    }\n  }\n}\n',
])
def test_other_layouts_and_bad_values_are_left_to_the_parser(text):
    assert ge_scan.scan(text) is None


def test_blank_lines_between_graphs_and_ops_are_read_past():
    text = debug_string(parse(FUSED_DUMP))
    text = "\n" + text.replace("\n  op {\n", "\n\n  op {\n", 1) + "\n\n"
    scanned, parsed = scanned_and_parsed(text)
    assert scanned == parsed


@pytest.mark.parametrize("text", [
    'ir_version: 7\ngraph {\n  name: "g"\n  input: "x"\n}\n',                     # no ops
    'graph {\n  node {\n    op_type: "Relu"\n    attribute {\n      name: "a"\n      i: 1\n    }\n  }\n}\n',
    'graph {\n  name: "g"\n  extra {\n    attr {\n      key: "k"\n      value {\n        i: 1\n      }\n'
    '    }\n    attr {\n      key: "l"\n      value {\n        list {\n          s: "a"\n        }\n      }\n    }\n'
    '  }\n}\n',                                                                    # a message GE does not write
])
def test_other_messages_in_this_layout_read_as_the_parser_reads_them(text):
    assert ge_scan.scan(text) == parse(text)


@pytest.mark.parametrize("path", REAL_ONNX_TEXT, ids=lambda p: p.name[-40:])
def test_real_onnx_text_dumps_are_read_by_their_layout_as_the_parser_reads_them(path):
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    document = ge_scan.scan(text)
    assert document is not None and document == parse(text)


@pytest.mark.parametrize("text, line", [
    ('graph {\n  op {\n    name: "a"\n  }\n', 4),                 # truncated: said at the end
    ('graph {\n  op {\n    name: "a"\n    }\n  }\n}\n', 6),       # a closer too many
    ('graph {\n  name: 1.2.3\n}\n', 2),                           # a bad number
    ('graph {\n  op {\n    attr {\n      key: "k"\n      value {\n        s: "a\\q"\n      }\n    }\n  }\n}\n', 6),
])
def test_errors_in_a_ge_layout_still_name_their_line(tmp_path, text, line):
    assert ge_scan.scan(text) is None
    path = tmp_path / "ge_proto_00000000_Build.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_graph(path)
    assert caught.value.line == line and str(path) in str(caught.value)


def test_a_malformed_op_in_ge_layout_names_the_op_and_its_line(tmp_path):
    text = ('graph {\n  name: "g"\n  op {\n    name: "a"\n    type: "Relu"\n  }\n'
            '  op {\n    name: "b"\n    id: "seven"\n  }\n}\n')
    assert ge_scan.scan(text) is not None
    path = tmp_path / "ge_proto_00000000_Build.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        read_graph(path)
    assert "'b'" in str(caught.value) and caught.value.line == 8
