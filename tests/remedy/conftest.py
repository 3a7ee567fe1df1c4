"""Findings that ask for fixes, the way rules write them (quantisation findings come from the lead's
rules later; these are built by hand in the shape of the contract in advisor/remedy/model.py)."""

from __future__ import annotations

from typing import Any

from advisor.diagnosis import Finding

# Names no generated file may let out of its literal: quotes of every language, a newline, HTML,
# shell metacharacters, a backslash, a comment leader, the separators of trtexec specs and ATC types.
HOSTILE = ["it's \"quoted\"", "two\nlines", "</script><script>alert(1)</script>", "$(touch pwned); `id` | x",
           "back\\slash #not a comment", "OpType::Pow", "layer,with:spec*chars", "注意力/MatMul_1", " padded "]


def finding(id: str, values: dict[str, Any], *, root_cause: bool = True, explained_by: str | None = None,
            op: str | None = None, index: int | None = None, kind: str = "quant_finding") -> Finding:
    return Finding(id=id, rule=id.split("@")[0], pack="test", kind=kind, severity="error",
                   title={"en": f"Finding {id}", "zh": f"发现 {id}"}, root_cause=root_cause, op=op, index=index,
                   evidence={"en": f"evidence of {id}", "zh": f"{id} 的证据"}, values=values,
                   explained_by=explained_by)


def quant_findings() -> list[Finding]:
    """A realistic int8 diagnosis: the root cause wants per-channel weights and asymmetric activations
    and two ops in float16; a second cause wants one more op in float32."""
    root = finding("quant-weight-granularity@12", {
        "fix_settings": "weight_quant_granularity=per_channel;activation_quant_algo=asymmetric",
        "fix_keep": "MatMul_12,Softmax_13", "fix_keep_golden": "/enc/layer.0/attn/MatMul,/enc/layer.0/attn/Softmax",
        "fix_keep_types": "MatMul,SoftmaxV2", "fix_precision": "float16"}, op="MatMul_12", index=12)
    second = finding("quant-outlier@40", {
        "fix_keep": "Conv_40", "fix_keep_golden": "/head/conv/Conv", "fix_keep_types": "Conv2D",
        "fix_settings": "activation_calibration=percentile;activation_percentile=99.99"}, op="Conv_40", index=40)
    return [root, second]
