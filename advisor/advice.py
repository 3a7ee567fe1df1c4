"""Advice pages: one YAML file per finding kind in ``knowledge/advice/``, English and Chinese.

Every page has the same sections (checked by tests, like ruff's rule docs):
``title``, and per language ``what``, ``why``, ``confirm``, ``fix`` (one entry per backend) and
``references``. Texts are Jinja templates rendered with the finding (``op``, ``index``, ``values``...),
in a sandbox bounded in time and size (:mod:`advisor.templating`) and with no HTML meaning: reports
escape them like any other text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, Template, nodes
from jinja2.exceptions import TemplateSyntaxError

from .cjk import tidy
from .diagnosis import Finding
from .errors import KnowledgeError
from .resources import data_dir
from .templating import BoundedEnvironment, render_bounded, render_joined, render_problem, template_problem
from .text import oneline, suggest
from .yamlfile import load_yaml

LANGUAGES = ("en", "zh")
SECTIONS = ("what", "why", "confirm", "fix", "references")
BACKENDS: dict[str, dict[str, str]] = {
    "ascend": {"en": "Ascend (ATC / torch_npu)", "zh": "昇腾 (ATC / torch_npu)"},
    "magicmind": {"en": "Cambricon MagicMind", "zh": "寒武纪 MagicMind"},
    "tensorrt": {"en": "TensorRT", "zh": "TensorRT"},
    "onnxruntime": {"en": "ONNX Runtime", "zh": "ONNX Runtime"},
    "pytorch": {"en": "PyTorch", "zh": "PyTorch"},
    # Training comparisons (msprobe, torch_npu): shown first for them, and only for them.
    "training": {"en": "Training (torch_npu / msprobe)", "zh": "训练（torch_npu / msprobe）"},
    "any": {"en": "Any backend", "zh": "通用"},
}

_env = BoundedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)


@dataclass
class Advice:
    """Advice for one finding in one language, rendered and ready to show."""

    kind: str
    title: str
    what: str
    why: str
    confirm: str
    fixes: list[tuple[str, str]]      # (backend label, text): preferred backends first, then BACKENDS order
    references: list[str]

    @property
    def summary(self) -> str:
        """The first sentence of the first fix: what the txt report's 'Expert Advice' line shows."""
        return first_sentence(self.fixes[0][1] if self.fixes else self.what)


_SENTENCE_MARKS = re.compile("[.`\u3002]")


def first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence, on one line: a Chinese 。, or a . followed by
    the end or by a space and a capital, `code` or an opening bracket or quote ("e.g. here" goes on);
    stops inside `code spans` do not count."""
    text = oneline(text)
    in_code = False
    for found in _SENTENCE_MARKS.finditer(text):   # only the characters that can end or quote
        i, char = found.start(), found.group()
        if char == "`":
            in_code = not in_code
        elif in_code:
            continue
        elif char == "。":
            return text[: i + 1]
        elif char == "." and (i + 1 == len(text) or (text[i + 1] == " " and i + 2 < len(text)
                                                    and (text[i + 2].isupper() or text[i + 2] in "`(\"'"))):
            return text[: i + 1]
    return text


def advice_dir() -> Path:
    return data_dir("knowledge") / "advice"


class AdviceBook:
    """The advice pages one run can show: the built-in knowledge pages plus the pages its rule packs
    carry inline. One book per run (packs loaded for one job never leak into another); a kind has one
    page, and the built-in pages cannot be replaced."""

    def __init__(self, inline: dict[str, tuple[dict[str, Any], str]] | None = None) -> None:
        self.inline: dict[str, tuple[dict[str, Any], str]] = dict(inline or {})   # kind -> (page, "file:line")

    def add(self, kind: str, page: dict[str, Any], source: str) -> None:
        """Add a rule pack's inline page; a second, different page for the kind names both places."""
        if kind in builtin_kinds():
            raise KnowledgeError(f"kind '{kind}' already has a built-in advice page; emit it without inline "
                                 f"advice, or choose another kind", path=source)
        if kind in self.inline and self.inline[kind][0] != page:
            raise KnowledgeError(f"advice for kind '{kind}' is defined twice, also in {self.inline[kind][1]}",
                                 path=source)
        self.inline[kind] = (page, source)

    def page(self, kind: str) -> dict[str, Any]:
        if kind in self.inline:
            return self.inline[kind][0]
        return _knowledge_page(kind)

    def source(self, kind: str) -> tuple[Path, int | None]:
        """The file (and line) that defines the page of ``kind``: a rule pack's file for inline pages."""
        if kind in self.inline:
            where = self.inline[kind][1]
            path, _, line = where.rpartition(":")
            return (Path(path), int(line)) if path and line.isdigit() else (Path(where), None)
        return advice_dir() / f"{kind}.yaml", None

    def kinds(self) -> list[str]:
        return sorted(set(builtin_kinds()) | set(self.inline))


