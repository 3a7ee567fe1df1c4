"""problem-node's evidence says what was measured: a statistics-only comparison (msprobe summary mode, a
dump.json pair) has no cosine, so the sentence cites the norm and the statistics, never "cosine n/a"."""

from __future__ import annotations

import pytest

from advisor.engine.loading import load_packs
from advisor.engine.runner import run_rules

PROBLEM_NODE = next(rule for rule in load_packs(installed=False).rules if rule.id == "problem-node")
NETWORK = {"fact": "network", "id": "network", "output_deviates": True}
OP = {"fact": "op", "id": "op:7", "index": 7, "op": "Functional.linear.2.forward", "op_type": "Functional.linear",
      "out_deviates": True, "inputs_agree": True, "error_enters": True, "inputs_known": True,
      "inputs_from": "input_rows", "downstream_deviating": 3}


def _evidence(op: dict, network: dict, lang: str = "en") -> str:
    findings = run_rules([PROBLEM_NODE], [network, op]).findings
    assert len(findings) == 1
    return findings[0].evidence[lang]


@pytest.mark.parametrize(("measured", "said"), [
    ({"out_scale": 0.316, "out_state_rel": 0.4}, "its norm is off by 31.6 %, statistics moved by up to 40.0 %"),
    ({"out_state_rel": 0.12}, "statistics moved by up to 12.0 % of its scale"),
    ({"out_nonfinite": True}, "it holds inf or NaN"),
])
def test_a_statistics_only_entry_cites_its_statistics(measured, said):
    text = _evidence({**OP, **measured}, NETWORK)
    assert said in text and "n/a" not in text
    assert "their statistics agree" in text and "the network output deviates" in text


def test_a_tensor_comparison_still_cites_cosines():
    text = _evidence({**OP, "in_cosine": 0.99999, "out_cosine": 0.61, "out_red": 0.8},
                     {**NETWORK, "output_cosine": 0.42})
    assert "input cosine 0.99999" in text and "cosine 0.61, relative distance 0.8" in text
    assert "network output cosine 0.42" in text


def test_the_chinese_evidence_says_the_same():
    text = _evidence({**OP, "out_scale": 0.316}, NETWORK, "zh")
    assert "范数相差 31.6 %" in text and "其统计量一致" in text and "n/a" not in text
