"""Markdown and txt reports against golden files in tests/report/gold/.

After an intended change, regenerate them with ``ADVISOR_UPDATE_GOLD=1 python -m pytest tests/report``
and review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.report import render

GOLD = Path(__file__).parent / "gold"
UPDATE = os.environ.get("ADVISOR_UPDATE_GOLD") == "1"


@pytest.mark.parametrize("fmt", ["md", "txt"])
@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", ["root_cause", "consistent", "single_point", "unexplained"])
def test_report_matches_gold(case: str, lang: str, fmt: str, request: pytest.FixtureRequest) -> None:
    text = render(request.getfixturevalue(case), fmt, lang)
    gold = GOLD / f"{case}.{lang}.{fmt}"
    if UPDATE:
        gold.parent.mkdir(exist_ok=True)
        gold.write_text(text, encoding="utf-8")
    assert gold.is_file(), f"missing {gold.name}: run with ADVISOR_UPDATE_GOLD=1 to create it"
    assert text == gold.read_text(encoding="utf-8"), f"{gold.name} differs (ADVISOR_UPDATE_GOLD=1 to accept)"


def test_txt_uses_the_vendor_layout_root_cause_first(root_cause) -> None:
    lines = render(root_cause, "txt", "en").splitlines()
    assert lines[:3] == [
        "Detection Type: FP16 overflow",
        "Operator Index: 12",
        "Expert Advice: Keep LayerNorm_3/Pow,LayerNorm_3/ReduceMean in FP32 with `--keep_dtype=keep_dtype.cfg`.",
    ]
    # One block per active finding: the root cause and the independent problem node, not the symptoms.
    assert [line for line in lines if line.startswith("Operator Index")] == ["Operator Index: 12",
                                                                           "Operator Index: 57"]


def test_txt_for_a_consistent_network_is_one_block(consistent) -> None:
    assert render(consistent, "txt", "zh").splitlines() == [
        "Detection Type: 一致",
        "Operator Index: NA",
        "Expert Advice: 无需处理：NPU 结果与标杆一致。",
    ]


def test_txt_when_no_rule_explains_a_deviating_network(unexplained) -> None:
    assert render(unexplained, "txt", "en").splitlines() == [
        "Detection Type: No root cause found",
        "Operator Index: 10",
        "Expert Advice: Compare the inputs and outputs of the first deviating op by hand, or run with a rule pack "
        "that covers this case.",
    ]
