"""Inline SVG of the per-op series: cosine on top, the error metric below, findings marked.

Plain SVG markup built here, no script and nothing fetched, so the HTML report works offline. Every
text that comes from the model (op names, finding titles) goes through ``_esc``. Missing values (None,
NaN) leave gaps; long series are thinned to at most four points per pixel column (first, min, max,
last), which keeps the shape and a few thousand ops within some tens of kilobytes.

Each plot is drawn for a ``Geometry``: ``WIDE`` for desktops, ``NARROW`` for phones (fewer units
across and larger type, so the page shows it at the screen's width with legible text and the root
cause in view; the page picks one by its width). A layout without cosine (msprobe statistics,
checksums) is drawn by advisor/report/plot_layouts.py with the same parts.

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

LOG_RATIO = 1e3                      # error values spanning more than this get a log axis
LOG_FLOOR = 1e-300                   # a log axis starts no lower (a subnormal 5e-324 has no 10**floor)
MIN_SPAN = 1e-300                    # a linear axis spans at least this (subnormal spans underflow its ticks)
HOVER_PX = 3                         # narrowest hover band: more points than this allows share a band
COLORS = {"line": "#2563eb", "error": "#7c3aed", "threshold": "#dc2626", "root": "#dc2626",
          "finding": "#d97706", "symptom": "#6b7280", "axis": "#9ca3af", "text": "#374151"}
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class Geometry:
    """Where things go, in SVG units; the page scales the whole drawing to its column's width."""

    name: str
    width: int
    left: int                        # room for the y tick labels
    right: int
    panel_height: int
    gap: int                         # between two panels (room for the next panel's title)
    bottom: int                      # under the last panel: x ticks and the axis label
    title_px: int                    # font size of panel titles
    small_px: int                    # font size of ticks, legend and labels
    x_ticks: int                     # about this many ticks on the x axis

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    def text_width(self, text: str, px: int | None = None) -> float:
        """About how wide ``text`` is set in sans-serif at ``px`` (CJK glyphs are twice as wide)."""
        size = px or self.small_px
        return sum(size if ord(c) > 0x2E80 else size * 0.62 for c in text)


WIDE = Geometry("wide", 880, 64, 16, 190, 40, 40, 13, 11, 8)
NARROW = Geometry("narrow", 420, 52, 10, 170, 46, 46, 16, 14, 4)
GEOMETRIES = (WIDE, NARROW)


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


def linear_scale(values: list[float], threshold: float | None, top: float, height: float,
                 ceiling: float | None) -> _Scale:
    """Values, threshold and ``ceiling`` (1.0 for cosine) in view, with a margin on both sides."""
    points = values + ([threshold] if _finite(threshold) else [])
    low, high = min(points), max(points + ([ceiling] if ceiling is not None else []))
    span = high - low
    if not span > MIN_SPAN:       # equal values, or apart by subnormals (5e-324 and 0): no scale to divide by
        span = max(abs(high) * 1e-3, 1e-3)
    return _Scale(low - span * 0.06, high + span * 0.06, False, top, height)


def error_scale(values: list[float], threshold: float | None, top: float, height: float) -> _Scale:
    positive = [v for v in values + ([threshold] if _finite(threshold) else []) if v > 0]
    if positive and max(positive) / min(positive) >= LOG_RATIO:
        # Subnormal errors (msprobe writes MaxAbsErr 5e-324) are drawn at the floor of the axis.
        low = max(10.0 ** math.floor(math.log10(max(min(positive), LOG_FLOOR))), LOG_FLOOR)
        high = max(10.0 ** math.ceil(math.log10(max(positive))), low * 10)
        return _Scale(low, high, True, top, height)
    return linear_scale(values, threshold, top, height, None)


class XAxis:
    def __init__(self, indices: list[int], geo: Geometry) -> None:
        self.geo = geo
        self.low, self.high = min(indices), max(indices)
        if self.low == self.high:
            self.low, self.high = self.low - 1, self.high + 1

    def x(self, index: float) -> float:
        return self.geo.left + self.geo.plot_width * (index - self.low) / (self.high - self.low)


