"""Inline SVG of the per-op series: cosine on top, the error metric below, findings marked.

Plain SVG markup built here, no script and nothing fetched, so the HTML report works offline. Every
text that comes from the model (op names, finding titles) goes through ``_esc``. Missing values (None,
NaN) leave gaps; long series are thinned to at most four points per pixel column (first, min, max,
last), which keeps the shape and a few thousand ops within some tens of kilobytes.

Hovering anywhere over the plot names the op under the pointer: a transparent band per point (per
HOVER_PX-wide column of points when the series is longer than the plot is wide, naming the column's
worst op) carries an SVG ``<title>``, which browsers show as a tooltip without any script.
"""

from __future__ import annotations

import bisect
import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..diagnosis import OpPoint, Series
from .labels import data_label
from .text import fmt_value

MarkerRole = Literal["root", "finding", "symptom"]

WIDTH = 880
PANEL_HEIGHT = 190
LEFT, RIGHT, TOP, GAP, BOTTOM = 64, 16, 48, 40, 40
PLOT_WIDTH = WIDTH - LEFT - RIGHT
LOG_RATIO = 1e3                      # error values spanning more than this get a log axis
LOG_FLOOR = 1e-300                   # a log axis starts no lower (a subnormal 5e-324 has no 10**floor)
MIN_SPAN = 1e-300                    # a linear axis spans at least this (subnormal spans underflow its ticks)
HOVER_PX = 3                         # narrowest hover band: more points than this allows share a band
COLORS = {"line": "#2563eb", "error": "#7c3aed", "threshold": "#dc2626", "root": "#dc2626",
          "finding": "#d97706", "symptom": "#6b7280", "axis": "#9ca3af", "text": "#374151"}
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Marker:
    """A finding to mark on the plot; ``label`` is the tooltip (plain text, escaped here)."""

    index: int
    role: MarkerRole
    label: str


def _esc(text: object) -> str:
    return html.escape(_XML_INVALID.sub("", str(text)), quote=True)


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


@dataclass(frozen=True)
class _Scale:
    low: float
    high: float
    log: bool
    top: float                       # pixel y of ``high``
    height: float

    def y(self, value: float) -> float:
        if self.log:
            value = max(value, self.low)
            frac = (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        else:
            frac = (value - self.low) / (self.high - self.low)
        return self.top + self.height * (1.0 - min(max(frac, 0.0), 1.0))

    def ticks(self) -> list[float]:
        if self.log:
            first, last = math.ceil(math.log10(self.low)), math.floor(math.log10(self.high))
            step = max(1, math.ceil((last - first + 1) / 6))
            return [10.0 ** e for e in range(first, last + 1, step)]
        return _nice_ticks(self.low, self.high)


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    raw = (high - low) / count
    if not raw > MIN_SPAN / count:                  # a span of subnormals: one tick at each end
        return [low, high]
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _linear_scale(values: list[float], threshold: float | None, top: float, ceiling: float | None) -> _Scale:
    """Values, threshold and ``ceiling`` (1.0 for cosine) in view, with a margin on both sides."""
    points = values + ([threshold] if _finite(threshold) else [])
    low, high = min(points), max(points + ([ceiling] if ceiling is not None else []))
    span = high - low
    if not span > MIN_SPAN:       # equal values, or apart by subnormals (5e-324 and 0): no scale to divide by
        span = max(abs(high) * 1e-3, 1e-3)
    return _Scale(low - span * 0.06, high + span * 0.06, False, top, PANEL_HEIGHT)


def _error_scale(values: list[float], threshold: float | None, top: float) -> _Scale:
    positive = [v for v in values + ([threshold] if _finite(threshold) else []) if v > 0]
    if positive and max(positive) / min(positive) >= LOG_RATIO:
        # Subnormal errors (msprobe writes MaxAbsErr 5e-324) are drawn at the floor of the axis.
        low = max(10.0 ** math.floor(math.log10(max(min(positive), LOG_FLOOR))), LOG_FLOOR)
        high = max(10.0 ** math.ceil(math.log10(max(positive))), low * 10)
        return _Scale(low, high, True, top, PANEL_HEIGHT)
    return _linear_scale(values, threshold, top, None)


class _XAxis:
    def __init__(self, indices: list[int]) -> None:
        self.low, self.high = min(indices), max(indices)
        if self.low == self.high:
            self.low, self.high = self.low - 1, self.high + 1

    def x(self, index: float) -> float:
        return LEFT + PLOT_WIDTH * (index - self.low) / (self.high - self.low)


def _thin(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """At most first/min/max/last per pixel column (M4), so long series stay small."""
    if len(points) <= 2 * PLOT_WIDTH:
        return points
    columns: dict[int, list[tuple[float, float]]] = {}
    for point in points:
        columns.setdefault(int(point[0]), []).append(point)
    kept: list[tuple[float, float]] = []
    for column in columns.values():
        chosen = {column[0], min(column, key=lambda p: p[1]), max(column, key=lambda p: p[1]), column[-1]}
        kept.extend(sorted(chosen))
    return kept


def _segments(xs: list[float], values: list[float | None]) -> list[list[tuple[float, float]]]:
    segments: list[list[tuple[float, float]]] = [[]]
    for x, value in zip(xs, values, strict=True):
        if value is None:
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append((x, value))
    return [s for s in segments if s]


def _line(xs: list[float], values: list[float | None], scale: _Scale, color: str) -> list[str]:
    mapped = [scale.y(v) if _finite(v) else None for v in values]
    out = []
    for segment in _segments(xs, mapped):
        if len(segment) == 1:
            x, y = segment[0]
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>')
        else:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in _thin(segment))
            out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.4" '
                       f'stroke-linejoin="round"/>')
    return out


