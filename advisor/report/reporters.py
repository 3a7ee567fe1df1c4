"""One reporter interface, one registry: html, md and txt render Jinja templates from reports/,
json is built in code. A new format is one object with ``format``, ``filename`` and ``render``."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ..errors import UsageError
from ..resources import cache_dir, data_dir
from ..text import oneline
from .boxes_svg import render_boxes_svg
from .graph_svg import render_graph_svg
from .markdown import md_code, md_fence, md_text
from .model import ReportView
from .payload import render_json
from .plot import NARROW, WIDE
from .plot_layouts import render_plot
from .template_cache import CompiledTemplates
from .text import fmt_value, html_text, name_breaks, ref_link


@runtime_checkable
class Reporter(Protocol):
    format: str            # the name used on the command line (--format)
    filename: str          # the file written in the output folder

    def render(self, view: ReportView) -> str: ...


@cache
def environment(folder: Path) -> Environment:
    """Templates of ``folder``; HTML ones (``*.html.j2``) autoescape, Markdown and txt do not. Their
    compiled code is kept in advisor's cache folder (template_cache.py)."""
    env = Environment(
        loader=FileSystemLoader(folder),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2", "svg"), default=False,
                                     default_for_string=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(html_text=html_text, ref_link=ref_link, md_code=md_code, md_text=md_text,
                       md_fence=md_fence, oneline=oneline, value=fmt_value, breaks=name_breaks)
    if cache_dir("templates") is not None:
        env.bytecode_cache = CompiledTemplates(env)
    return env


def templates_dir() -> Path:
    return data_dir("reports")


class TemplateReporter:
    def __init__(self, format: str, filename: str, template: str) -> None:
        self.format = format
        self.filename = filename
        self.template = template

    def context(self, view: ReportView) -> dict[str, Any]:
        return {}

    def render(self, view: ReportView) -> str:
        template = environment(templates_dir()).get_template(self.template)
        return template.render(view=view, t=view.labels, **self.context(view))


class HtmlReporter(TemplateReporter):
    """Self-contained: the stylesheet, the plots and the table-sorting script are inlined, nothing is fetched."""

    def context(self, view: ReportView) -> dict[str, Any]:
        # The plot twice: the page shows the wide drawing on desktops and the narrow one on phones.
        svg = render_plot(view.series, view.markers, view.labels, WIDE)
        svg_narrow = render_plot(view.series, view.markers, view.labels, NARROW)
        static = templates_dir() / "static"
        css = (static / "report.css").read_text(encoding="utf-8")
        sort_js = (static / "sort.js").read_text(encoding="utf-8")
        focus_js = (static / "focus.js").read_text(encoding="utf-8")
        graph_svg = render_graph_svg(view.neighbourhood, view.labels)
        boxes_svg = render_boxes_svg(view.post, view.labels)
        return {"svg": Markup(svg) if svg else None, "svg_narrow": Markup(svg_narrow) if svg_narrow else "",
                "css": Markup(css), "sort_js": Markup(sort_js), "focus_js": Markup(focus_js),
                "graph_svg": Markup(graph_svg) if graph_svg else None,
                "boxes_svg": Markup(boxes_svg) if boxes_svg else None}


class JsonReporter:
    format = "json"
    filename = "report.json"

    def render(self, view: ReportView) -> str:
        return render_json(view)


REPORTERS: dict[str, Reporter] = {}


def register(reporter: Reporter) -> None:
    REPORTERS[reporter.format] = reporter


def get_reporter(fmt: str) -> Reporter:
    try:
        return REPORTERS[fmt]
    except KeyError:
        raise UsageError(f"unknown report format '{fmt}': choose from {', '.join(REPORTERS)}") from None


for _reporter in (HtmlReporter("html", "report.html", "report.html.j2"),
                  TemplateReporter("md", "report.md", "report.md.j2"),
                  JsonReporter(),
                  TemplateReporter("txt", "report.txt", "report.txt.j2")):
    register(_reporter)
