"""Fields of the facts ``advisor run --verify`` adds (advisor/verify): the emulation's fidelity, each
replayed op, each fix and int8 alternative applied under emulation, and the residual. Part of the fact
schema in :mod:`advisor.facts.schema`; the numbers are measured there, the rules in
rules/core/verification/ judge them."""

from __future__ import annotations

from .schema_types import BOOL, NUMBER, STRING

_FINDING = {
    "finding": (STRING, "id of the finding the check is about"),
    "finding_kind": (STRING, "that finding's kind"),
}

FIDELITY_FIELDS: dict[str, tuple[str, str]] = {
    "id": (STRING, "always 'fidelity'"),
    "fact": (STRING, "always 'fidelity'"),
    "storage": (STRING, "the dtype the emulation stores tensors in: float16, bfloat16 or float32"),
    "emulation": (STRING, "what was emulated, in words"),
    "mode": (STRING, "ieee (FP16 overflow gives inf) or saturation (it clamps at +-65504): the one closer to the "
                     "target"),
    "quantised": (BOOL, "int8 layers were emulated as the build config says"),
    "emulated_output_cosine": (NUMBER, "network-output cosine of the emulated target with the golden run"),
    "target_output_cosine": (NUMBER, "network-output cosine of the measured target (the comparison's)"),
    "gap": (NUMBER, "|emulated_output_cosine - target_output_cosine|"),
    "holds": (BOOL, "the gap is within knobs verify.fidelity_tolerance"),
    "target_output_finite": (BOOL, "the measured target's output is finite (its cosine is known)"),
    "ieee_output_finite": (BOOL, "the emulation with IEEE overflow (inf) gives a finite output"),
    "ieee_output_cosine": (NUMBER, "network-output cosine of that IEEE emulation"),
    "emulated_output_restored": (BOOL, "the emulated output is within its dtype's thresholds (precision alone "
                                       "keeps the network right)"),
}

REPLAY_FIELDS: dict[str, tuple[str, str]] = {
    "id": (STRING, "'replay:<op index>'"),
    "fact": (STRING, "always 'replay'"),
    "op": (STRING, "target op replayed"),
    "index": (NUMBER, "its op index"),
    "op_type": (STRING, "its type"),
    "golden_ops": (STRING, "the model's ops it was cut out as, comma-joined"),
    "fused": (BOOL, "more than one model op (a fused target op)"),
    "cpu_vs_golden_cosine": (NUMBER, "cosine of the CPU result (target inputs, float32) with the golden output"),
    "cpu_vs_target_cosine": (NUMBER, "cosine of the CPU result in the target's precision (in_target_precision) with "
                                     "the target's output (absent: not finite)"),
    "in_target_precision": (BOOL, "the CPU computed the op for cpu_vs_target_cosine as the target's numerics say "
                                  "(float16 rounding, int8 as configured), not in float32"),
    "target_vs_golden_cosine": (NUMBER, "cosine of the target's output with the golden output"),
    "target_finite": (BOOL, "the target's output holds no inf or NaN"),
    "pack": (STRING, "the repro pack's folder in the report folder"),
    **_FINDING,
}

FIX_CHECK_FIELDS: dict[str, tuple[str, str]] = {
    "id": (STRING, "'fix_check:<finding id>'"),
    "fact": (STRING, "always 'fix_check'"),
    "index": (NUMBER, "op index of the finding"),
    "op": (STRING, "op of the finding"),
    "op_type": (STRING, "its type"),
    "is_root": (BOOL, "the finding is the root cause"),
    "step": (NUMBER, "the first remedy step that answers the finding (steps are cumulative)"),
    "output_cosine_before": (NUMBER, "emulated network-output cosine without the remedy"),
    "output_cosine_after": (NUMBER, "... with the remedy up to that step"),
    "restores": (BOOL, "the output is then within its dtype's thresholds"),
    "fidelity_holds": (BOOL, "the emulation reproduces the measured target (the fidelity fact's holds)"),
    **_FINDING,
}

ALTERNATIVE_FIELDS: dict[str, tuple[str, str]] = {
    "id": (STRING, "'alternative_check:<alternative>'"),
    "fact": (STRING, "always 'alternative_check'"),
    "alternative": (STRING, "per_channel, asymmetric, percentile, minmax (knowledge/quant_alternatives.yaml) or "
                            "keep_float (the root cause's layer out of int8)"),
    "fix_settings": (STRING, "the remedy settings of the alternative, knob=value;..."),
    "fix_keep": (STRING, "keep_float: the layer kept out of int8"),
    "fix_keep_golden": (STRING, "its original-model names"),
    "fix_keep_types": (STRING, "its type"),
    "fix_precision": (STRING, "keep_float: the precision it is kept in (float16)"),
    "index": (NUMBER, "op index of the root cause the alternative would replace"),
    "op": (STRING, "its op"),
    "op_type": (STRING, "its type"),
    "output_cosine_before": (NUMBER, "emulated network-output cosine as built"),
    "output_cosine_after": (NUMBER, "... with the alternative"),
    "restores": (BOOL, "the output is then within its dtype's thresholds"),
    **_FINDING,
}

RESIDUAL_FIELDS: dict[str, tuple[str, str]] = {
    "id": (STRING, "'residual:<op index>'"),
    "fact": (STRING, "always 'residual'"),
    "index": (NUMBER, "op index"),
    "op": (STRING, "target op"),
    "op_type": (STRING, "its type"),
    "golden_ops": (STRING, "its original ops"),
    "in_cosine": (NUMBER, "lowest input cosine of the target with the emulated target"),
    "out_cosine": (NUMBER, "lowest output cosine of the target with the emulated target"),
    "out_red": (NUMBER, "largest output relative distance to the emulated target"),
    "out_deviates": (BOOL, "an output departs from the emulation beyond its dtype's thresholds"),
    "inputs_agree": (BOOL, "its inputs agree with the emulation"),
    "error_enters": (BOOL, "outputs depart from the emulation while inputs agree with it"),
    "hidden_entry": (BOOL, "the first departure shows on its inputs"),
    "recovered_cosine": (NUMBER, "as on op facts: the level of the clean run after it, against the emulation"),
    "next_entry_index": (NUMBER, "op index of the next departure"),
    "downstream_deviating": (NUMBER, "ops after it that depart from the emulation"),
}
