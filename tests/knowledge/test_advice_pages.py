"""Advice pages: one per finding kind, the same sections in English and Chinese, renderable."""

from __future__ import annotations

import pytest

from advisor.advice import (
    BACKENDS,
    advice_dir,
    advice_names_problem,
    first_sentence,
    known_kinds,
    load_page,
    page_texts,
    render_advice,
    validate_page,
)
from advisor.catalogs import load_catalog, op_type_of_name
from advisor.diagnosis import Finding
from advisor.engine.loading import load_packs
from advisor.engine.packs import emitted_values
from advisor.facts.thresholds import load_thresholds

KINDS = known_kinds()


def sample_finding(kind: str, values: dict | None = None) -> Finding:
    return Finding(id="x@3", rule="x", pack="core", kind=kind, severity="error",
                   title={"en": "t", "zh": "t"}, op="LayerNorm_3/Pow", index=3, op_type="Pow",
                   values=values or {})


def test_every_emitted_kind_has_an_advice_page():
    rules = [rule for command in ("run", "post") for rule in load_packs(installed=False, command=command).rules]
    emitted = {rule.emit.kind for rule in rules if rule.emit}
    assert emitted <= set(KINDS)


def test_every_value_a_page_reads_is_one_a_rule_of_its_kind_emits():
    """A page reads ``values.NAME`` (or ``values.get('NAME')``): NAME must be in the ``emit.values`` of a
    rule that emits the kind, else the text renders a blank where the team expects a number."""
    emitting: dict[str, set[str]] = {}
    for rule in (r for command in ("run", "post") for r in load_packs(installed=False, command=command).rules):
        if rule.emit:
            emitting.setdefault(rule.emit.kind, set()).update(emitted_values({"values": rule.emit.values}))
    problems = [f"{kind} {lang}.{section}: {problem}" for kind in KINDS for lang in ("en", "zh")
                for section, text in page_texts(load_page(kind)[lang])
                if (problem := advice_names_problem(text, emitting.get(kind, set())))]
    assert problems == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("values", [{}, {"keep_fp32": "Pow_12,ReduceMean_13", "golden_ops": "Conv_1,Relu_2",
                                          "downstream_deviating": 12, "output_cosine": 0.9991}])
def test_advice_renders_with_and_without_optional_values(kind, lang, values):
    advice = render_advice(sample_finding(kind, values), lang)
    assert advice.what and advice.why and advice.confirm and advice.references
    assert advice.fixes and all(text for _, text in advice.fixes)
    assert {label for label, _ in advice.fixes} <= {b[lang] for b in BACKENDS.values()}
    assert advice.summary and len(advice.summary) <= len(advice.fixes[0][1])


@pytest.mark.parametrize("kind", KINDS)
def test_every_shipped_page_passes_the_render_check_packs_get(kind):
    """A pack's inline pages are rendered once with sample values when the pack is checked; the shipped
    pages pass the same check (so the samples cannot refuse a good page)."""
    validate_page(load_page(kind), advice_dir() / f"{kind}.yaml", render=True)


def test_fp16_overflow_advice_names_the_ops_to_keep_in_fp32():
    advice = render_advice(sample_finding("fp16_overflow", {"keep_fp32": "Pow_12,ReduceMean_13"}), "en")
    ascend = dict(advice.fixes)["Ascend (ATC / torch_npu)"]
    assert "Pow_12, ReduceMean_13" in ascend and "--keep_dtype" in ascend
    onnx = dict(advice.fixes)["ONNX Runtime"]
    assert 'node_block_list=["Pow_12", "ReduceMean_13"]' in onnx


def test_chinese_pages_are_in_chinese():
    for kind in KINDS:
        page = load_page(kind)
        assert any("\u4e00" <= ch <= "\u9fff" for ch in page["zh"]["what"]), kind


def test_first_sentence_ignores_full_stops_inside_code():
    assert first_sentence("Run `a.b.c` now. Then more.") == "Run `a.b.c` now."
    assert first_sentence("先这样。再那样。") == "先这样。"
    assert first_sentence("no stop at all") == "no stop at all"


def test_thresholds_are_stricter_for_wider_dtypes():
    t = load_thresholds()
    assert t.for_dtype("float32")["cosine"] > t.for_dtype("float16")["cosine"] > t.for_dtype("int8")["cosine"]
    assert t.for_dtype("bfloat16")["relative_euclidean_distance"] > t.for_dtype("float16")[
        "relative_euclidean_distance"]
    assert t.for_dtype("complex64") == t.for_dtype("default")


def test_fp16_sensitive_catalog_covers_the_classic_overflow_ops():
    catalog = load_catalog("fp16_sensitive")
    assert {"pow", "reducemean", "exp", "sqrt", "rsqrt", "softmax", "layernorm"} <= set(catalog)
    assert op_type_of_name("Pow_12") == "Pow"
    assert op_type_of_name("model/layer_1/ReduceMean") == "ReduceMean"
