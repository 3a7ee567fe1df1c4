"""The "Verified on CPU" panel (advisor run --verify) in every format: what it shows, escaped."""

from __future__ import annotations

import json

import pytest

from advisor.diagnosis import Diagnosis
from advisor.report import render
from advisor.verify.model import Fidelity, NotVerified, ReplayCheck, Residual, StepCheck, Verification

OP = '<img src=x onerror="alert(1)">'


def _diagnosis() -> Diagnosis:
    verification = Verification(
        fidelity=Fidelity(0.98, 0.5, False, mode="saturation"),
        replay=[ReplayCheck(OP, 3, (OP,), 0.99999, 0.5, 0.5, True, pack=f"replay/3_{OP}", verdict="op_wrong")],
        remedy_steps=[StepCheck(1, 0.5, 0.9999, True), StepCheck(2, 0.5, None, False)],
        residual=[Residual(OP, 3, "residual_fault")], residual_checked=True,
        not_verified=[NotVerified(f"replay of {OP}", "<b>no</b> dump")])
    return Diagnosis(root_cause=None, findings=[], network={"compute_dtype": "float16"}, inputs={}, packs=[],
                     thresholds={"float16": {"cosine": 0.99, "relative_euclidean_distance": 0.15, "scale": 0.05}},
                     verification=verification)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_panel_escapes_what_it_shows(lang, markdown_html):
    diagnosis = _diagnosis()
    html = render(diagnosis, "html", lang)
    assert "<img src=x" not in html and "<b>no</b>" not in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html
    _, elements = markdown_html(render(diagnosis, "md", lang))
    assert elements == set()
    assert OP in render(diagnosis, "txt", lang)            # plain text: shown as it is


def test_the_panel_shows_each_step_with_its_bars_and_the_threshold():
    html = render(_diagnosis(), "html", "en")
    assert 'id="verified"' in html and html.count('class="step-row') == 2
    assert 'class="step-row restores"' in html                      # step 1 restores, step 2 does not
    assert 'style="left: 33.3%"' in html                            # 0.99: two nines of six
    assert 'style="width: 66.7%"' in html                           # 0.9999: four nines
    assert "Step 1 is the smallest step that restores" in html
    assert "The target saturates FP16 overflow" in html


def test_report_json_carries_the_verification_as_measured():
    payload = json.loads(render(_diagnosis(), "json", "en"))["verification"]
    assert payload["fidelity"] == {"emulated_output_cosine": 0.98, "target_output_cosine": 0.5, "holds": False,
                                   "mode": "saturation", "storage": "float16"}
    assert payload["remedy_steps"][1] == {"step": 2, "output_cosine_before": 0.5, "output_cosine_after": None,
                                          "restores": False}
    assert payload["replay"][0]["verdict"] == "op_wrong" and payload["residual"][0]["kind"] == "residual_fault"


def test_remedy_readme_says_which_steps_were_verified():
    from dataclasses import replace

    from advisor.remedy.model import Remedy, RemedyStep
    from advisor.report import build_view, remedy_files

    steps = tuple(RemedyStep(step=n, settings={}, keep=(), findings=(), summary={"en": f"step {n}", "zh": f"第 {n} 步"})
                  for n in (1, 2, 3))
    diagnosis = replace(_diagnosis(), remedy=Remedy(backends=("onnxruntime",), steps=steps, quantised=False))
    (_, readme), *_ = remedy_files(build_view(diagnosis, "en"))
    assert "under emulation the network-output cosine goes 0.5 → 0.9999, restores the output" in readme
    assert "0.5 → n/a, does not restore it" in readme
    assert readme.count("Not verified on CPU") == 1                 # step 3 was not emulated