def clear_cache() -> None:
    """Forget loaded knowledge pages (tests point advice_dir elsewhere)."""
    _knowledge_page.cache_clear()


def load_page(kind: str, book: AdviceBook | None = None) -> dict[str, Any]:
    return (book or AdviceBook()).page(kind)


@cache
def _knowledge_page(kind: str) -> dict[str, Any]:
    path = advice_dir() / f"{kind}.yaml"
    if not path.is_file():
        raise KnowledgeError(f"no advice page for finding kind '{kind}' (expected {path.name})", path=path.parent)
    page = load_yaml(path, KnowledgeError)
    validate_page(page, path)
    return page


def validate_page(page: Any, path: Path, render: bool = False) -> None:
    """A page's shape and texts; ``render``: each text also rendered once with sample values (a pack's
    inline pages, checked once per pack content; the shipped pages are rendered by the test suite)."""
    if not isinstance(page, dict):
        raise KnowledgeError("an advice page must be a mapping", path=path)
    title = page.get("title")
    if not isinstance(title, dict) or set(LANGUAGES) - set(title):
        raise KnowledgeError("needs a title in en and zh", path=path, field="title")
    for lang in LANGUAGES:
        body = page.get(lang)
        if not isinstance(body, dict):
            raise KnowledgeError(f"missing the '{lang}' section", path=path, field=lang)
        for section in SECTIONS:
            if not body.get(section):
                raise KnowledgeError(f"missing section '{section}'", path=path, field=f"{lang}.{section}")
        fix = body["fix"]
        if not isinstance(fix, dict) or not set(fix) <= set(BACKENDS):
            raise KnowledgeError(f"'fix' maps backends ({', '.join(BACKENDS)}) to texts",
                                 path=path, field=f"{lang}.fix")
        for section, text in page_texts(body):
            problem = template_problem(_env, str(text)) or advice_names_problem(str(text)) or (
                render_problem(_env, str(text), _sample_context()) if render else None)
            if problem:
                raise KnowledgeError(problem, path=path, field=f"{lang}.{section}")


def page_texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(section, template) of one language of a page: what, why, confirm and each backend's fix."""
    fix = body.get("fix") if isinstance(body.get("fix"), dict) else {}
    return [(s, str(body[s])) for s in ("what", "why", "confirm") if s in body] + \
        [(f"fix.{b}", str(t)) for b, t in fix.items()]


# What an advice text is rendered with (render_advice): the finding's op, and its values by name.
ADVICE_CONTEXT = ("op", "index", "op_type", "values", "confidence")


def advice_names_problem(text: str, values: Collection[str] | None = None) -> str | None:
    """The first name an advice text uses that rendering will not have (a typo would stop the report
    with an undefined-name error): a name outside ADVICE_CONTEXT, a field of ``op`` (a name, not a
    fact) and, when ``values`` is given (the names the emitting rule puts in its finding's
    ``values``), ``values.NAME`` of another name. Read from Jinja's AST."""
    try:
        tree = _env.parse(text)
    except TemplateSyntaxError:
        return None                       # template_problem reports it
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    for node in tree.find_all(nodes.Name):
        if node.ctx == "load" and node.name not in {*ADVICE_CONTEXT, *local, *_env.globals, "loop"}:
            return (f"unknown name '{node.name}' (line {node.lineno} of the text){suggest(node.name, ADVICE_CONTEXT)}; "
                    f"an advice text sees {', '.join(ADVICE_CONTEXT)}")
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Call)):
        base, name = _read_field(node)
        if base is None or base in local:
            continue
        if base != "values":
            if base in ADVICE_CONTEXT and not (isinstance(node, nodes.Call) or name in _STRING_METHODS):
                return (f"'{base}.{name}' (line {node.lineno} of the text): '{base}' is a plain value, not a fact; "
                        f"the finding's numbers are values.NAME (the rule's emit.values)")
            continue
        if values is not None and name is not None and name not in values and name not in _MAPPING_METHODS:
            return (f"unknown value 'values.{name}' (line {node.lineno} of the text){suggest(name, sorted(values))}; "
                    f"the rule's emit.values give: {', '.join(sorted(values)) or 'none'}")
    return None