def _thin(points: list[tuple[float, float]], geo: Geometry) -> list[tuple[float, float]]:
    """At most first/min/max/last per pixel column (M4), so long series stay small."""
    if len(points) <= 2 * geo.plot_width:
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


def line(xs: list[float], values: list[float | None], scale: _Scale, color: str, geo: Geometry,
         dash: str = "") -> list[str]:
    mapped = [scale.y(v) if _finite(v) else None for v in values]
    out = []
    style = f' stroke-dasharray="{dash}"' if dash else ""
    for segment in _segments(xs, mapped):
        if len(segment) == 1:
            x, y = segment[0]
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>')
        else:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in _thin(segment, geo))
            out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.4" '
                       f'stroke-linejoin="round"{style}/>')
    return out


def panel(geo: Geometry, title: str, top: float, scale: _Scale | None, threshold: float | None,
          labels: Mapping[str, str], threshold_text: str | None = None) -> list[str]:
    """A panel's title, frame, y ticks and threshold line (its lines are drawn by the caller)."""
    left, width, height = geo.left, geo.plot_width, geo.panel_height
    out = [f'<text x="{left}" y="{top - 8:.1f}" class="t">{_esc(title)}</text>',
           f'<rect x="{left}" y="{top:.1f}" width="{width}" height="{height}" fill="none" '
           f'stroke="{COLORS["axis"]}"/>']
    if scale is None:
        out.append(f'<text x="{left + width / 2:.1f}" y="{top + height / 2:.1f}" '
                   f'text-anchor="middle" class="t">{_esc(labels["plot_no_data"])}</text>')
        return out
    for tick in scale.ticks():
        y = scale.y(tick)
        out.append(f'<line x1="{left - 4}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>')
        out.append(f'<text x="{left - 6}" y="{y + geo.small_px / 3:.1f}" text-anchor="end" class="s">'
                   f'{_esc(fmt_value(float(tick)))}</text>')
    if _finite(threshold):
        y = scale.y(threshold)  # type: ignore[arg-type]
        label_y = y + geo.small_px + 2 if y - scale.top < geo.small_px + 5 else y - 4   # inside the panel
        text = f'{threshold_text or labels["threshold"]} {fmt_value(threshold)}'
        out.append(f'<g><title>{_esc(text)}</title>'
                   f'<line x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{COLORS["threshold"]}" stroke-dasharray="6 4" stroke-width="1.2"/>'
                   f'<text x="{left + width - 4}" y="{label_y:.1f}" text-anchor="end" class="s" '
                   f'fill="{COLORS["threshold"]}">{_esc(text)}</text></g>')
    return out


def x_ticks(axis: XAxis, bottom: float, labels: Mapping[str, str]) -> list[str]:
    geo = axis.geo
    ticks = [t for t in _nice_ticks(axis.low, axis.high, geo.x_ticks) if float(t).is_integer()]
    out = []
    for tick in ticks:
        x = axis.x(tick)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" '
                   f'stroke="{COLORS["axis"]}"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 4 + geo.small_px:.1f}" text-anchor="middle" class="s">'
                   f'{int(tick)}</text>')
    out.append(f'<text x="{geo.left + geo.plot_width / 2:.1f}" y="{bottom + 8 + 2 * geo.small_px:.1f}" '
               f'text-anchor="middle" class="s">{_esc(labels["plot_x"])}</text>')
    return out


def _value_at(index: int, values: dict[int, float | None], finite: list[int]) -> float | None:
    """The value drawn at ``index``: its own (None when it is NaN), else that of the nearest point kept
    by the engine's downsampling."""
    if index in values:
        return values[index]
    if not finite:
        return None
    pos = bisect.bisect_left(finite, index)
    nearest = min(finite[max(pos - 1, 0):pos + 1], key=lambda i: abs(i - index))
    return values[nearest]


