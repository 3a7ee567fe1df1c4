"""The inline SVG plot: well-formed, small, escaped, and honest about gaps."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from advisor.diagnosis import OpPoint, Series
from advisor.report.labels import labels_for
from advisor.report.plot import Marker, render_svg

SVG = "{http://www.w3.org/2000/svg}"
LABELS = labels_for("en")


def series(cosines: list[float | None], errors: list[float | None] | None = None, total: int | None = None,
           error_threshold: float | None = 0.05) -> Series:
    errors = errors if errors is not None else [0.01] * len(cosines)
    points = [OpPoint(index=i, op=f"op{i}", cosine=c, error=e)
              for i, (c, e) in enumerate(zip(cosines, errors, strict=True))]
    return Series(points=points, error_metric="relative_euclidean_distance", cosine_threshold=0.99,
                  error_threshold=error_threshold, total_ops=total or len(points))


def parse(svg: str | None) -> ET.Element:
    assert svg is not None
    return ET.fromstring(svg)


def test_no_series_means_no_plot() -> None:
    assert render_svg(None, [], LABELS) is None
    assert render_svg(series([]), [], LABELS) is None


def test_nan_and_missing_values_leave_gaps() -> None:
    root = parse(render_svg(series([0.999, 0.998, math.nan, 0.95, 0.94, None, 0.93, 0.92]), [], LABELS))
    cosine_lines = [p for p in root.iter(f"{SVG}polyline") if p.get("stroke") == "#2563eb"]
    assert len(cosine_lines) == 3
    assert all("nan" not in (p.get("points") or "").lower() for p in root.iter(f"{SVG}polyline"))


def test_a_single_point_is_drawn_as_a_dot() -> None:
    root = parse(render_svg(series([0.97]), [Marker(0, "root", "FP16 overflow — a (op 0)")], LABELS))
    assert not list(root.iter(f"{SVG}polyline"))
    assert len(list(root.iter(f"{SVG}circle"))) >= 3       # cosine dot, error dot, marker


def test_threshold_lines_and_titles_are_drawn() -> None:
    svg = render_svg(series([0.999, 0.95, 0.9]), [], LABELS)
    assert "threshold 0.99" in svg and "threshold 0.05" in svg
    assert "cosine similarity" in svg and "relative Euclidean distance" in svg


def test_wide_error_ranges_use_a_log_axis() -> None:
    svg = render_svg(series([0.999] * 4, [1e-6, 1e-4, 0.3, 2.0]), [], LABELS)
    assert "relative Euclidean distance (log scale)" in svg
    svg = render_svg(series([0.999] * 4, [0.01, 0.02, 0.03, 0.04]), [], LABELS)
    assert "log scale" not in svg


def test_without_error_values_only_the_cosine_panel_is_drawn() -> None:
    svg = render_svg(series([0.999, 0.98], [None, None]), [], LABELS)
    assert "relative Euclidean distance" not in svg
    parse(svg)


def test_all_nan_cosines_say_no_values() -> None:
    svg = render_svg(series([math.nan, math.nan]), [], LABELS)
    assert "no values" in svg
    parse(svg)


def test_markers_carry_op_names_as_escaped_tooltips() -> None:
    markers = [Marker(1, "root", "FP16 overflow — <script>alert(1)</script> (op 1)"),
               Marker(2, "symptom", 'Problem node — "><img src=x onerror=alert(1)>')]
    svg = render_svg(series([0.999, 0.5, 0.4]), markers, LABELS)
    assert "<script" not in svg and "<img" not in svg
    titles = [t.text for t in parse(svg).iter(f"{SVG}title")]
    assert "FP16 overflow — <script>alert(1)</script> (op 1)" in titles
    assert 'Problem node — "><img src=x onerror=alert(1)>' in titles


def test_control_characters_in_op_names_do_not_break_the_xml() -> None:
    parse(render_svg(series([0.9, 0.8]), [Marker(0, "finding", "bad\x00\x1bname")], LABELS))


def test_a_long_series_stays_small() -> None:
    n = 5000
    cosines = [0.999 - 0.1 * math.sin(i / 37) ** 2 for i in range(n)]
    errors = [1e-4 * (1 + i % 97) for i in range(n)]
    svg = render_svg(series(cosines, errors, total=200_000), [Marker(i, "symptom", f"op{i}") for i in range(0, n, 500)],
                     LABELS)
    parse(svg)
    assert len(svg) < 100_000          # the line is thinned; hover bands take a few pixels each
    assert "5000 of 200000 ops shown" in svg
    bands = [r for g in parse(svg).iter(f"{SVG}g") if g.get("class") == "hv" for r in g.iter(f"{SVG}rect")]
    assert 150 < len(bands) <= 300
    assert all("worst: op" in r.find(f"{SVG}title").text for r in bands)


def test_chinese_labels() -> None:
    svg = render_svg(series([0.999, 0.9]), [Marker(1, "root", "FP16 溢出")], labels_for("zh"))
    assert "余弦相似度" in svg and "阈值 0.99" in svg and "根因" in svg


def test_a_marker_between_downsampled_points_sits_on_the_nearest_one() -> None:
    data = Series(points=[OpPoint(0, "a", 0.999, 0.01), OpPoint(10, "b", 0.5, 0.2), OpPoint(20, "c", 0.4, 0.3)],
                  error_metric="relative_euclidean_distance", cosine_threshold=0.99, error_threshold=0.05,
                  total_ops=21)
    root = parse(render_svg(data, [Marker(11, "root", "x")], LABELS))
    marker = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "m-root")
    dot = marker.find(f"{SVG}circle")
    on_b = parse(render_svg(data, [Marker(10, "root", "x")], LABELS))
    dot_b = next(g for g in on_b.iter(f"{SVG}g") if g.get("class") == "m-root").find(f"{SVG}circle")
    assert dot.get("cy") == dot_b.get("cy")


def test_every_point_names_its_op_on_hover() -> None:
    svg = render_svg(series([0.999, 0.5, None, 0.4], [0.01, 0.3, None, math.nan]), [], LABELS)
    bands = [r for g in parse(svg).iter(f"{SVG}g") if g.get("class") == "hv" for r in g.iter(f"{SVG}rect")]
    titles = [r.find(f"{SVG}title").text for r in bands]
    assert titles == ["op0 (op 0) · cosine similarity 0.999 · relative Euclidean distance 0.01",
                      "op1 (op 1) · cosine similarity 0.5 · relative Euclidean distance 0.3",
                      "op2 (op 2)", "op3 (op 3) · cosine similarity 0.4"]
    lefts = [float(r.get("x")) for r in bands]
    rights = [float(r.get("x")) + float(r.get("width")) for r in bands]
    assert lefts[1:] == rights[:-1] or all(abs(a - b) < 0.11 for a, b in zip(lefts[1:], rights[:-1], strict=True))
    assert "<script" not in svg


def test_hover_titles_escape_op_names() -> None:
    data = Series(points=[OpPoint(0, "<script>x</script>", 0.9, 0.1), OpPoint(1, '"><img src=x>', 0.8, 0.2)],
                  error_metric="relative_euclidean_distance", cosine_threshold=0.99, error_threshold=0.05,
                  total_ops=2)
    svg = render_svg(data, [], LABELS)
    assert "<script" not in svg and "<img" not in svg
    assert "<script>x</script> (op 0) · cosine similarity 0.9 · relative Euclidean distance 0.1" in [
        t.text for t in parse(svg).iter(f"{SVG}title")]


def test_subnormal_errors_from_msprobe_do_not_break_the_log_axis() -> None:
    # msprobe writes MaxAbsErr 5e-324 (the smallest subnormal) for tensors that differ in the last bit.
    svg = render_svg(series([1.0, 0.999, 0.5], [5e-324, 1e-3, 2.0]), [Marker(2, "root", "x")], LABELS)
    root = parse(svg)
    assert "(log scale)" in svg
    ys = [float(c) for line in root.iter(f"{SVG}polyline") for xy in line.get("points").split()
          for c in xy.split(",")[1:]]
    assert all(math.isfinite(y) for y in ys)
    assert render_svg(series([1.0, 1.0], [5e-324, 5e-324]), [], LABELS)       # only subnormals: linear
