"""A pack with a mistake is rejected whole, and the message says where (file:line:column) and how
to fix it. `advisor rules validate` lists every problem at once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from advisor.engine.loading import load_packs
from advisor.engine.packs import PackProblems, check_pack, load_pack
from advisor.errors import KnowledgeError, RulePackError

GOOD_RULE = """\
id: pow-in-fp16
title: {en: Pow in FP16, zh: FP16 中的 Pow}
severity: warning
docs:
  en: {what: A Pow runs in FP16., why: It overflows easily., fix: Keep it in FP32.}
  zh: {what: Pow 以 FP16 运行。, why: 容易溢出。, fix: 保持 FP32。}
when:
  fact: op
  op_type: Pow
  dtype: float16
emit:
  kind: fp16_overflow
  confidence: 0.4
  evidence: {en: "{{ m.op }} is a Pow in FP16", zh: "{{ m.op }} 是 FP16 的 Pow"}
cases:
  - name: fp16 pow
    expect: fire
    facts: [{fact: op, id: "op:1", index: 1, op: Pow_1, op_type: Pow, dtype: float16}]
  - name: fp32 pow
    expect: silent
    facts: [{fact: op, id: "op:1", index: 1, op: Pow_1, op_type: Pow, dtype: float32}]
"""


def make_pack(tmp_path: Path, rule_text: str = GOOD_RULE, name: str = "team", extra: dict | None = None) -> Path:
    pack = tmp_path / name
    pack.mkdir()
    (pack / "pack.yaml").write_text(f'pack: {name}\nversion: "0.1.0"\n', encoding="utf-8")
    (pack / "rule.yaml").write_text(textwrap.dedent(rule_text), encoding="utf-8")
    for filename, text in (extra or {}).items():
        (pack / filename).write_text(textwrap.dedent(text), encoding="utf-8")
    return pack


def problems_of(pack: Path) -> list[str]:
    _, problems = check_pack(pack)
    return [str(p) for p in problems]


def test_a_valid_pack_loads(tmp_path):
    pack = load_pack(make_pack(tmp_path))
    assert (pack.name, pack.version, [r.id for r in pack.rules]) == ("team", "0.1.0", ["pow-in-fp16"])


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace("op_type: Pow\n", "op_type: [Pow\n"))
    (problem,) = problems_of(pack)
    assert "rule.yaml:" in problem and "invalid YAML" in problem


def test_typo_in_a_fact_field_suggests_the_right_name(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace("  op_type: Pow\n", "  op_typ: Pow\n"))
    (problem,) = problems_of(pack)
    assert "rule.yaml:9:" in problem
    assert "'op' facts have no field 'op_typ' (did you mean 'op_type'?)" in problem


def test_unknown_fact_kind_lists_the_known_ones(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace("fact: op\n  op_type", "fact: opp\n  op_type"))
    problems = problems_of(pack)
    assert any("unknown fact kind 'opp' (did you mean 'op'?)" in p and "network, op, finding" in p for p in problems)


def test_wrong_value_type_is_reported(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace("dtype: float16\nemit", "dtype: 16\nemit"))
    assert any("'dtype' is a string field; 16 is not a string" in p for p in problems_of(pack))


def test_bad_evidence_template_is_reported(tmp_path):
    pack = make_pack(tmp_path, GOOD_RULE.replace('"{{ m.op }} is a Pow in FP16"', '"{{ m.op is a Pow"'))
    assert any("evidence.en: template error" in p for p in problems_of(pack))


def test_missing_chinese_docs_and_missing_silent_case_are_both_reported(tmp_path):
    text = GOOD_RULE.replace("  zh: {what: Pow 以 FP16 运行。, why: 容易溢出。, fix: 保持 FP32。}\n", "")
    text = text[: text.index("  - name: fp32 pow")]
    problems = problems_of(make_pack(tmp_path, text))
    assert any("rule.yaml:5:3: docs is missing 'zh'" in p for p in problems), problems
    assert any("at least one case that fires and one that stays silent" in p for p in problems)


def test_unknown_advice_kind_and_unknown_rule_field(tmp_path):
    text = GOOD_RULE.replace("kind: fp16_overflow", "kind: fp16_overflw").replace("severity: warning",
                                                                                  "severity: warning\nsevertiy: x")
    problems = problems_of(make_pack(tmp_path, text))
    assert any("no advice for kind 'fp16_overflw'" in p and "did you mean 'fp16_overflow'" in p
               for p in problems)
    assert any("unknown rule field 'severtiy' (did you mean 'severity'?)" in p for p in problems)


def test_duplicate_rule_id_within_a_pack(tmp_path):
    pack = make_pack(tmp_path, extra={"again.yaml": GOOD_RULE})
    assert any("duplicate rule id 'pow-in-fp16'" in p for p in problems_of(pack))


def test_duplicate_rule_id_across_packs_names_both_sources(tmp_path):
    first = make_pack(tmp_path, name="first")
    second = make_pack(tmp_path, name="second")
    with pytest.raises(RulePackError) as err:
        load_packs([first, second], builtin=False)
    assert "rule id 'pow-in-fp16' is defined twice" in str(err.value)
    assert str(first / "rule.yaml") in str(err.value) and str(second / "rule.yaml") in str(err.value)


def test_a_pack_with_any_problem_never_half_loads(tmp_path):
    broken = GOOD_RULE.replace("id: pow-in-fp16", "id: other-rule").replace("op_type: Pow\n", "op_tpye: Pow\n")
    pack = make_pack(tmp_path, extra={"broken.yaml": broken})
    with pytest.raises(PackProblems) as err:
        load_pack(pack)
    assert len(err.value.problems) == 1 and "op_tpye" in str(err.value)


def test_join_reference_to_an_unknown_pattern(tmp_path):
    text = GOOD_RULE.replace("""when:
  fact: op
  op_type: Pow
  dtype: float16
