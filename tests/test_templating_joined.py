"""A finding's texts rendered in one pass give what each text rendered alone gives, or nothing (and
then each is rendered alone): joining must never change a word of the advice or the evidence."""

from __future__ import annotations

import pytest
from jinja2 import StrictUndefined

from advisor.advice import AdviceBook, _sample_context, render_advice
from advisor.diagnosis import Finding
from advisor.templating import BoundedEnvironment, fields_read, render_bounded, render_joined

ENV = BoundedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)
CONTEXT = {"op": "Conv_3", "op_type": "Conv2D", "index": 3, "values": {"keep_fp32": "a,b", "scale": 0.25}}


def alone(texts: tuple[str, ...], context: dict) -> list[str]:
    return [render_bounded(ENV.from_string(text), context) for text in texts]


@pytest.mark.parametrize("texts", [
    ("{{ op }}{% if op_type %} ({{ op_type }}){% endif %} overflows", "Plain text.", "  spaced  "),
    ("{{ op -}}   ", "   {{- op_type }}", "{%- if values.scale > 0.1 -%} big {%- endif -%}", "{# note #}x"),
    ("{% for name in values.keep_fp32.split(',') %}{{ name }};{% endfor %}", "{{ index * 2 }}",
     "{{ '%.3f' % values.scale }}"),
    ("{% raw %}{{ kept }}{% endraw %}", "{% with x = 4 %}{{ x }}{% endwith %}", "{{ x | default('none') }}"),
])
def test_joined_texts_render_as_each_alone(texts):
    context = {**CONTEXT, "x": "outer"}
    assert render_joined(ENV, texts, context) == alone(texts, context)


@pytest.mark.parametrize("texts", [
    ("{% set op = 'other' %}a", "{{ op }}"),        # an assignment would reach the next text
    ("ends with a newline\n", "{{ op }}"),          # Jinja drops the last newline of a text alone
    ("{{ op }}\ue000", "b"),                        # a text holding the mark
    ("{{ op }}", "{{ 1 / 0 }}"),                    # a text that fails: rendered alone, it names itself
    ("{{ op }}", "{% if %}"),                       # a text that does not compile
    ("only one",),
])
def test_texts_that_cannot_be_joined_are_left_to_render_alone(texts):
    assert render_joined(ENV, texts, CONTEXT) is None


def test_a_value_holding_the_mark_is_left_to_render_alone():
    texts = ("{{ op }}", "{{ op_type }}")
    assert render_joined(ENV, texts, {**CONTEXT, "op": "a\ue000b"}) is None


def test_every_built_in_advice_page_reads_the_same_joined_and_section_by_section(monkeypatch):
    # the values a page is checked with (every name it may read): each page renders whole
    values = _sample_context()["values"]
    book = AdviceBook()
    findings = [Finding(id=f"{kind}@3", rule="r", pack="core", kind=kind, severity="error", title={}, op="Conv_3",
                        index=3, op_type="Conv2D", confidence=0.9, values=values) for kind in book.kinds()]
    pages = {(f.kind, lang): render_advice(f, lang, ("tensorrt",), book) for f in findings for lang in ("en", "zh")}
    monkeypatch.setattr("advisor.advice.render_joined", lambda *args: None)
    for finding in findings:
        for lang in ("en", "zh"):
            assert render_advice(finding, lang, ("tensorrt",), book) == pages[finding.kind, lang], finding.kind


@pytest.mark.parametrize(("text", "reads"), [
    ("{{ op.out_cosine | num }}", (("op", "out_cosine"),)),
    ("{% set b = params.base if op['from'] == 'graph' else 0 %}{{ b + params.weight }}",
     (("params", "base"), ("op", "from"), ("params", "weight"))),
    ("{% for x in [1, 2] %}{{ x * op.scale }}{% endfor %}", (("op", "scale"),)),
    ("{{ op.out_cosine if op.out_cosine is defined else 0 }}", (("op", "out_cosine"),)),
])
def test_fields_read_names_every_field_a_template_reads(text, reads):
    assert set(fields_read(ENV, text)) == set(reads)


@pytest.mark.parametrize("text", [
    "{{ op | tojson }}",                 # the whole fact
    "{{ op.get('scale', 1) }}",          # a method may read any field
    "{{ op.items | list }}",             # the method, not a field called items
    "{{ loop_free_name }}",              # a name of the context, read whole
    "{% if %}",                          # does not compile
])
def test_fields_read_gives_up_on_what_reads_more_than_fields(text):
    assert fields_read(ENV, text) is None


@pytest.mark.parametrize("undefined", [None, StrictUndefined])
def test_a_fields_lookup_gives_what_the_sandbox_gives(undefined):
    """``fact.field`` on a plain dict skips the sandbox's failed getattr, never its answer: a key that
    names a dict method is still the method, a missing key is still undefined, other objects and
    dict subclasses go the sandbox's way."""
    from jinja2.sandbox import SandboxedEnvironment

    class Fact(dict):
        pass

    options = {"undefined": undefined} if undefined else {}
    ours, stock = BoundedEnvironment(**options), SandboxedEnvironment(**options)
    fact = {"op": "Conv_3", "items": "a key", "out_cosine": 0.5, "none": None}
    context = {"m": fact, "f": Fact(fact), "s": "text"}
    for text in ("{{ m.op }} {{ m.out_cosine }} {{ m.none }}", "{{ m.items is callable }}",
                 "{{ m.missing is defined }}", "{{ m.missing | default('n/a') }}",
                 "{{ f.op }} {{ f.items is callable }}", "{{ s.upper() }}",
                 "{{ m['items'] }}", "{{ m.__class__ is defined }}"):
        assert ours.from_string(text).render(context) == stock.from_string(text).render(context), text
    if undefined:
        with pytest.raises(Exception, match="missing"):
            ours.from_string("{{ m.missing }}").render(context)