def markers_svg(markers: Sequence[Marker], axis: XAxis, values: dict[int, float | None], scale: _Scale | None,
                top: float, bottom: float, rest_y: float | None = None) -> list[str]:
    """The findings' marks on the line whose ``values`` (by op index) are drawn with ``scale``; a mark
    without a value sits at ``rest_y`` (default: the panel's foot). Marks of one role on one pixel
    are drawn once, the tooltip counting the others (thousands of overflow onsets share pixels)."""
    finite = sorted(i for i, c in values.items() if c is not None)
    spots: dict[tuple[str, int, int], list] = {}
    # Symptoms first, root cause last: the most important mark is drawn on top.
    for marker in sorted(markers, key=lambda m: ("symptom", "finding", "root").index(m.role)):
        if axis.low <= marker.index <= axis.high:
            x, value = axis.x(marker.index), _value_at(marker.index, values, finite)
            y = scale.y(value) if scale is not None and value is not None else \
                (rest_y if rest_y is not None else top + axis.geo.panel_height)
            spots.setdefault((marker.role, round(x), round(y)), [marker, x, y, 0])[3] += 1
    out = []
    for marker, x, y, count in spots.values():
        color = COLORS[marker.role]
        shapes = [f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="{color}" '
                  f'stroke-width="2" opacity="0.55"/>'] if marker.role == "root" else []
        radius = {"root": 6, "finding": 5, "symptom": 3}[marker.role]
        fill = "none" if marker.role == "root" else color
        shapes.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{fill}" stroke="{color}" '
                      f'stroke-width="2"/>')
        label = marker.label if count == 1 else f"{marker.label} (+{count - 1})"
        out.append(f'<g class="m-{marker.role}" data-index="{marker.index}"><title>{_esc(label)}</title>'
                   f'{"".join(shapes)}</g>')
    return out


