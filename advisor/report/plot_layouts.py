"""The plot of a comparison without cosine (advisor/diagnosis/layout.py), with plot.py's parts.

* statistics (msprobe's summary mode, two dump.json files): the relative error of each statistic
  (max, min, mean, norm) per call in execution order, one panel for the forward calls and one for the
  backward calls (a training step runs them in two sweeps, each with its own x axis), one line per
  statistic, the dtype's threshold on the norm's relative error drawn dashed. An infinite relative error
  (a statistic that overflowed, or a zero reference) is a triangle at the panel's top, not a gap.
* checksum (MD5 mode): one strip, a mark per call whose checksums differ, the first one ringed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..diagnosis import OpPoint, Series
from .labels import data_label
from .plot import (
    COLORS,
    Geometry,
    Marker,
    XAxis,
    _esc,
    _Scale,
    error_scale,
    hover_bands,
    legend,
    line,
    marker_legend,
    markers_svg,
    panel,
    point_text,
    render_svg,
    svg_document,
    x_ticks,
)

# One colour (and dash, for print and colour-blind readers) per statistic.
STAT_STYLE = {"max_rel_diff": ("#dc2626", ""), "min_rel_diff": ("#2563eb", "5 3"),
              "mean_rel_diff": ("#059669", "2 2"), "norm_rel_diff": ("#7c3aed", "")}
STRIP_HEIGHT = 56


def render_plot(series: Series | None, markers: Sequence[Marker], labels: Mapping[str, str],
                geo: Geometry) -> str | None:
    """The plot of any layout (plot.py draws the one with cosine), or None when there is nothing to draw."""
    if series is None or not series.points or series.layout == "tensor":
        return render_svg(series, markers, labels, geo)
    if series.layout == "checksum":
        return _checksum_svg(series, markers, labels, geo)
    return _statistics_svg(series, markers, labels, geo)


def _directions(points: list[OpPoint]) -> list[tuple[str | None, list[OpPoint]]]:
    """Forward calls, then backward calls (each in execution order); one group when none says."""
    groups: dict[str | None, list[OpPoint]] = {}
    for point in points:
        groups.setdefault(point.direction if point.direction in ("forward", "backward") else None, []).append(point)
    order = [d for d in ("forward", None, "backward") if d in groups]
    return [(d, groups[d]) for d in order]


def _statistics_svg(series: Series, markers: Sequence[Marker], labels: Mapping[str, str],
                    geo: Geometry) -> str | None:
    points = sorted(series.points, key=lambda p: p.index)
    metrics = [m for m in series.metrics if m in STAT_STYLE]
    items = [("text", "", labels["plot.stats_legend"])]
    items += [("dash", STAT_STYLE[m][0], data_label(labels, "metric", m)) for m in metrics]
    items += marker_legend(markers, labels)
    if series.total_ops > len(points):
        items.append(("text", "", labels["plot_shown"].format(shown=len(points), total=series.total_ops)))
    body, top = legend(items, geo)
    titles = []
    for direction, group in _directions(points):
        top += geo.gap
        title = labels[f"plot.stats_{direction or 'all'}"]
        panel_body, bottom = _statistics_panel(group, metrics, series, markers, labels, geo, top, title)
        body += panel_body
        titles.append(title)
        top = bottom + geo.bottom
    return svg_document(geo, top, body, labels, "; ".join(titles))


def _statistics_panel(points: list[OpPoint], metrics: list[str], series: Series, markers: Sequence[Marker],
                      labels: Mapping[str, str], geo: Geometry, top: float, title: str) -> tuple[list[str], float]:
    axis = XAxis([p.index for p in points], geo)
    xs = [axis.x(p.index) for p in points]
    finite = [v for p in points for m in metrics for v in [p.values.get(m)] if v is not None and math.isfinite(v)]
    scale = error_scale(finite, series.metric_threshold, top, geo.panel_height) if finite else None
    if scale is not None and scale.log:
        title += f" ({labels['log_scale']})"
    threshold_text = labels["plot.threshold_norm"]
    body = panel(geo, title, top, scale, series.metric_threshold if scale is not None else None, labels,
                 threshold_text)
    # A line never bridges calls of the other direction (the optimizer's forward calls after a backward sweep).
    breaks = {k for k in range(1, len(points)) if points[k].index - points[k - 1].index > 1} \
        if series.total_ops == len(series.points) else set()
    for metric in metrics:
        values = [p.values.get(metric) for p in points]
        color, dash = STAT_STYLE[metric]
        if scale is not None:
            drawn = [v if v is not None and math.isfinite(v) else None for v in values]
            body += line(*_gapped(xs, drawn, breaks), scale, color, geo, dash)
        body += [f'<path d="M{x - 4:.1f},{top + 1:.1f} L{x + 4:.1f},{top + 1:.1f} L{x:.1f},{top + 8:.1f} Z" '
                 f'fill="{color}"/>' for x, v in zip(xs, values, strict=True) if v is not None and math.isinf(v)]
    bottom = top + geo.panel_height
    body += x_ticks(axis, bottom, labels)
    texts = [point_text(p, [(m, p.values.get(m)) for m in metrics], labels) for p in points]
    badness = [-max((v for v in p.values.values() if v is not None), default=-1.0) for p in points]
    body += hover_bands(points, xs, texts, badness, top, bottom, labels, geo)
    norm = {p.index: _drawn(p.values.get("norm_rel_diff"), scale) for p in points}
    body += markers_svg(markers, axis, norm, scale, top, bottom)
    return body, bottom


def _gapped(xs: list[float], values: list[float | None], breaks: set[int]) -> tuple[list[float], list[float | None]]:
    """``xs`` and ``values`` with a missing value before each position in ``breaks`` (a gap in the line)."""
    out_x: list[float] = []
    out_v: list[float | None] = []
    for k, (x, value) in enumerate(zip(xs, values, strict=True)):
        if k in breaks:
            out_x.append(x)
            out_v.append(None)
        out_x.append(x)
        out_v.append(value)
    return out_x, out_v


def _drawn(value: float | None, scale: _Scale | None) -> float | None:
    """A value as the marker sits on it: an infinite one at the panel's top."""
    if value is None or scale is None:
        return None
    return scale.high if math.isinf(value) else value


