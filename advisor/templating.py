"""Evidence and advice templates, rendered in a sandbox with bounds on time and size.

Pack authors write Jinja templates (a rule's ``evidence``, an advice page's sections); a pack is code
from someone else. Jinja's sandbox already stops attribute tricks and code execution; this module also
stops a small template from meaning large work:

* at ``rules validate`` (and whenever a pack or advice page is loaded) :func:`template_problem` refuses
  what an evidence or advice text never needs and what makes work grow without bound: loops inside
  loops, recursive loops, macros and call blocks (recursion), ``namespace()`` (state that grows across
  iterations, e.g. string doubling), and ``include`` / ``import`` / ``extends`` (a text stands alone);
  then :func:`render_problem` renders each text once with sample facts, so what fails only when
  rendered (``range(10**9)`` over the sandbox's bound, a division by zero) fails there, not in every run;
* while rendering, ``*``, ``**``, ``+``, ``~``, filter and method arguments are checked so no single
  step makes a string or list longer than ``MAX_OUTPUT`` characters, or a number with more than
  ``MAX_INT_BITS`` bits; the output is cut off at ``MAX_OUTPUT`` characters, and a render that takes
  more than ``TIME_LIMIT`` seconds is stopped (a timer signal in the main thread, where advisor renders).

A template over a bound raises ``TemplateBoundError`` (a ``jinja2.TemplateError``), which the callers
already turn into the one-line error naming the rule or advice file.
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import threading
from collections.abc import Iterator
from typing import Any

from jinja2 import Template, TemplateError, TemplateSyntaxError, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.sandbox import SandboxedEnvironment

MAX_OUTPUT = 100_000            # characters of one rendered text (an advice page is ~3,000)
MAX_INT_BITS = 4_096
TIME_LIMIT = 2.0                # seconds for one render


class TemplateBoundError(TemplateError):
    """A template went over a bound (size, time)."""


def _bounded(value: Any) -> Any:
    if isinstance(value, (str, list, tuple, bytes)) and len(value) > MAX_OUTPUT:
        raise TemplateBoundError(f"the template makes a value longer than {MAX_OUTPUT:,} characters")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise TemplateBoundError("the template makes a number too large to print")
    return value


def _check_args(args: tuple, kwargs: dict[str, Any]) -> None:
    """Width-like arguments (of padding methods and filters) and format strings with huge widths."""
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_OUTPUT:
            raise TemplateBoundError(f"an argument larger than {MAX_OUTPUT:,} in a template")
        if isinstance(arg, str) and _WIDE_FORMAT.search(arg):
            raise TemplateBoundError("a format width larger than 9,999 in a template")


_WIDE_FORMAT = re.compile(r"(%[-+ #0]*|\{[^{}]*:[^{}]*?)\d{5,}")


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, bytes)) else 0


class _BoundedCodeGenerator(CodeGenerator):
    """``a ~ b`` (string concatenation) goes through ``environment.concat``, which checks the size."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


_DICT_ATTRIBUTES = frozenset(dir(dict))


class BoundedEnvironment(SandboxedEnvironment):
    """A sandbox whose operators, filters and calls refuse results over the bounds above."""

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = _BoundedFilters(self.filters)

    def concat(self, parts: tuple) -> str:
        texts = [str(p) for p in parts]
        if sum(map(len, texts)) > MAX_OUTPUT:
            raise TemplateBoundError(f"the template makes a value longer than {MAX_OUTPUT:,} characters")
        return "".join(texts)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > 256:
            raise TemplateBoundError("an exponent larger than 256 in a template")
        if operator == "*":
            count = right if isinstance(left, (str, list, tuple)) else left
            if isinstance(count, int) and max(_size(left), _size(right), 1) * count > MAX_OUTPUT:
                raise TemplateBoundError(f"the template makes a value longer than {MAX_OUTPUT:,} characters")
            if isinstance(left, int) and isinstance(right, int) \
                    and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateBoundError("the template makes a number too large to print")
        if operator == "%" and isinstance(left, str):
            _check_args((left,), {})
        if operator == "+" and _size(left) + _size(right) > MAX_OUTPUT:
            raise TemplateBoundError(f"the template makes a value longer than {MAX_OUTPUT:,} characters")
        return _bounded(super().call_binop(context, operator, left, right))

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``fact.field``: a plain dict's key that names no dict attribute is what the sandbox returns
        once ``getattr`` has failed, here without raising and catching an AttributeError (a large
        run renders a million such lookups into its findings' evidence)."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            return obj[attribute] if attribute in obj else self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        owner = getattr(__obj, "__self__", None)
        if type(owner) is dict and __obj == owner.get:
            # values.get('x'): a plain dict's own get, which the sandbox would let through unchanged (a
            # safe callable, no context); advice and evidence texts make it on every finding
            return _bounded(owner.get(*args, **kwargs))
        if isinstance(owner, (str, list, tuple)):     # "x".ljust(n), "{:>n}".format()
            _check_args((owner, *args), kwargs)
        return _bounded(SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs))