_MAPPING_METHODS = frozenset({"get", "items", "keys", "values"})
_STRING_METHODS = frozenset({"upper", "lower", "title", "capitalize", "replace", "split", "strip", "startswith",
                             "endswith", "format", "join"})


def _read_field(node: nodes.Node) -> tuple[str | None, str | None]:
    """(base name, field) of ``base.field``, ``base['field']`` or ``base.get('field', ...)``."""
    if isinstance(node, nodes.Call):
        target = node.node
        if (isinstance(target, nodes.Getattr) and target.attr == "get" and isinstance(target.node, nodes.Name)
                and node.args and isinstance(node.args[0], nodes.Const) and isinstance(node.args[0].value, str)):
            return target.node.name, node.args[0].value
        return None, None
    if not isinstance(node.node, nodes.Name):
        return None, None
    if isinstance(node, nodes.Getattr):
        return node.node.name, node.attr
    if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
        return node.node.name, node.arg.value
    return None, None


class _SampleValues(dict):
    """A finding's ``values`` when a page is checked: any value the page reads is a sample number."""

    def __missing__(self, key: str) -> float:
        return 2


def _sample_context() -> dict[str, Any]:
    """What an advice text renders with when its page is checked (see templating.render_problem)."""
    return {"op": "sample_op", "index": 2, "op_type": "Conv", "values": _SampleValues(), "confidence": 0.5}


def builtin_kinds() -> list[str]:
    """The finding kinds with a page in knowledge/advice (what every pack may emit)."""
    return sorted(p.stem for p in advice_dir().glob("*.yaml"))


def known_kinds(book: AdviceBook | None = None) -> list[str]:
    return (book or AdviceBook()).kinds()


@lru_cache(maxsize=1024)
def _compiled(text: str) -> Template:
    """Advice texts are rendered once per finding and language: compile each text only once."""
    return _env.from_string(text)


def preferred_backends(chosen: Sequence[str], training: bool = False) -> tuple[str, ...]:
    """The backends whose advice comes first: the user's choice (or their build tool), unless it is
    every toolchain (then none is preferred and the pages keep their order). A training comparison
    puts the training advice first; the others never show it."""
    tools = [b for b in BACKENDS if b not in ("any", "training")]
    chosen = tuple(b for b in chosen if b != "training")
    preferred = () if set(tools) <= set(chosen) else chosen
    return ("training", *preferred) if training else preferred


def render_advice(finding: Finding, lang: str = "en", prefer: Sequence[str] = (),
                  book: AdviceBook | None = None) -> Advice:
    """The finding's advice page rendered. ``prefer``: backends whose fix comes first (the build's
    tool, or the --backend choice), so the one-line summary speaks to the user's toolchain. ``book``:
    the run's advice pages (built-in only when None)."""
    book = book or AdviceBook()
    page = book.page(finding.kind)
    body = page[lang]
    context = {
        "op": finding.op,
        "index": finding.index,
        "op_type": finding.op_type,
        "values": finding.values,
        "confidence": finding.confidence,
    }

    def render(text: str, section: str) -> str:
        try:
            return tidy(render_bounded(_compiled(str(text)), context).strip(), lang)
        except Exception as exc:  # noqa: BLE001 - a page's template failing is the page's problem: one line
            path, line = book.source(finding.kind)
            raise KnowledgeError(f"template error: {exc}", path=path, line=line, field=f"{lang}.{section}") from None

    order = [b for b in prefer if b in BACKENDS] + [b for b in BACKENDS if b not in prefer and b != "training"]
    backends = [b for b in order if b in body["fix"]]
    sections = {"what": body["what"], "why": body["why"], "confirm": body["confirm"],
                **{f"fix.{b}": body["fix"][b] for b in backends}}
    # one render of the whole page; each section alone when that cannot be (templating.render_joined)
    joined = render_joined(_env, tuple(str(text) for text in sections.values()), context)
    if joined is None:
        texts = [render(str(text), section) for section, text in sections.items()]
    else:
        texts = [tidy(text.strip(), lang) for text in joined]
    return Advice(
        kind=finding.kind,
        title=page["title"][lang],
        what=texts[0],
        why=texts[1],
        confirm=texts[2],
        fixes=[(BACKENDS[b][lang], text) for b, text in zip(backends, texts[3:], strict=True)],
        references=[str(r) for r in body["references"]],
    )