def hover_bands(points: Sequence[OpPoint], xs: list[float], texts: list[str], badness: list[float],
                top: float, bottom: float, labels: Mapping[str, str], geo: Geometry) -> list[str]:
    """Transparent bands over the panels, one per point (or per HOVER_PX column of points, naming
    the column's worst op, the lowest ``badness``, and how many it holds), each with a ``<title>``."""
    columns: dict[int, list[int]] = {}
    for k, x in enumerate(xs):
        columns.setdefault(int((x - geo.left) // HOVER_PX), []).append(k)
    keys = sorted(columns)
    centres = [sum(xs[k] for k in columns[key]) / len(columns[key]) for key in keys]
    out = ['<g class="hv">']
    for n, key in enumerate(keys):
        members = columns[key]
        # Bands meet halfway between neighbouring columns, so the whole plot width answers a hover.
        left = geo.left if n == 0 else (centres[n - 1] + centres[n]) / 2
        right = geo.left + geo.plot_width if n == len(keys) - 1 else (centres[n] + centres[n + 1]) / 2
        worst = min(members, key=lambda k: badness[k])
        text = texts[worst]
        if len(members) > 1:
            text = labels["plot_band"].format(n=len(members), first=points[members[0]].index,
                                             last=points[members[-1]].index, worst=text)
        out.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{max(right - left, 0.5):.1f}" '
                   f'height="{bottom - top:.1f}"><title>{_esc(text)}</title></rect>')
    out.append("</g>")
    return out


def legend(items: Sequence[tuple[str, str, str]], geo: Geometry) -> tuple[list[str], float]:
    """Legend items ``(shape, colour, text)`` (shape: ``ring``, ``dot``, ``dash``, ``text``) laid out
    left to right, wrapped to the plot's width; returns the markup and the height it takes."""
    out: list[str] = []
    x, y = float(geo.left), geo.small_px + 2.0
    row = geo.small_px + 8
    for shape, color, text in items:
        width = 18 + geo.text_width(text) + 16 if shape != "text" else geo.text_width(text) + 12
        if x + width > geo.width and x > geo.left:
            x, y = float(geo.left), y + row
        mid = y - geo.small_px / 3
        if shape in ("ring", "dot"):
            out.append(f'<circle cx="{x + 5:.1f}" cy="{mid:.1f}" r="5" fill="{"none" if shape == "ring" else color}" '
                       f'stroke="{color}" stroke-width="2"/>')
        elif shape == "dash":
            out.append(f'<line x1="{x:.1f}" x2="{x + 12:.1f}" y1="{mid:.1f}" y2="{mid:.1f}" stroke="{color}" '
                       f'stroke-width="3"/>')
        offset = 0 if shape == "text" else 16
        out.append(f'<text x="{x + offset:.1f}" y="{y:.1f}" class="s">{_esc(text)}</text>')
        x += width
    return out, y + 10


def marker_legend(markers: Sequence[Marker], labels: Mapping[str, str]) -> list[tuple[str, str, str]]:
    roles = {m.role for m in markers}
    return [("ring" if role == "root" else "dot", COLORS[role], labels[f"legend_{role}"])
            for role in ("root", "finding", "symptom") if role in roles]


def svg_document(geo: Geometry, height: float, body: list[str], labels: Mapping[str, str], title: str) -> str:
    """The ``<svg>`` element around ``body``: scales to its box's width, named for screen readers."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {geo.width} {height:.0f}" '
            f'width="100%" role="img" aria-label="{_esc(labels["plot"])}: {_esc(title)}" '
            f'class="plot {geo.name}" data-geometry="{geo.name}">'
            f'<title>{_esc(labels["plot"])}: {_esc(title)}</title>'
            f'<style>.t{{font:600 {geo.title_px}px sans-serif;fill:#374151}}'
            f'.s{{font:{geo.small_px}px sans-serif;fill:#4b5563}}'
            '.hv rect{fill:#2563eb;fill-opacity:0}.hv rect:hover{fill-opacity:.1}</style>'
            + "".join(body) + "</svg>")


def point_text(point: OpPoint, metrics: Sequence[tuple[str, float | None]], labels: Mapping[str, str]) -> str:
    """"Pow_4 (op 5) · cosine similarity 0.5 · relative Euclidean distance 0.3"."""
    parts = [labels["location.full"].format(op=point.op, index=point.index)]
    parts += [f"{data_label(labels, 'metric', name)} {fmt_value(value)}" for name, value in metrics
              if value is not None and not math.isnan(value)]
    return " · ".join(parts)


def render_svg(series: Series | None, markers: Sequence[Marker], labels: Mapping[str, str],
               geo: Geometry = WIDE) -> str | None:
    """The SVG markup of a comparison with cosine (the ``tensor`` layout), or None when there is nothing
    to draw; plot_layouts.render_plot draws every layout."""
    if series is None or not series.points:
        return None
    points = sorted(series.points, key=lambda p: p.index)
    axis = XAxis([p.index for p in points], geo)
    xs = [axis.x(p.index) for p in points]
    cosines = [p.cosine if _finite(p.cosine) else None for p in points]
    errors = [p.error if _finite(p.error) else None for p in points]
    items = marker_legend(markers, labels)
    if series.total_ops > len(points):
        items.append(("text", "", labels["plot_shown"].format(shown=len(points), total=series.total_ops)))
    body, legend_height = legend(items, geo)
    cos_top = legend_height + geo.gap
    finite_cos = [c for c in cosines if c is not None]
    cos_scale = linear_scale(finite_cos, series.cosine_threshold, cos_top, geo.panel_height, 1.0) \
        if finite_cos else None
    body += panel(geo, data_label(labels, "metric", "cosine"), cos_top, cos_scale, series.cosine_threshold, labels)
    if cos_scale is not None:
        body += line(xs, cosines, cos_scale, COLORS["line"], geo)
    bottom = cos_top + geo.panel_height
    if any(e is not None for e in errors):
        err_top = bottom + geo.gap
        err_scale = error_scale([e for e in errors if e is not None], series.error_threshold, err_top,
                                geo.panel_height)
        title = data_label(labels, "metric", series.error_metric)
        if err_scale.log:
            title += f" ({labels['log_scale']})"
        body += panel(geo, title, err_top, err_scale, series.error_threshold, labels)
        body += line(xs, errors, err_scale, COLORS["error"], geo)
        bottom = err_top + geo.panel_height
    body += x_ticks(axis, bottom, labels)
    texts = [point_text(p, [("cosine", p.cosine), (series.error_metric, p.error)], labels) for p in points]
    badness = [p.cosine if _finite(p.cosine) else 2.0 for p in points]
    body += hover_bands(points, xs, texts, badness, cos_top, bottom, labels, geo)  # type: ignore[arg-type]
    body += markers_svg(markers, axis, {p.index: c for p, c in zip(points, cosines, strict=True)}, cos_scale,
                        cos_top, bottom)
    return svg_document(geo, bottom + geo.bottom, body, labels, data_label(labels, "metric", "cosine"))