def _panel(title: str, top: float, xs: list[float], values: list[float | None], scale: _Scale | None,
           threshold: float | None, color: str, labels: Mapping[str, str]) -> list[str]:
    out = [f'<text x="{LEFT}" y="{top - 8:.1f}" class="t">{_esc(title)}</text>',
           f'<rect x="{LEFT}" y="{top:.1f}" width="{PLOT_WIDTH}" height="{PANEL_HEIGHT}" fill="none" '
           f'stroke="{COLORS["axis"]}"/>']
    if scale is None:
        out.append(f'<text x="{LEFT + PLOT_WIDTH / 2:.1f}" y="{top + PANEL_HEIGHT / 2:.1f}" '
                   f'text-anchor="middle" class="t">{_esc(labels["plot_no_data"])}</text>')
        return out
    for tick in scale.ticks():
        y = scale.y(tick)
        out.append(f'<line x1="{LEFT - 4}" x2="{LEFT + PLOT_WIDTH}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#e5e7eb"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="s">'
                   f'{_esc(fmt_value(float(tick)))}</text>')
    if _finite(threshold):
        y = scale.y(threshold)  # type: ignore[arg-type]
        label_y = y + 13 if y - scale.top < 16 else y - 4     # keep the label inside the panel
        out.append(f'<g><title>{_esc(labels["threshold"])} {_esc(fmt_value(threshold))}</title>'
                   f'<line x1="{LEFT}" x2="{LEFT + PLOT_WIDTH}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{COLORS["threshold"]}" stroke-dasharray="6 4" stroke-width="1.2"/>'
                   f'<text x="{LEFT + PLOT_WIDTH - 4}" y="{label_y:.1f}" text-anchor="end" class="s" '
                   f'fill="{COLORS["threshold"]}">{_esc(labels["threshold"])} {_esc(fmt_value(threshold))}'
                   f'</text></g>')
    return out + _line(xs, values, scale, color)


