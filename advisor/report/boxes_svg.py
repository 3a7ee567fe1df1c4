"""Inline SVG of one image's detections for the ``advisor post`` report: golden boxes solid, target
boxes as written dashed, the golden boxes sent through the best mapping dotted, and a line from each
golden box to its paired target box. Plain SVG: no script, every text escaped, coordinates bounded."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..post.exhibit import Box, PostExhibit
from .plot import _esc

MAX_W, MAX_H = 560, 520
MARGIN = 8
STYLES = {
    "golden": 'stroke="#15803d" stroke-width="2" fill="#15803d" fill-opacity="0.06"',
    "target": 'stroke="#dc2626" stroke-width="1.5" stroke-dasharray="6 3" fill="none"',
    "mapped": 'stroke="#2563eb" stroke-width="1.5" stroke-dasharray="2 2" fill="none"',
}
LINK = 'stroke="#6b7280" stroke-width="0.8" stroke-opacity="0.7"'


def _scale(exhibit: PostExhibit) -> tuple[float, float, float]:
    """Pixels per image pixel and the drawing's size; the view extends past the image when boxes do."""
    boxes = (*exhibit.golden, *exhibit.target, *exhibit.mapped)
    width = max([exhibit.width] + [b.x2 for b in boxes if math.isfinite(b.x2)])
    height = max([exhibit.height] + [b.y2 for b in boxes if math.isfinite(b.y2)])
    scale = min(MAX_W / max(width, 1.0), MAX_H / max(height, 1.0))
    return scale, width * scale + 2 * MARGIN, height * scale + 2 * MARGIN


def _rect(box: Box, kind: str, scale: float, tip: str) -> str:
    x, y = MARGIN + box.x1 * scale, MARGIN + box.y1 * scale
    w, h = max((box.x2 - box.x1) * scale, 0.5), max((box.y2 - box.y1) * scale, 0.5)
    if not all(math.isfinite(v) for v in (x, y, w, h)):
        return ""
    return (f'<rect class="{kind}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" {STYLES[kind]}>'
            f'<title>{_esc(tip)}</title></rect>')


def _tip(label: str, box: Box, names: Mapping[int, str]) -> str:
    name = f" {names[box.category]}" if box.category in names else ""
    return (f"{label}: class {box.category}{name}, score {box.score:.4g}, "
            f"[{box.x1:.1f}, {box.y1:.1f}, {box.x2:.1f}, {box.y2:.1f}]")


def _centre(box: Box, scale: float) -> tuple[float, float]:
    return MARGIN + (box.x1 + box.x2) / 2 * scale, MARGIN + (box.y1 + box.y2) / 2 * scale


def render_boxes_svg(exhibit: PostExhibit | None, labels: Mapping[str, str]) -> str | None:
    if exhibit is None or not (exhibit.golden or exhibit.target):
        return None
    scale, width, height = _scale(exhibit)
    names = exhibit.categories
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="boxes" role="img" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">',
             f'<title>{_esc(labels["post.title"])}: {_esc(exhibit.image)}</title>',
             f'<rect x="{MARGIN}" y="{MARGIN}" width="{exhibit.width * scale:.1f}" '
             f'height="{exhibit.height * scale:.1f}" fill="#ffffff" stroke="#9ca3af" stroke-width="1"/>']
    for gi, ti in exhibit.pairs:
        (x1, y1), (x2, y2) = _centre(exhibit.golden[gi], scale), _centre(exhibit.target[ti], scale)
        if all(math.isfinite(v) for v in (x1, y1, x2, y2)):
            parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {LINK}/>')
    for kind, boxes, label in (("golden", exhibit.golden, labels["post.legend_golden"]),
                               ("target", exhibit.target, labels["post.legend_target"]),
                               ("mapped", exhibit.mapped if exhibit.mapping != "identity" else (),
                                labels["post.legend_mapped"])):
        parts.extend(_rect(box, kind, scale, _tip(label, box, names)) for box in boxes)
    parts.append("</svg>")
    return "".join(parts)
