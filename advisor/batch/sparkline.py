"""Inline SVG sparkline of one job over its runs: output cosine on top, finding counts as bars below.

Plain markup built here (no script, nothing fetched), like the report's plot: the index page stays
one offline file. Every text (tooltips) is escaped here; the template inserts the result as markup.
The cosine axis spans the job's own range, but never less than ``MIN_COSINE_SPAN``: a drop from
0.9999 to 0.8 fills the height, while the 1e-6 jitter of a clean network stays a flat line instead
of being blown up into an alarming zigzag. The tooltip of each point gives the exact numbers.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 184, 50
PAD = 5
LINE_TOP, LINE_BOTTOM = 5, 30
BAR_TOP, BAR_BOTTOM = 35, 47
MIN_COSINE_SPAN = 1e-3
COLORS = {"line": "#2563eb", "ok": "#15803d", "error": "#b91c1c", "warning": "#b45309", "info": "#1d4ed8",
          "failed": "#6b7280", "axis": "#e5e7eb"}


@dataclass(frozen=True)
class TrendPoint:
    run_id: int
    cosine: float | None
    errors: int
    warnings: int
    tone: str               # ok | error | warning | info | failed: colour of the point
    label: str              # tooltip, plain text


def trend_svg(points: Sequence[TrendPoint]) -> str:
    if not points:
        return ""
    step = (WIDTH - 2 * PAD) / max(len(points) - 1, 1)
    xs = [PAD + i * step if len(points) > 1 else WIDTH - PAD for i in range(len(points))]
    ys = _cosine_ys([p.cosine for p in points])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="trend" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="output cosine and findings over '
             f'{len(points)} run(s)">',
             f'<line x1="0" y1="{BAR_BOTTOM + .5}" x2="{WIDTH}" y2="{BAR_BOTTOM + .5}" stroke="{COLORS["axis"]}"/>']
    parts.extend(_bars(points, xs, step))
    for segment in _segments(xs, ys):
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in segment)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{COLORS["line"]}" stroke-width="1.5"/>')
    for point, x, y in zip(points, xs, ys, strict=True):
        color = COLORS.get(point.tone, COLORS["failed"])
        title = f"<title>{_esc(point.label)}</title>"
        if y is None:   # no cosine (failed run, or none in the input): a hollow mark on the baseline
            parts.append(f'<g><circle cx="{x:.1f}" cy="{LINE_BOTTOM:.1f}" r="2.5" fill="#fff" stroke="{color}"/>'
                         f'{title}</g>')
        else:
            parts.append(f'<g><circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{color}"/>{title}</g>')
    parts.append("</svg>")
    return "".join(parts)


def _cosine_ys(values: Sequence[float | None]) -> list[float | None]:
    known = [v for v in values if v is not None]
    if not known:
        return [None] * len(values)
    low, high = min(known), max(known)
    if high - low < MIN_COSINE_SPAN:           # centre a small range in a span of MIN_COSINE_SPAN
        middle = (low + high) / 2
        low, high = middle - MIN_COSINE_SPAN / 2, middle + MIN_COSINE_SPAN / 2
    scale = (LINE_BOTTOM - LINE_TOP) / (high - low)
    return [LINE_TOP + (high - v) * scale if v is not None else None for v in values]


def _segments(xs: Sequence[float], ys: Sequence[float | None]) -> list[list[tuple[float, float]]]:
    """Runs of consecutive known values; a gap where a run had no cosine."""
    segments: list[list[tuple[float, float]]] = [[]]
    for x, y in zip(xs, ys, strict=True):
        if y is None:
            segments.append([])
        else:
            segments[-1].append((x, y))
    return [s for s in segments if len(s) > 1]


def _bars(points: Sequence[TrendPoint], xs: Sequence[float], step: float) -> list[str]:
    tallest = max((p.errors + p.warnings for p in points), default=0)
    if tallest == 0:
        return []
    width = max(min(step * 0.6, 8.0), 2.0)
    unit = (BAR_BOTTOM - BAR_TOP) / tallest
    bars = []
    for point, x in zip(points, xs, strict=True):
        bottom = float(BAR_BOTTOM)
        for count, tone in ((point.errors, "error"), (point.warnings, "warning")):
            if count:
                height = count * unit
                bars.append(f'<rect x="{x - width / 2:.1f}" y="{bottom - height:.1f}" width="{width:.1f}" '
                            f'height="{height:.1f}" fill="{COLORS[tone]}" opacity=".75"/>')
                bottom -= height
    return bars


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
