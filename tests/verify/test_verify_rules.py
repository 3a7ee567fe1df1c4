"""How the checks' facts change a diagnosis through the rules: a fix that does not restore the output
hands the lead to the int8 alternative that does, and the remedy follows it; an inherited replay moves the
blame to the earlier root cause."""

from __future__ import annotations

from advisor.engine.loading import load_packs
from advisor.engine.ranking import rank_findings
from advisor.engine.runner import run_rules
from advisor.remedy import remedy_for

RULES = load_packs(installed=False).rules
NETWORK = {"fact": "network", "id": "network", "output_deviates": True, "output_cosine": 0.957}
# The per-tensor layer of the quant-per-tensor rule's own case: the rules name it quant_per_tensor.
LAYER = {"fact": "layer", "id": "layer:87", "index": 87, "op": "MatMul_97", "op_type": "BatchMatMulV2",
         "out_deviates": True, "out_cosine": 0.984, "in_cosine": 1.0, "cfg_weight_granularity": "per_tensor",
         "cfg_weight_granularity_stated": True, "weight": "blocks.1.w2", "w_channels": 64, "w_channel_ratio": 65.0,
         "w_channel_ratio_median": 51.1, "sim_level": "output", "sim_cos_config": 0.9842, "sim_cos_per_channel": 0.9995,
         "sim_sqnr_config": 14.8, "sim_sqnr_per_channel": 29.9, "fix_alternative": "per_channel", "fix_gain": 5.7,
         "sim_share": 1.0, "fix_settings": "weight_quant_granularity=per_channel", "fix_keep": "MatMul_97"}


def _conclude(facts: list[dict]):
    result = run_rules(RULES, facts)
    root, ordered = rank_findings(result.findings, result.explanations, {r.id: r.priority for r in RULES},
                                    result.groups)
    remedy, _ = remedy_for(root, ordered)
    return root, ordered, remedy


def test_a_fix_that_does_not_restore_the_output_hands_the_lead_to_the_alternative_that_does():
    root, _, remedy = _conclude([NETWORK, LAYER])
    assert (root.kind, remedy.steps[0].settings) == ("quant_per_tensor", {"weight_quant_granularity": "per_channel"})
    checks = [
        {"fact": "fix_check", "id": f"fix_check:{root.id}", "finding": root.id, "finding_kind": root.kind,
         "index": 87, "op": "MatMul_97", "is_root": True, "step": 1, "output_cosine_before": 0.957,
         "output_cosine_after": 0.961, "restores": False, "fidelity_holds": True},
        {"fact": "alternative_check", "id": "alternative_check:asymmetric", "alternative": "asymmetric",
         "finding": root.id, "finding_kind": root.kind, "index": 87, "op": "MatMul_97", "op_type": "BatchMatMulV2",
         "fix_settings": "weight_quant_granularity=per_channel;activation_quant_algo=asymmetric",
         "output_cosine_before": 0.957, "output_cosine_after": 0.9991, "restores": True}]
    second, ordered, remedy = _conclude([NETWORK, LAYER, *checks])
    assert (second.rule, second.kind, second.op) == ("verified-asymmetric", "quant_symmetric", "MatMul_97")
    by_rule = {f.rule: f for f in ordered}
    assert by_rule["quant-per-tensor"].explained_by == second.id
    assert by_rule["fix-not-restoring"].explained_by == second.id
    assert remedy.steps[0].settings == {"weight_quant_granularity": "per_channel",
                                        "activation_quant_algo": "asymmetric"}
    assert "0.961" in second.evidence["en"] and "0.9991" in second.evidence["en"]


def _entry(index: int) -> dict:
    return {"fact": "op", "id": f"op:{index}", "index": index, "op": f"MatMul_{index}", "op_type": "BatchMatMulV2",
            "out_deviates": True, "inputs_agree": True, "inputs_from": "input_rows", "out_cosine": 0.98}


def _inherited(index: int) -> dict:
    return {"fact": "replay", "id": f"replay:{index}", "index": index, "op": f"MatMul_{index}",
            "cpu_vs_golden_cosine": 0.989, "cpu_vs_target_cosine": 1.0, "target_vs_golden_cosine": 0.989,
            "target_finite": True}


def test_an_inherited_replay_moves_the_blame_to_the_earlier_root_cause():
    root, ordered, _ = _conclude([NETWORK, LAYER, _entry(100)])
    assert root.rule == "quant-per-tensor"
    assert any(f.rule == "problem-node" and f.index == 100 and f.explained_by is None for f in ordered)
    again, ordered, _ = _conclude([NETWORK, LAYER, _entry(100), _inherited(100)])
    assert again.id == root.id
    assert {f.rule: f.explained_by for f in ordered if f.index == 100} == {"problem-node": root.id,
                                                                           "replay-inherited": root.id}


def test_with_nothing_upstream_the_inherited_error_itself_leads():
    root, ordered, _ = _conclude([NETWORK, _entry(64), _inherited(64)])
    assert (root.rule, root.kind, root.index) == ("replay-inherited", "replay_inherited", 64)
    assert next(f for f in ordered if f.rule == "problem-node").explained_by == root.id