def _checksum_svg(series: Series, markers: Sequence[Marker], labels: Mapping[str, str],
                  geo: Geometry) -> str | None:
    points = sorted(series.points, key=lambda p: p.index)
    items = [("dot", COLORS["threshold"], labels["plot.checksum_differ"]),
             ("dot", COLORS["axis"], labels["plot.checksum_same"]), *marker_legend(markers, labels)]
    body, top = legend(items, geo)
    top += geo.gap
    axis = XAxis([p.index for p in points], geo)
    xs = [axis.x(p.index) for p in points]
    compared, differ = series.checksums or (0, 0)
    title = labels["plot.checksums"]
    body.append(f'<text x="{geo.left}" y="{top - 8:.1f}" class="t">{_esc(title)}</text>')
    body.append(f'<rect x="{geo.left}" y="{top:.1f}" width="{geo.plot_width}" height="{STRIP_HEIGHT}" fill="none" '
                f'stroke="{COLORS["axis"]}"/>')
    for x, point in zip(xs, points, strict=True):
        differing = point.values.get("checksums_differ")
        if differing is None:
            continue
        color = COLORS["threshold"] if differing > 0 else COLORS["axis"]
        low = top + 6 if differing > 0 else top + STRIP_HEIGHT * 0.6
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{low:.1f}" y2="{top + STRIP_HEIGHT - 6:.1f}" '
                    f'stroke="{color}" stroke-width="2"/>')
    bottom = top + STRIP_HEIGHT
    body += x_ticks(axis, bottom, labels)
    texts = [point_text(p, [("checksums_differ", p.values.get("checksums_differ")),
                            ("checksums_compared", p.values.get("checksums_compared"))], labels) for p in points]
    badness = [-(p.values.get("checksums_differ") or 0.0) for p in points]
    body += hover_bands(points, xs, texts, badness, top, bottom, labels, geo)
    body += markers_svg(markers, axis, {}, None, top, bottom, rest_y=top + STRIP_HEIGHT / 2)
    summary = labels["plot.checksum_summary"].format(differ=differ, compared=compared)
    return svg_document(geo, bottom + geo.bottom, body, labels, f"{title}: {summary}")
