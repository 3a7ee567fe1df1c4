"""The facts rules can match: kinds, fields, types and meanings.

This is the contract between the fact builders and rule packs; `advisor rules validate` checks every
field a rule names against it (and suggests the nearest name for a typo). Keep it in step with
builder.py: tests assert that every fact the builder produces is described here.
"""

from __future__ import annotations

BOOL, NUMBER, STRING = "bool", "number", "string"

FACT_FIELDS: dict[str, dict[str, tuple[str, str]]] = {
    "network": {
        "id": (STRING, "always 'network'"),
        "fact": (STRING, "always 'network'"),
        "rows": (NUMBER, "rows in the comparison result"),
        "ops": (NUMBER, "target ops in the comparison"),
        "compared_tensors": (NUMBER, "tensors with both sides present"),
        "deviating_tensors": (NUMBER, "tensors outside their dtype's thresholds"),
        "deviating_ops": (NUMBER, "ops with at least one deviating output tensor"),
        "entry_points": (NUMBER, "ops where error enters (inputs agree, outputs do not)"),
        "overflow_ops": (NUMBER, "ops with an overflowing or non-finite FP16 output"),
        "nonfinite_ops": (NUMBER, "ops whose target output holds inf or NaN"),
        "input_ops": (NUMBER, "ops taken as network inputs"),
        "input_deviates": (BOOL, "a network input already disagrees"),
        "dtype": (STRING, "the most common target dtype (float16, float32, bfloat16, int8...)"),
        "compute_dtype": (STRING, "the least precise float/int8 target dtype: thresholds follow it"),
        "has_fp16": (BOOL, "any target tensor is float16"),
        "format": (STRING, "format of the comparison result (msaccucmp, ...)"),
        "output_source": (STRING, "where the network output was read: Node_Output, last_op, "
                                  "last_compared_op or none"),
        "output_op": (STRING, "the op (or golden file) taken as network output"),
        "output_cosine": (NUMBER, "cosine of the network output"),
        "output_red": (NUMBER, "relative Euclidean distance of the network output"),
        "output_deviates": (BOOL, "the network output is outside its dtype's thresholds"),
        "output_known": (BOOL, "the network output was compared (not NaN)"),
        "output_line": (NUMBER, "source line of the output row"),
        "first_deviating_index": (NUMBER, "op index of the first deviating op"),
        "first_deviating_op": (STRING, "name of the first deviating op"),
        "consistent": (BOOL, "nothing deviates, nothing overflows, output and inputs agree"),
        "overflow_entries": (NUMBER, "ops where an FP16 overflow starts while their inputs agree"),
        "keep_fp32_all": (STRING, "what to keep in FP32 for every such overflow, comma-joined"),
    },
    "op": {
        "id": (STRING, "'op:<index>'"),
        "fact": (STRING, "always 'op'"),
        "index": (NUMBER, "op index (execution order) of the target op"),
        "op": (STRING, "target op name"),
        "op_type": (STRING, "target op type"),
        "golden_ops": (STRING, "golden ops this op was fused from, comma-joined"),
        "dtype": (STRING, "target dtype of the op's outputs"),
        "position": (NUMBER, "0-based position in execution order"),
        "source_line": (NUMBER, "first source line of the op's rows"),
        "tensors": (NUMBER, "compared tensors (rows) of the op"),
        "in_cosine": (NUMBER, "worst (lowest) cosine over the op's input tensors"),
        "out_cosine": (NUMBER, "worst cosine over the op's output tensors"),
        "in_red": (NUMBER, "worst relative Euclidean distance over input tensors"),
        "out_red": (NUMBER, "worst relative Euclidean distance over output tensors"),
        "in_scale": (NUMBER, "worst |rms(target)/rms(golden) - 1| over input tensors"),
        "out_scale": (NUMBER, "worst |rms(target)/rms(golden) - 1| over output tensors"),
        "out_max_abs_error": (NUMBER, "largest max absolute error over output tensors"),
        "out_kl": (NUMBER, "largest KL divergence over output tensors"),
        "is_input": (BOOL, "the op is a network input"),
        "is_output": (BOOL, "the op produces the network output"),
        "input_source": (STRING, "how inputs were identified: user, op_type, first_op"),
        "inputs_known": (BOOL, "the comparison has rows for the op's inputs"),
        "inputs_agree": (BOOL, "the op's inputs agree (from its input rows, else from the op before)"),
        "out_deviates": (BOOL, "an output tensor is outside its dtype's thresholds"),
        "error_enters": (BOOL, "outputs deviate while inputs agree: local error"),
        "hidden_entry": (BOOL, "the network's first disagreement shows on this op's inputs"),
        "local_drop": (NUMBER, "input cosine minus output cosine where error enters"),
        "entry_confidence": (NUMBER, "confidence that error enters here (0..1)"),
        "absorbed": (BOOL, "error enters here, then the network agrees again before error enters at a later op"),
        "out_overflow": (BOOL, "an FP16 output overflows (OverFlow flag or inf/NaN)"),
        "overflow_enters": (BOOL, "outputs overflow while inputs do not"),
        "out_nonfinite": (BOOL, "a target output holds inf or NaN"),
        "input_deviates": (BOOL, "the op is a network input and it already disagrees"),
        "fp16_sensitive": (BOOL, "the op (or an op fused into it) is FP16-sensitive"),
        "downstream_deviating": (NUMBER, "deviating ops after this one"),
        "keep_fp32": (STRING, "the overflowing op and the FP16-sensitive ops after it that stay out of range, "
                              "comma-joined (golden names)"),
        "output_deviates": (BOOL, "the network output deviates (copied from the network fact)"),
    },
    "finding": {
        "id": (STRING, "finding id"),
        "fact": (STRING, "always 'finding'"),
        "rule": (STRING, "id of the rule that emitted it"),
        "pack": (STRING, "pack of that rule"),
        "kind": (STRING, "finding kind"),
        "severity": (STRING, "error, warning or info"),
        "root_cause": (BOOL, "the finding names a root cause"),
        "op": (STRING, "op name"),
        "op_type": (STRING, "op type"),
        "index": (NUMBER, "op index"),
        "confidence": (NUMBER, "0..1"),
        "inputs_agree": (BOOL, "the inputs of the finding's op agree (absent for network findings)"),
    },
}


def fact_kinds() -> list[str]:
    return list(FACT_FIELDS)
