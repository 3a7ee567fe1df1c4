"""Format detection by content, and one-line errors for everything that is not a supported graph."""

from __future__ import annotations

import pytest

from advisor.errors import InputFormatError
from advisor.graph import detect_format, read_fusion_result, read_graph
from tests.graph import conftest as names


@pytest.mark.parametrize(("name", "expected"), [
    (names.GE_PROTO_1, "ge-text"), (names.GE_PROTO_11, "ge-text"), (names.GE_PROTO_OLD, "ge-text"),
    (names.GE_ONNX_1, "onnx-text"), (names.GE_ONNX_11, "onnx-text"),
    (names.OM_TDNN, "om-json"), (names.OM_NMS, "om-json"), (names.ONNX_JSON, "onnx-json"),
    (names.FUSION_ASYS, "fusion-result"), (names.FUSION_CTPN, "fusion-result"),
    (names.FUSION_YOLO_ATC, "fusion-result"), (names.FUSION_YOLO_TORCH, "fusion-result"),
    (names.FUSION_INT8, "fusion-result"),
])
def test_every_real_graph_and_fusion_file_is_recognised_and_loads(realdata, name, expected):
    path = realdata(name)
    assert detect_format(path) == expected
    if expected == "fusion-result":
        assert read_fusion_result(path).passes
    else:
        graph = read_graph(path)
        assert len(graph) > 0 and graph.format == expected and graph.warnings == []


def test_detection_ignores_the_file_name(realdata, tmp_path):
    renamed = tmp_path / "graph.onnx"
    renamed.write_bytes(realdata(names.GE_PROTO_OLD).read_bytes())
    assert detect_format(renamed) == "ge-text" and len(read_graph(renamed)) == 5


@pytest.mark.parametrize("name", [names.ATB_MODEL, names.MODEL_TREE])
def test_other_json_layouts_are_rejected_with_what_was_expected(realdata, name):
    with pytest.raises(InputFormatError, match="unknown JSON layout: expected an OM model JSON") as caught:
        read_graph(realdata(name))
    assert "\n" not in str(caught.value) and name.split("/")[-1] in str(caught.value)


@pytest.mark.parametrize(("content", "message"), [
    (b"", "the file is empty"),
    (b"  \n\n", "the file is empty"),
    (b"IMOD\x00\x00\x00\x01binary", "atc --mode=1"),
    (b"[1, 2, 3]", "unknown JSON layout"),
    (b'{"a": 1,}', "not valid JSON"),
    (b"graph { op { name: 'x' ", "unexpected end of file"),
])
def test_bad_inputs_are_one_line_errors_naming_the_file(tmp_path, content, message):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    with pytest.raises(InputFormatError, match=message) as caught:
        read_graph(path)
    assert caught.value.path == str(path) and "\n" not in str(caught.value)


def test_a_binary_om_file_says_to_convert_it(tmp_path):
    path = tmp_path / "model.om"
    path.write_bytes(b"\x00\x01\x02\x03" * 64)
    with pytest.raises(InputFormatError, match="atc --mode=1 --om=MODEL.om --json=MODEL.json"):
        read_graph(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputFormatError, match="file not found"):
        read_graph(tmp_path / "absent.txt")
    with pytest.raises(InputFormatError, match="is a directory"):
        read_graph(tmp_path)


def test_utf8_bom_and_windows_line_ends(tmp_path):
    path = tmp_path / "ge_proto_1_Build.txt"
    path.write_bytes(b'\xef\xbb\xbfgraph {\r\n  name: "g"\r\n  op {\r\n    name: "a"\r\n'
                     b'    type: "Data"\r\n  }\r\n}\r\n')
    graph = read_graph(path)
    assert [n.name for n in graph] == ["a"] and graph.name == "g"


def test_the_format_readers_can_be_called_directly(realdata):
    from advisor.graph.ge_text import read_ge_text
    from advisor.graph.om_json import read_om_json

    assert len(read_ge_text(realdata(names.GE_PROTO_11))) == 18
    assert len(read_ge_text(realdata(names.GE_ONNX_11))) == 18
    assert read_om_json(realdata(names.OM_TDNN)).name == "tdnn"
    with pytest.raises(InputFormatError, match="not an OM model JSON"):
        read_om_json(realdata(names.ONNX_JSON))
