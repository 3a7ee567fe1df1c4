"""The trend sparkline: escaped, gaps for runs without a cosine, no alarm for jitter."""

from __future__ import annotations

import re

from advisor.batch.sparkline import TrendPoint, trend_svg


def _point(run: int, cosine: float | None, tone: str = "ok", errors: int = 0, label: str = "") -> TrendPoint:
    return TrendPoint(run, cosine, errors, 0, tone, label or f"run {run}")


def _ys(svg: str) -> list[float]:
    return [float(y) for y in re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)"', svg)]


def test_tooltips_are_escaped() -> None:
    svg = trend_svg([_point(1, 0.99, label='<script>alert("x")</script>')])
    assert "<script>" not in svg and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in svg


def test_a_run_without_cosine_breaks_the_line() -> None:
    svg = trend_svg([_point(1, 0.99), _point(2, 0.98), _point(3, None, "failed"), _point(4, 0.5), _point(5, 0.4)])
    assert svg.count("<polyline") == 2
    assert svg.count("<circle") == 5 and 'fill="#fff"' in svg


def test_jitter_stays_flat_and_a_drop_fills_the_height() -> None:
    flat = _ys(trend_svg([_point(1, 0.999998), _point(2, 0.999999), _point(3, 0.999997)]))
    assert max(flat) - min(flat) < 0.2
    drop = _ys(trend_svg([_point(1, 0.9999), _point(2, 0.8, "error", errors=2)]))
    assert drop[1] - drop[0] > 20
    assert "<rect" in trend_svg([_point(1, 0.9999), _point(2, 0.8, "error", errors=2)])


def test_no_points_no_svg() -> None:
    assert trend_svg([]) == ""
