"""The graph neighbourhood drawn in the HTML report: inline SVG, escaped names, nothing fetched."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from advisor.diagnosis import GraphNode, Neighbourhood
from advisor.report.graph_svg import render_graph_svg
from advisor.report.labels import labels_for

EVIL = '<script>alert("x")</script>&\'"'


def hood(focus_name: str = "Conv_3", fused: tuple[str, ...] = ("Conv_3", "PRelu_4")) -> Neighbourhood:
    nodes = [GraphNode(EVIL, "Data", "input", cosine=1.0, deviates=False),
             GraphNode(focus_name, "Conv2D<x>", "focus", fused_from=list(fused), passes=[EVIL], cosine=0.7,
                       deviates=True),
             GraphNode("Relu&1", "Relu", "output")]
    return Neighbourhood(focus=focus_name, nodes=nodes, edges=[(EVIL, focus_name), (focus_name, "Relu&1")],
                         more_inputs=2)


def test_names_are_escaped_and_the_svg_is_well_formed():
    svg = render_graph_svg(hood(fused=("a<b", EVIL)), labels_for("en"))
    assert "<script" not in svg and "&lt;script&gt;" in svg and "Relu&amp;1" in svg
    root = ET.fromstring(svg)   # well-formed XML
    assert root.tag.endswith("svg")
    texts = "".join(root.itertext())
    assert EVIL[:20] in texts and "+2 more inputs" in texts and "a<b" in texts


def test_nothing_to_draw_without_a_neighbourhood():
    assert render_graph_svg(None, labels_for("en")) is None
    assert render_graph_svg(Neighbourhood(focus="x", nodes=[], edges=[]), labels_for("zh")) is None


def test_long_names_are_shortened_and_many_fused_ops_summarised():
    svg = render_graph_svg(hood("x" * 200, tuple(f"op_{i}" for i in range(40))), labels_for("zh"))
    drawn = [t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert drawn and all("x" * 200 not in t for t in drawn) and "… +28" in svg and "融合自" in svg


def test_an_op_is_never_fused_from_itself():
    # The ONNX join lists the op's own name among its original ops when it kept its name.
    alone = ET.fromstring(render_graph_svg(hood(fused=("Conv_3",)), labels_for("en")))
    assert "fused from" not in "".join(alone.itertext())
    fused = ET.fromstring(render_graph_svg(hood(fused=("Conv_3", "PRelu_4")), labels_for("en")))
    drawn = [t.text for t in fused.iter("{http://www.w3.org/2000/svg}text")]
    assert "PRelu_4" in drawn and drawn.count("Conv_3") == 1           # the box, not a fused-from line
    tips = [t.text for t in fused.iter("{http://www.w3.org/2000/svg}title") if t.text.startswith("Conv_3")]
    assert tips == ["Conv_3 (Conv2D<x>)\nfused from: PRelu_4\nfusion passes: " + EVIL]
