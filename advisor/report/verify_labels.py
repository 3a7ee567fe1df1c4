"""Words of the "Verified on CPU" panel (advisor run --verify), en and zh: part of the report's one label
table (labels.TEXTS), kept in their own module so that table stays readable."""

from __future__ import annotations

VERIFY_TEXTS: dict[str, tuple[str, str]] = {
    "verify.title": ("Verified on CPU", "CPU 验证"),
    "verify.intro": ("The blamed ops were replayed and the target's numerics emulated on ONNX Runtime CPU "
                     "(advisor run --verify, docs/verify.md); the rules judged the results with the findings.",
                     "在 ONNX Runtime CPU 上重放了被指认的算子并仿真了目标端数值"
                     "（advisor run --verify，见 docs/verify.md）；规则连同其他发现一起判定了这些结果。"),
    "verify.fidelity": ("Fidelity", "仿真保真度"),
    "verify.fidelity_line": ("Emulated target ({emulation}): network-output cosine {emulated}; measured target: "
                             "{target}.",
                             "仿真目标端（{emulation}）：网络输出余弦相似度 {emulated}；实测目标端：{target}。"),
    "verify.holds": ("The emulation reproduces the target: precision explains what the comparison shows.",
                     "仿真复现了目标端：精度可以解释比对结果。"),
    "verify.fails": ("The emulation does not reproduce the target: something besides precision changes its output "
                     "(see the residual).",
                     "仿真未能复现目标端：除精度外还有其他因素改变了其输出（见残差）。"),
    "verify.saturation": ("The target saturates FP16 overflow at +-65504 (an IEEE emulation gives inf there).",
                          "目标端把 FP16 溢出饱和截断到 ±65504（IEEE 仿真在此处得到 inf）。"),
    "verify.replay": ("Replay of the blamed ops", "被指认算子的重放"),
    "verify.replay_line": ("{op} (op {index}): {verdict}. CPU vs golden {golden}, CPU vs target {target}, target vs "
                           "golden {measured}.",
                           "{op}（序号 {index}）：{verdict}。CPU 与标杆 {golden}，CPU 与目标端 {target}，"
                           "目标端与标杆 {measured}。"),
    "verify.pack": ("repro pack: {path}/", "复现包：{path}/"),
    "verify.verdict.op_wrong": ("the op is wrong on the target", "该算子在目标端算错"),
    "verify.verdict.inherited": ("the op is right, its error is inherited", "该算子正确，误差来自输入"),
    "verify.verdict.pairing": ("neither side reproduced: tensors mis-paired", "两侧都无法复现：张量配对有误"),
    "verify.verdict.none": ("no verdict (the target agrees)", "无结论（目标端一致）"),
    "verify.steps": ("Remedy steps under emulation", "仿真中的修复步骤"),
    "verify.step_bar": ("Step {n}", "第 {n} 步"),
    "verify.restores": ("restores the output", "输出恢复"),
    "verify.not_restores": ("does not restore it", "未能恢复"),
    "verify.smallest": ("Step {n} is the smallest step that restores the network output under emulation.",
                        "第 {n} 步是在仿真中能恢复网络输出的最小步骤。"),
    "verify.none_restores": ("No remedy step restores the network output under emulation.",
                             "仿真中没有任何修复步骤能恢复网络输出。"),
    "verify.unfaithful_steps": ("The emulation does not reproduce the target: these numbers say what the fix does to "
                                "precision, not what the rebuilt target will show.",
                                "仿真未能复现目标端：这些数字说明修复对精度的作用，而非重新构建后目标端的表现。"),
    "verify.chart_legend": ("Bar length: the cosine's nines (0.99 = 2, 0.999 = 3); grey before, coloured after; the "
                            "line marks the output's threshold ({threshold}).",
                            "条形长度：余弦相似度的“9 的个数”（0.99 = 2，0.999 = 3）；灰色为修复前，彩色为修复后；"
                            "竖线为输出阈值（{threshold}）。"),
    "verify.before_after": ("{before} → {after}", "{before} → {after}"),
    "verify.step_checked": ("Verified on CPU: under emulation the network-output cosine goes {text}, {status}.",
                            "CPU 验证：仿真中网络输出余弦相似度 {text}，{status}。"),
    "verify.step_unchecked": ("Not verified on CPU (the report's Verified on CPU says why).",
                              "未在 CPU 上验证（原因见报告的“CPU 验证”）。"),
    "verify.residual": ("Residual: error precision does not explain", "残差：精度无法解释的误差"),
    "verify.residual_line": ("{op} (op {index}): the target departs from its own emulation here.",
                             "{op}（序号 {index}）：目标端在此处偏离其自身的仿真。"),
    "verify.residual_none": ("None: op by op, the target matches its emulation.", "无：逐算子看，目标端与其仿真一致。"),
    "verify.not_verified": ("Not verified", "未验证"),
    "verify.not_verified_line": ("{what}: {why}", "{what}：{why}"),
    "verify.txt": ("Verified on CPU: {text}", "CPU 验证：{text}"),
    "verify.txt_fidelity": ("fidelity {emulated} emulated vs {target} measured ({holds})",
                            "保真度 仿真 {emulated} 对 实测 {target}（{holds}）"),
    "verify.txt_holds": ("holds", "成立"),
    "verify.txt_fails": ("does not hold", "不成立"),
    "verify.txt_replay": ("replay {op}: {verdict}", "重放 {op}：{verdict}"),
    "verify.txt_step": ("smallest restoring step {n}", "最小有效修复步骤 {n}"),
    "verify.txt_no_step": ("no remedy step restores the output", "没有修复步骤能恢复输出"),
    "verify.txt_residual": ("residual at {ops}", "残差位于 {ops}"),
    "verify.txt_nothing": ("nothing could be verified", "无法进行任何验证"),
    "verify.list_join": ("; ", "；"),
}
