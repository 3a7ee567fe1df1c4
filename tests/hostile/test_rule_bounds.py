"""A rule pack is someone else's code: a small pack must not mean large work or a traceback.
`tags: 5`, 10^8 `any`/`in` alternatives, templates that loop or grow without bound."""

from __future__ import annotations

import itertools

import pytest

from advisor.engine.packs import check_pack
from advisor.engine.scaffold import scaffold_pack
from advisor.templating import BoundedEnvironment, TemplateBoundError, render_bounded

from .conftest import advisor_process

# A rule that fires on every run (the network fact is always there), so `advisor run` renders its texts.
ALWAYS = """\
id: team-always
title: {en: Always, zh: 总是}
severity: info
docs:
  en: {what: Always fires., why: A test., fix: Nothing.}
  zh: {what: 总是触发。, why: 测试。, fix: 无。}
when:
  fact: network
emit:
  kind: team_always
  confidence: 0.5
  evidence: {en: "EVIDENCE_EN", zh: "证据"}
advice:
  en: {what: "ADVICE_EN", why: Why., confirm: Confirm., fix: {any: Fix.}, references: [docs]}
  zh: {what: 什么。, why: 为什么。, confirm: 确认。, fix: {any: 修复。}, references: [docs]}
cases:
  - {name: fires, expect: fire, facts: [{fact: network, id: network}]}
  - {name: silent, expect: silent, facts: [{fact: op, id: "op:1", index: 1, op: A, op_type: Add}]}
"""


_kinds = itertools.count()


def always_pack(tmp_path, evidence: str = "{{ m.id }}", advice: str = "{{ op }}"):
    """The pack, its rule file; each call's finding kind is new (a kind's inline page is registered once
    per process)."""
    pack = tmp_path / "team"
    pack.mkdir()
    (pack / "pack.yaml").write_text('pack: team\nversion: "0.1.0"\n', encoding="utf-8")
    rule = pack / "always.yaml"
    text = ALWAYS.replace("team_always", f"team_always_{next(_kinds)}")
    text = text.replace("EVIDENCE_EN", evidence.replace('"', '\\"')).replace("ADVICE_EN", advice.replace('"', '\\"'))
    rule.write_text(text, encoding="utf-8")
    return pack, rule


def test_the_always_rule_is_valid_and_runs(advisor, tmp_path):
    pack, _ = always_pack(tmp_path)
    assert check_pack(pack)[1] == []
    from tests.conftest import EXAMPLE
    run = advisor("run", EXAMPLE, "--rules", pack, "--format", "json", "-q", "-o", tmp_path / "out")
    assert run.code == 0, run.err


@pytest.mark.parametrize("tags", ["5", "{a: 1}", "[1, 2]", "[ok, [nested]]"])
def test_tags_that_are_not_a_list_of_words(advisor, tmp_path, tags):
    pack = scaffold_pack("team", tmp_path)
    rule = next(pack.glob("team-*.yaml"))
    rule.write_text(rule.read_text(encoding="utf-8").replace("tags: [example]", f"tags: {tags}"), encoding="utf-8")
    problems = [str(p) for p in check_pack(pack)[1]]
    assert problems == [f"{rule}:8:1: 'tags' is a list of words, e.g. [fp16, overflow]"]
    for command in (["rules", "list", pack], ["rules", "show", "team-slow-softmax", "--rules", pack],
                    ["rules", "docs", pack]):
        advisor(*command).one_line_error(str(rule), "'tags'")
    from tests.conftest import EXAMPLE
    advisor("run", EXAMPLE, "--rules", pack, "-o", tmp_path / "out").one_line_error(str(rule), "'tags'")


def test_alternatives_are_counted_before_they_are_expanded(tmp_path):
    """Four fields with 100 choices each: 10^8 alternatives used to be built (validate, test and run hung)."""
    pack = scaffold_pack("team", tmp_path)
    rule = next(pack.glob("team-*.yaml"))
    choices = "{in: [" + ", ".join(str(i / 1000) for i in range(100)) + "]}"
    hostile = "".join(f"  {field}: {choices}\n" for field in ("out_cosine", "in_cosine", "out_max_rel", "out_rmse"))
    text = rule.read_text(encoding="utf-8").replace("  out_cosine: {lt: \"${max_cosine}\"}\n", hostile)
    rule.write_text(text, encoding="utf-8")
    for command in (["validate"], ["test"]):
        result = advisor_process("rules", *command, pack)
        assert result.code == 2 and "more than 64 alternatives" in result.err, result.err[-500:]
        assert str(rule) in result.err.splitlines()[0] and "internal error" not in result.err