def _x_ticks(axis: _XAxis, bottom: float, labels: Mapping[str, str]) -> list[str]:
    ticks = [t for t in _nice_ticks(axis.low, axis.high, 8) if float(t).is_integer()]
    out = []
    for tick in ticks:
        x = axis.x(tick)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" '
                   f'stroke="{COLORS["axis"]}"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 16:.1f}" text-anchor="middle" class="s">{int(tick)}</text>')
    out.append(f'<text x="{LEFT + PLOT_WIDTH / 2:.1f}" y="{bottom + 32:.1f}" text-anchor="middle" '
               f'class="s">{_esc(labels["plot_x"])}</text>')
    return out


def _cosine_at(index: int, cosines: dict[int, float | None], finite: list[int]) -> float | None:
    """The cosine drawn at ``index``: its own (None when it is NaN), else that of the nearest point kept
    by the engine's downsampling."""
    if index in cosines:
        return cosines[index]
    if not finite:
        return None
    pos = bisect.bisect_left(finite, index)
    nearest = min(finite[max(pos - 1, 0):pos + 1], key=lambda i: abs(i - index))
    return cosines[nearest]


def _markers(markers: Sequence[Marker], axis: _XAxis, cosines: dict[int, float | None], scale: _Scale | None,
             top: float, bottom: float) -> list[str]:
    out = []
    finite = sorted(i for i, c in cosines.items() if c is not None)
    # Symptoms first, root cause last: the most important mark is drawn on top.
    order = {"symptom": 0, "finding": 1, "root": 2}
    for marker in sorted(markers, key=lambda m: order[m.role]):
        if not axis.low <= marker.index <= axis.high:
            continue
        x = axis.x(marker.index)
        color = COLORS[marker.role]
        cosine = _cosine_at(marker.index, cosines, finite)
        y = scale.y(cosine) if scale is not None and cosine is not None else top + PANEL_HEIGHT
        shapes = []
        if marker.role == "root":
            shapes.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="{color}" '
                          f'stroke-width="2" opacity="0.55"/>')
        radius = {"root": 6, "finding": 5, "symptom": 3}[marker.role]
        fill = "none" if marker.role == "root" else color
        shapes.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{fill}" stroke="{color}" '
                      f'stroke-width="2"/>')
        out.append(f'<g class="m-{marker.role}"><title>{_esc(marker.label)}</title>{"".join(shapes)}</g>')
    return out


def _point_text(point: OpPoint, error_metric: str, labels: Mapping[str, str]) -> str:
    """"Pow_4 (op 5) · cosine similarity 0.5 · relative Euclidean distance 0.3"."""
    parts = [labels["location.full"].format(op=point.op, index=point.index)]
    if _finite(point.cosine):
        parts.append(f'{data_label(labels, "metric", "cosine")} {fmt_value(point.cosine)}')
    if _finite(point.error):
        parts.append(f'{data_label(labels, "metric", error_metric)} {fmt_value(point.error)}')
    return " · ".join(parts)