class _BoundedFilters(dict):
    """The filter table, each filter's result checked (also filters registered later, e.g. ``num``);
    the filters that pad or repeat also have their width arguments checked."""

    def __init__(self, filters: dict[str, Any]) -> None:
        super().__init__()
        for name, function in filters.items():
            self[name] = function

    def __setitem__(self, name: str, function: Any) -> None:
        super().__setitem__(name, _bounded_filter(name, function))


_WIDTH_FILTERS = {"center", "indent", "wordwrap", "truncate", "batch", "slice", "format"}


def _bounded_filter(name: str, function: Any) -> Any:
    if getattr(function, "_bounded", False):
        return function

    @functools.wraps(function)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if name in _WIDTH_FILTERS:
            _check_args(args, kwargs)
        return _bounded(function(*args, **kwargs))

    bounded._bounded = True  # type: ignore[attr-defined]
    return bounded


def template_problem(env: SandboxedEnvironment, text: str) -> str | None:
    """Why ``text`` is not an acceptable evidence or advice template (syntax, or a construct that makes
    work grow without bound), or None."""
    try:
        tree = env.parse(text)
        return _unbounded_construct(tree)
    except TemplateSyntaxError as exc:
        return f"template error: {exc.message}"
    except RecursionError:          # Jinja's parser and node walk recurse once per nesting level
        return "template error: expressions nested too deeply"


def _unbounded_construct(tree: nodes.Template) -> str | None:
    other = next(tree.find_all((nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends)), None)
    if other is not None:
        statement = {nodes.Include: "include", nodes.Import: "import", nodes.FromImport: "import",
                     nodes.Extends: "extends"}[type(other)]
        return (f"template error: '{{% {statement} %}}' (line {other.lineno} of the template) is not allowed in "
                "evidence or advice texts: a text stands alone, it cannot load another template")
    if any(True for _ in tree.find_all((nodes.Macro, nodes.CallBlock))):
        return "template error: macros and call blocks are not allowed in evidence or advice texts"
    for loop in tree.find_all(nodes.For):
        if loop.recursive:
            return "template error: recursive loops are not allowed in evidence or advice texts"
        if any(True for _ in loop.find_all(nodes.For)):
            return "template error: a loop inside a loop is not allowed in evidence or advice texts"
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name == "namespace":
            return "template error: namespace() is not allowed in evidence or advice texts"
    return None


def render_problem(env: SandboxedEnvironment, text: str, context: dict[str, Any]) -> str | None:
    """Why rendering ``text`` once with ``context`` (sample facts) fails, whatever fails: the sandbox
    (``range`` over its bound), a bound of this module, or Python (a division by zero); None when it
    renders. ``advisor rules validate`` runs every evidence and advice text through this, so what would
    fail in every run fails there, with the file and line."""
    try:
        render_bounded(env.from_string(text), context)
    except Exception as exc:  # noqa: BLE001 - every failure of a pack's template is the pack's problem
        line = _template_line(exc)
        return f"template error when rendered with sample facts{line}: {type(exc).__name__}: {exc}"
    return None


def _template_line(exc: BaseException) -> str:
    """`` (line N of the template)`` from the traceback Jinja rewrote to the template's lines, if any."""
    line = getattr(exc, "lineno", None)
    trace = exc.__traceback__
    while line is None and trace is not None:
        if trace.tb_frame.f_code.co_filename == "<template>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return f" (line {line} of the template)" if line else ""


def fields_read(env: SandboxedEnvironment, text: str) -> tuple[tuple[str, str], ...] | None:
    """The ``(name, field)`` pairs of the context ``text`` reads (``op.out_cosine``, ``op['dtype']``,
    ``params.min_confidence``), when that is all it reads of the context; None when it reads a name
    of the context whole (``op | tojson``, ``op.get('x')``): then its result depends on more than
    these fields. Names it sets itself (``{% set %}``, loop variables) are its own."""
    try:
        tree = env.parse(text)
    except TemplateError:
        return None
    local = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    pairs: dict[tuple[str, str], None] = {}
    through: set[int] = set()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        field = node.attr if isinstance(node, nodes.Getattr) else (
            node.arg.value if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) else None)
        if isinstance(node.node, nodes.Name) and node.node.name not in local and field is not None \
                and not hasattr(dict, field):             # op.items is the method, not the field
            pairs[(node.node.name, field)] = None
            through.add(id(node.node))
    if any(n.ctx == "load" and n.name not in local and id(n) not in through for n in tree.find_all(nodes.Name)):
        return None
    if any(True for _ in tree.find_all(nodes.Call)):      # a method of a field may read more than the field
        return None
    return tuple(pairs)


