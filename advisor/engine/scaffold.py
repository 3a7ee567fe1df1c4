"""`advisor rules new`: a new pack with one working rule and its two cases, ready to edit."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import UsageError

PACK_YAML = """\
pack: {name}
version: "0.1.0"
description: Rules of {name}. One file per rule; `advisor rules test {folder}` runs their cases.
"""

RULE_YAML = """\
# A rule: when the condition holds for a fact, it emits a finding. Field names: `advisor rules fields op`.
# Run `advisor rules validate {folder}` and `advisor rules test {folder}`; docs/rule-packs.md walks through it.
id: {name}-slow-softmax
title: {{en: Softmax far from the golden run, zh: Softmax 与标杆差异大}}
severity: warning
root_cause: true
priority: 100
tags: [example]
params:
  max_cosine: 0.95
docs:
  en:
    what: A Softmax op whose own output deviates strongly although its inputs agree.
    why: Softmax over the wrong axis, or computed in FP16 without subtracting the row maximum.
    fix: Check the axis attribute after conversion and keep the op in FP32.
  zh:
    what: 输入一致但自身输出偏差很大的 Softmax 算子。
    why: 转换后 Softmax 的轴错误，或以 FP16 计算且未减去行最大值。
    fix: 检查转换后的 axis 属性，并将该算子保持 FP32。
when:
  fact: op
  op_type: {{in: [Softmax, SoftmaxV2]}}
  error_enters: true
  out_cosine: {{lt: "${{max_cosine}}"}}
emit:
  kind: {name_snake}_softmax
  confidence: 0.7
  values: [out_cosine, in_cosine]
  evidence:
    en: "{{{{ m.op }}}} output cosine {{{{ m.out_cosine | num }}}} with inputs at {{{{ m.in_cosine | num }}}}"
    zh: "{{{{ m.op }}}} 输出余弦相似度 {{{{ m.out_cosine | num }}}}，输入为 {{{{ m.in_cosine | num }}}}"
# Advice for a new finding kind (same sections as knowledge/advice pages).
advice:
  en:
    what: "{{{{ op }}}} computes a Softmax that disagrees with the golden run."
    why: Wrong axis after conversion, or FP16 exponentials without max subtraction.
    confirm: Compare the op's attributes with the original model and run it alone in FP32.
    fix:
      any: Fix the axis in the converted model, or keep {{{{ op }}}} in FP32.
    references: ["docs/rule-packs.md"]
  zh:
    what: "{{{{ op }}}} 的 Softmax 结果与标杆不一致。"
    why: 转换后轴错误，或以 FP16 计算指数且未减最大值。
    confirm: 对比该算子与原始模型的属性，并以 FP32 单独运行。
    fix:
      any: 修正转换后模型中的轴，或将 {{{{ op }}}} 保持 FP32。
    references: ["docs/rule-packs.md"]
cases:
  - name: a softmax where error enters
    expect: fire
    findings: [{{kind: {name_snake}_softmax, op: Softmax_7, index: 7}}]
    facts:
      - {{fact: op, id: "op:7", index: 7, op: Softmax_7, op_type: SoftmaxV2, error_enters: true, out_cosine: 0.4,
         in_cosine: 0.9999}}
  - name: a softmax that only inherits error
    expect: silent
    facts:
      - {{fact: op, id: "op:7", index: 7, op: Softmax_7, op_type: SoftmaxV2, error_enters: false, out_cosine: 0.4}}
"""


def scaffold_pack(name: str, parent: Path) -> Path:
    if not re.match(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$", name):
        raise UsageError(f"pack name '{name}' must be lower-case kebab-case, e.g. 'my-team'")
    folder = parent / name
    if folder.exists():
        raise UsageError("already exists; choose another name or folder", path=folder)
    folder.mkdir(parents=True)
    values = {"name": name, "name_snake": name.replace("-", "_"), "folder": folder}
    (folder / "pack.yaml").write_text(PACK_YAML.format(**values), encoding="utf-8")
    (folder / f"{name}-slow-softmax.yaml").write_text(RULE_YAML.format(**values), encoding="utf-8")
    return folder