def _hover_bands(points: list[OpPoint], xs: list[float], error_metric: str, top: float, bottom: float,
                 labels: Mapping[str, str]) -> list[str]:
    """Transparent bands over both panels, one per point (or per HOVER_PX column of points, naming
    the column's worst op and how many it holds), each with a ``<title>``."""
    columns: dict[int, list[int]] = {}
    for k, x in enumerate(xs):
        columns.setdefault(int((x - LEFT) // HOVER_PX), []).append(k)
    keys = sorted(columns)
    centres = [sum(xs[k] for k in columns[key]) / len(columns[key]) for key in keys]
    out = ['<g class="hv">']
    for n, key in enumerate(keys):
        members = columns[key]
        # Bands meet halfway between neighbouring columns, so the whole plot width answers a hover.
        left = LEFT if n == 0 else (centres[n - 1] + centres[n]) / 2
        right = LEFT + PLOT_WIDTH if n == len(keys) - 1 else (centres[n] + centres[n + 1]) / 2
        worst = min(members, key=lambda k: points[k].cosine if _finite(points[k].cosine) else 2.0)
        text = _point_text(points[worst], error_metric, labels)
        if len(members) > 1:
            text = labels["plot_band"].format(n=len(members), first=points[members[0]].index,
                                             last=points[members[-1]].index, worst=text)
        out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{max(right - left, 0.5):.1f}" '
                   f'height="{bottom - top:.1f}"><title>{_esc(text)}</title></rect>')
    out.append("</g>")
    return out


def _legend(labels: Mapping[str, str], roles: set[str]) -> list[str]:
    items = [("root", labels["legend_root"]), ("finding", labels["legend_finding"]),
             ("symptom", labels["legend_symptom"])]
    out: list[str] = []
    x = float(LEFT)
    for role, text in items:
        if role not in roles:
            continue
        out.append(f'<circle cx="{x + 5:.1f}" cy="10" r="5" fill="{"none" if role == "root" else COLORS[role]}" '
                   f'stroke="{COLORS[role]}" stroke-width="2"/>'
                   f'<text x="{x + 14:.1f}" y="14" class="s">{_esc(text)}</text>')
        x += 28 + sum(12 if ord(c) > 0x2E80 else 6.5 for c in text)   # wide CJK glyphs
    return out


def render_svg(series: Series | None, markers: Sequence[Marker], labels: Mapping[str, str]) -> str | None:
    """The SVG markup, or None when there is nothing to draw."""
    if series is None or not series.points:
        return None
    points = sorted(series.points, key=lambda p: p.index)
    axis = _XAxis([p.index for p in points])
    xs = [axis.x(p.index) for p in points]
    cosines = [p.cosine if _finite(p.cosine) else None for p in points]
    errors = [p.error if _finite(p.error) else None for p in points]
    has_errors = any(e is not None for e in errors)

    cos_top = TOP
    finite_cos = [c for c in cosines if c is not None]
    cos_scale = (_linear_scale(finite_cos, series.cosine_threshold, cos_top, 1.0)
                 if finite_cos else None)
    body = _panel(data_label(labels, "metric", "cosine"), cos_top, xs, cosines, cos_scale,
                  series.cosine_threshold, COLORS["line"], labels)
    bottom = cos_top + PANEL_HEIGHT
    if has_errors:
        err_top = bottom + GAP
        finite_err = [e for e in errors if e is not None]
        err_scale = _error_scale(finite_err, series.error_threshold, err_top)
        title = data_label(labels, "metric", series.error_metric)
        if err_scale.log:
            title += f" ({labels['log_scale']})"
        body += _panel(title, err_top, xs, errors, err_scale, series.error_threshold, COLORS["error"], labels)
        bottom = err_top + PANEL_HEIGHT
    body += _x_ticks(axis, bottom, labels)
    body += _hover_bands(points, xs, series.error_metric, cos_top, bottom, labels)
    cos_lookup = {p.index: c for p, c in zip(points, cosines, strict=True)}
    body += _markers(markers, axis, cos_lookup, cos_scale, cos_top, bottom)
    body += _legend(labels, {m.role for m in markers})
    if series.total_ops > len(points):
        shown = labels["plot_shown"].format(shown=len(points), total=series.total_ops)
        body.append(f'<text x="{LEFT + PLOT_WIDTH}" y="14" text-anchor="end" class="s">{_esc(shown)}</text>')
    height = bottom + BOTTOM
    title = data_label(labels, "metric", "cosine")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" '
            f'width="100%" role="img" aria-label="{_esc(labels["plot"])}" class="plot">'
            f'<title>{_esc(labels["plot"])}: {_esc(title)}</title>'
            '<style>.t{font:600 13px sans-serif;fill:#374151}.s{font:11px sans-serif;fill:#4b5563}'
            '.hv rect{fill:#2563eb;fill-opacity:0}.hv rect:hover{fill-opacity:.1}</style>'
            + "".join(body) + "</svg>")