def test_an_any_of_sixty_four_still_loads(tmp_path):
    pack = scaffold_pack("team", tmp_path)
    rule = next(pack.glob("team-*.yaml"))
    choices = "{in: [" + ", ".join(f"T{i}" for i in range(32)) + "]}"
    rule.write_text(rule.read_text(encoding="utf-8").replace("{in: [Softmax, SoftmaxV2]}", choices)
                    .replace("  error_enters: true\n", "  any: [{error_enters: true}, {error_enters: false}]\n"),
                    encoding="utf-8")
    assert check_pack(pack)[1] == []


@pytest.mark.parametrize("template,problem", [
    ("{% for i in range(9) %}{% for j in range(9) %}x{% endfor %}{% endfor %}", "a loop inside a loop"),
    ("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
     "namespace()"),
    ("{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}", "macros"),
    ("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", "recursive loops"),
    ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", "nested too deeply"),    # found by the 30-minute fuzz run
])
@pytest.mark.parametrize("where", ["evidence", "advice"])
def test_validate_refuses_templates_that_grow_without_bound(tmp_path, template, problem, where):
    pack, rule = always_pack(tmp_path, **{where: template})
    problems = [str(p) for p in check_pack(pack)[1]]
    assert problems and problems[0].startswith(str(rule)) and problem in problems[0], problems


@pytest.mark.parametrize("template", [
    '{{ "ab" * 100000000 }}',                              # string repetition
    "{{ 9 ** 99999999 }}",                                 # a number too large to print
    '{{ "x" | center(1000000000) }}',                      # a padding filter
    '{{ "x".ljust(1000000000) }}',                         # a padding method
    '{{ "%999999999d" % 1 }}',                             # a format width
    '{% for i in range(100000) %}{{ "%05d" % i }}{% endfor %}',     # 500,000 characters of output
    "{% for i in range(100000) %}{% if (range(100000)|list|length) < 0 %}x{% endif %}{% endfor %}",  # 10^10 steps
])
@pytest.mark.parametrize("session", [False, True], ids=["alone", "many_renders"])
def test_templates_are_rendered_under_a_size_and_time_bound(template, session):
    import contextlib
    import signal

    from advisor.templating import many_renders

    env = BoundedEnvironment()
    before = signal.getsignal(signal.SIGALRM)
    with many_renders() if session else contextlib.nullcontext():
        assert render_bounded(env.from_string("{{ 1 + 1 }}"), {}) == "2"
        with pytest.raises(TemplateBoundError):
            render_bounded(env.from_string(template), {})
        assert render_bounded(env.from_string("{{ 2 + 2 }}"), {}) == "4"   # the next text renders as usual
    assert signal.getsignal(signal.SIGALRM) == before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_fact_field_read_with_get_is_the_field_or_the_default_and_bounded():
    """``values.get('x')`` (every advice page reads a finding's values so) gives the field, the
    default, or None, and a value over the size bound is refused as any other result is."""
    env = BoundedEnvironment()
    values = {"keep_fp32": "a,b", "huge": "x" * 200_000}
    text = "{{ values.get('keep_fp32') }}|{{ values.get('absent', 'op') }}|{{ values.get('absent') }}"
    assert render_bounded(env.from_string(text), {"values": values}) == "a,b|op|None"
    with pytest.raises(TemplateBoundError):
        render_bounded(env.from_string("{{ values.get('huge') }}"), {"values": values})
    with pytest.raises(TypeError):   # a call dict.get refuses is refused as Python refuses it
        render_bounded(env.from_string("{{ values.get(default='x') }}"), {"values": values})


@pytest.mark.parametrize("where", ["evidence", "advice"])
def test_a_runaway_template_stops_the_run_with_one_line(tmp_path, where):
    pack, rule = always_pack(tmp_path, **{where: '{{ "ab" * 100000000 }}'})
    from tests.conftest import EXAMPLE
    result = advisor_process("run", EXAMPLE, "--rules", pack, "-o", tmp_path / "out")
    line = result.one_line_error(str(rule))
    assert "longer than" in line


def test_pack_advice_template_errors_name_the_pack_file(advisor, tmp_path):
    """They used to name knowledge/advice/<kind>.yaml, a file that does not exist for a pack's kind."""
    pack, rule = always_pack(tmp_path, advice="{{ op.no_such_thing() }}")
    from tests.conftest import EXAMPLE
    line = advisor("run", EXAMPLE, "--rules", pack, "-o", tmp_path / "out").one_line_error(f"{rule}:")
    # Checked when the pack loads (against the finding the rule emits), before anything runs.
    assert "advice: 'op.no_such_thing" in line and "knowledge" not in line