""", """when:
  - as: op
    fact: op
    index: {gt: $net.index}
""").replace("{{ m.op }}", "{{ op.op }}")
    problems = problems_of(make_pack(tmp_path, text))
    assert any("'$net.index' refers to pattern 'net', which is not an earlier pattern" in p for p in problems)


def test_single_file_pack(tmp_path):
    rule = textwrap.indent(GOOD_RULE, "    ").replace("    id:", "  - id:", 1)
    path = tmp_path / "pack.yaml"
    path.write_text(f'pack: solo\nversion: "1.0"\nrules:\n{rule}', encoding="utf-8")
    assert [r.id for r in load_pack(path).rules] == ["pow-in-fp16"]


def test_missing_pack_is_a_clear_error(tmp_path):
    with pytest.raises(RulePackError, match="rule pack not found"):
        load_pack(tmp_path / "nope")


INLINE_ADVICE = """\
advice:
  en:
    what: "{{ op }} runs a Pow in FP16."
    why: Squares overflow early.
    confirm: Look for inf in its dump.
    fix: {any: Keep it in FP32.}
    references: [team wiki]
  zh:
    what: "{{ op }} 以 FP16 运行 Pow。"
    why: 平方很早就会溢出。
    confirm: 检查其 dump 中的 inf。
    fix: {any: 保持 FP32。}
    references: [团队文档]
"""


def test_a_pack_can_bring_advice_for_a_new_kind(tmp_path):
    from advisor.advice import render_advice
    from advisor.diagnosis import Finding
    from advisor.engine.loading import load_packs
    text = GOOD_RULE.replace("kind: fp16_overflow", "kind: team_pow_in_fp16") + INLINE_ADVICE
    pack_set = load_packs([make_pack(tmp_path, text)], builtin=False, installed=False)
    assert "team_pow_in_fp16" in pack_set.packs[0].advice
    finding = Finding(id="x", rule="pow-in-fp16", pack="team", kind="team_pow_in_fp16", severity="warning",
                      title={"en": "t", "zh": "t"}, op="Pow_1")
    advice = render_advice(finding, "zh", book=pack_set.registry.advice)
    assert advice.title == "FP16 中的 Pow" and advice.what == "Pow_1 以 FP16 运行 Pow。"
    with pytest.raises(KnowledgeError, match="no advice page for finding kind 'team_pow_in_fp16'"):
        render_advice(finding, "zh")      # another run's book (here: the built-in pages only) has no such page


def test_inline_advice_with_a_missing_section_is_reported(tmp_path):
    text = GOOD_RULE.replace("kind: fp16_overflow", "kind: team_other") + INLINE_ADVICE.replace(
        "    why: 平方很早就会溢出。\n", "")
    assert any("advice: missing section 'why'" in p for p in problems_of(make_pack(tmp_path, text)))


def test_inline_advice_cannot_replace_a_builtin_page(tmp_path):
    with pytest.raises(RulePackError, match="already has a built-in advice page"):
        load_pack(make_pack(tmp_path, GOOD_RULE + INLINE_ADVICE))


def test_a_pack_for_a_newer_advisor_says_so(tmp_path):
    pack = make_pack(tmp_path)
    (pack / "pack.yaml").write_text('pack: team\nversion: "0.1.0"\nmin_advisor_version: "99.0"\n')
    (problem,) = problems_of(pack)
    assert "pack.yaml:3:1: the pack needs advisor >= 99.0" in problem


def test_an_unquoted_comma_in_a_title_is_caught(tmp_path):
    text = GOOD_RULE.replace("title: {en: Pow in FP16, zh: FP16 中的 Pow}",
                             "title: {en: Pow, in FP16, zh: FP16 中的 Pow}")
    assert any("'title' has texts for en, zh only" in p for p in problems_of(make_pack(tmp_path, text)))
