"""Inline SVG of the root cause's graph neighbourhood (``advisor run --graph``): its inputs on the
left, the op itself (with the original ops fused into it) in the middle, its first successors on the
right. Plain SVG built here: no script, nothing fetched, every name from the model escaped."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..diagnosis import GraphNode, Neighbourhood
from .plot import _esc

WIDTH = 880
BOX_W, BOX_H, ROW_GAP, TOP = 220, 46, 14, 40
COLUMNS = {"input": 20, "focus": (WIDTH - BOX_W) // 2, "output": WIDTH - BOX_W - 20}
MAX_CHARS = 30
MAX_FUSED_SHOWN = 12
COLORS = {"deviates": "#fee2e2", "agrees": "#dcfce7", "unknown": "#f3f4f6", "focus_stroke": "#dc2626",
          "stroke": "#9ca3af", "text": "#374151", "edge": "#6b7280"}


def _short(text: str, limit: int = MAX_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def _fill(node: GraphNode) -> str:
    if node.deviates is None:
        return COLORS["unknown"]
    return COLORS["deviates"] if node.deviates else COLORS["agrees"]


def fused_others(node: GraphNode) -> list[str]:
    """The original ops fused into ``node``, without ``node`` itself: an op that kept its name
    through a fusion is not "fused from" itself."""
    return [name for name in dict.fromkeys(node.fused_from) if name and name != node.name]


def _box(node: GraphNode, x: int, y: int, labels: Mapping[str, str]) -> str:
    stroke = COLORS["focus_stroke"] if node.role == "focus" else COLORS["stroke"]
    width = 2 if node.role == "focus" else 1
    cosine = (f" · cos {node.cosine:.4g}" if node.cosine is not None and math.isfinite(node.cosine) else "")
    tip = node.name + (f" ({node.op_type})" if node.op_type else "")
    if fused_others(node):
        tip += f"\n{labels.get('graph_fused_from', 'fused from')}: " + ", ".join(fused_others(node))
    if node.passes:
        tip += f"\n{labels.get('graph_passes', 'fusion passes')}: " + ", ".join(node.passes)
    return (f'<g class="gnode {node.role}"><title>{_esc(tip)}</title>'
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{_fill(node)}" '
            f'stroke="{stroke}" stroke-width="{width}"/>'
            f'<text x="{x + 8}" y="{y + 19}" font-size="12" font-weight="600" fill="{COLORS["text"]}">'
            f'{_esc(_short(node.name))}</text>'
            f'<text x="{x + 8}" y="{y + 36}" font-size="11" fill="{COLORS["text"]}">'
            f'{_esc(_short((node.op_type or "") + cosine, MAX_CHARS + 6))}</text></g>')


def render_graph_svg(neighbourhood: Neighbourhood | None, labels: Mapping[str, str]) -> str | None:
    """The SVG markup, or None when there is no neighbourhood to draw."""
    if neighbourhood is None or not neighbourhood.nodes:
        return None
    by_role: dict[str, list[GraphNode]] = {"input": [], "focus": [], "output": []}
    for node in neighbourhood.nodes:
        by_role.setdefault(node.role, []).append(node)
    focus = by_role["focus"][0] if by_role["focus"] else None
    fused = fused_others(focus) if focus else []
    rows = max(len(by_role["input"]), len(by_role["output"]), 1)
    column_height = rows * (BOX_H + ROW_GAP) - ROW_GAP
    fused_lines = min(len(fused), MAX_FUSED_SHOWN) + (1 if len(fused) > MAX_FUSED_SHOWN else 0)
    fused_height = (fused_lines + 1) * 16 if fused else 0
    height = TOP + max(column_height, BOX_H + fused_height) + 40
    positions: dict[tuple[str, int], tuple[int, int]] = {}
    parts: list[str] = []
    for role in ("input", "output"):
        nodes = by_role[role]
        offset = TOP + (column_height - (len(nodes) * (BOX_H + ROW_GAP) - ROW_GAP)) // 2
        for k in range(len(nodes)):
            positions[(role, k)] = (COLUMNS[role], offset + k * (BOX_H + ROW_GAP))
    focus_y = TOP + max(0, (column_height - BOX_H) // 2)
    mid = focus_y + BOX_H // 2
    for role, side in (("input", "in"), ("output", "out")):
        for k, _ in enumerate(by_role[role]):
            x, y = positions[(role, k)]
            if side == "in":
                x1, y1, x2, y2 = x + BOX_W, y + BOX_H // 2, COLUMNS["focus"], mid
            else:
                x1, y1, x2, y2 = COLUMNS["focus"] + BOX_W, mid, x, y + BOX_H // 2
            parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2 - 2}" y2="{y2}" stroke="{COLORS["edge"]}" '
                         'stroke-width="1.2" marker-end="url(#garrow)"/>')
    for role in ("input", "output"):
        for k, node in enumerate(by_role[role]):
            x, y = positions[(role, k)]
            parts.append(_box(node, x, y, labels))
    if focus is not None:
        parts.append(_box(focus, COLUMNS["focus"], focus_y, labels))
        if fused:
            y = focus_y + BOX_H + 18
            parts.append(f'<text x="{COLUMNS["focus"]}" y="{y}" font-size="11" font-weight="600" '
                         f'fill="{COLORS["text"]}">{_esc(labels.get("graph_fused_from", "fused from"))}:</text>')
            for k, name in enumerate(fused[:MAX_FUSED_SHOWN]):
                parts.append(f'<text x="{COLUMNS["focus"] + 10}" y="{y + 16 * (k + 1)}" font-size="11" '
                             f'fill="{COLORS["text"]}">{_esc(_short(name, MAX_CHARS + 4))}</text>')
            if len(fused) > MAX_FUSED_SHOWN:
                parts.append(f'<text x="{COLUMNS["focus"] + 10}" y="{y + 16 * (MAX_FUSED_SHOWN + 1)}" '
                             f'font-size="11" fill="{COLORS["text"]}">… +{len(fused) - MAX_FUSED_SHOWN}</text>')
    notes = []
    if neighbourhood.more_inputs:
        notes.append(labels.get("graph_more_inputs", "+{n} more inputs").format(n=neighbourhood.more_inputs))
    if neighbourhood.more_outputs:
        notes.append(labels.get("graph_more_outputs", "+{n} more successors").format(n=neighbourhood.more_outputs))
    header = (f'<text x="20" y="22" font-size="12" fill="{COLORS["text"]}">'
              f'{_esc(labels.get("graph_inputs", "inputs"))}</text>'
              f'<text x="{COLUMNS["focus"]}" y="22" font-size="12" fill="{COLORS["text"]}">'
              f'{_esc(labels.get("graph_op", "op"))}</text>'
              f'<text x="{COLUMNS["output"]}" y="22" font-size="12" fill="{COLORS["text"]}">'
              f'{_esc(labels.get("graph_successors", "successors"))}</text>')
    footer = (f'<text x="20" y="{height - 12}" font-size="11" fill="{COLORS["text"]}">{_esc("; ".join(notes))}</text>'
              if notes else "")
    title = labels.get("graph_title", "Graph neighbourhood of {op}").format(op=neighbourhood.focus)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
            f'aria-label="{_esc(title)}" class="graph-neighbourhood">'
            '<defs><marker id="garrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            f'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="{COLORS["edge"]}"/></marker></defs>'
            f'{header}{"".join(parts)}{footer}</svg>')