def render_bounded(template: Template, context: dict[str, Any]) -> str:
    """``template`` rendered with ``context``, at most MAX_OUTPUT characters and TIME_LIMIT seconds."""
    parts: list[str] = []
    size = 0
    timer = _Timer(TIME_LIMIT)
    try:
        with timer:
            for chunk in template.generate(context):
                size += len(chunk)
                if size > MAX_OUTPUT:
                    raise TemplateBoundError(f"the template's text is longer than {MAX_OUTPUT:,} characters")
                parts.append(chunk)
    except Exception:
        if timer.expired:      # Jinja may fail while rewriting the traceback of the interrupted frame
            raise TemplateBoundError(f"the template took longer than {TIME_LIMIT:g} s to render") from None
        raise
    return "".join(parts)


# Between the texts of one joined render: a private-use character, which Jinja's whitespace control
# (``{%-``, ``-}}``) does not strip and no rule or advice text holds.
_MARK = "\ue000"


def render_joined(env: SandboxedEnvironment, texts: tuple[str, ...], context: dict[str, Any]) -> list[str] | None:
    """Each of ``texts`` rendered with one ``context`` as ``render_bounded`` renders it alone, in one
    render of the texts joined (a finding's advice is eight texts with one context: a million-row
    comparison's 6,700 findings made 54,000 Jinja contexts). None when that cannot give each text's
    own result, and then the caller renders each alone, which also says which text failed: the texts
    cannot be joined (``_joined_template``), the joined render fails or exceeds a bound, or a rendered
    value holds the mark between the texts."""
    template = _joined_template(env, texts)
    if template is None:
        return None
    try:
        parts = render_bounded(template, context).split(_MARK)
    except Exception:  # noqa: BLE001 - the texts rendered alone raise it again, naming their own
        return None
    return parts if len(parts) == len(texts) else None


@functools.lru_cache(maxsize=256)
def _joined_template(env: SandboxedEnvironment, texts: tuple[str, ...]) -> Template | None:
    """The texts as one template, compiled once; None where a text alone would render differently:
    one holds the mark, ends with a newline (Jinja drops a text's last newline), or assigns a
    variable (``{% set %}`` would reach the texts after it); or the environment strips blocks'
    leading spaces (which a text's start and the mark would not share)."""
    if len(texts) < 2 or env.lstrip_blocks or any(_MARK in text or text.endswith(("\n", "\r")) for text in texts):
        return None
    joined = _MARK.join(texts)
    try:
        tree = env.parse(joined)
    except TemplateError:
        return None
    if any(True for _ in tree.find_all((nodes.Assign, nodes.AssignBlock))):
        return None
    return env.from_string(joined)


class _Timer:
    """Interrupt the block after ``seconds`` in the main thread; elsewhere (a signal can only be handled by
    the main thread) the size bounds alone apply. Inside ``many_renders`` the signal's handler is the
    session's, set once: each block then only arms and disarms the timer."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._armed = False
        self._shared = False

    def _expire(self, signum: int, frame: Any) -> None:
        self.expired = True
        raise TemplateBoundError(f"the template took longer than {self.seconds:g} s to render")

    def __enter__(self) -> _Timer:
        if threading.current_thread() is threading.main_thread():
            self._shared = _SESSION.depth > 0
            if self._shared:
                _SESSION.timer = self
            else:
                self._previous = signal.signal(signal.SIGALRM, self._expire)
            self._old = signal.setitimer(signal.ITIMER_REAL, self.seconds)
            self._armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            if self._shared:
                _SESSION.timer = None
            else:
                signal.signal(signal.SIGALRM, self._previous)
            if self._old[0]:
                signal.setitimer(signal.ITIMER_REAL, *self._old)


class _Session:
    depth = 0                      # nested many_renders blocks (main thread)
    timer: _Timer | None = None    # the render the timer is armed for
    previous: Any = None           # the handler before the outermost block


_SESSION = _Session()


def _session_alarm(signum: int, frame: Any) -> None:
    if _SESSION.timer is not None:
        _SESSION.timer._expire(signum, frame)


@contextlib.contextmanager
def many_renders() -> Iterator[None]:
    """Many bounded renders in a row (the evidence of every finding, a report's advice pages): the
    timer signal's handler is set once for the block instead of once per text (two system calls
    and a handler swap per text, on tens of thousands of texts). Each render keeps its own bounds."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _SESSION.depth == 0:
        _SESSION.previous = signal.signal(signal.SIGALRM, _session_alarm)
    _SESSION.depth += 1
    try:
        yield
    finally:
        _SESSION.depth -= 1
        if _SESSION.depth == 0:
            signal.signal(signal.SIGALRM, _SESSION.previous)
