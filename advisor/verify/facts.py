"""The checks' measurements as facts for the rules (FACT_FIELDS in advisor/facts/schema_verify.py).

``fidelity`` (one), ``replay`` (per replayed op), ``fix_check`` (per finding the remedy answers),
``alternative_check`` (per int8 alternative tried when a quantisation fix does not restore) and
``residual`` (advisor.verify.residual) carry numbers and what was measured, never a verdict.
"""

from __future__ import annotations

from typing import Any

from ..diagnosis import Finding
from ..facts.builder import clean_fact
from .model import Fidelity, ReplayCheck
from .numerics import Numerics
from .onnxgraph import Group


def fidelity_fact(fidelity: Fidelity, ieee: Any, numerics: Numerics, restores: bool) -> dict[str, Any]:
    gap = (abs(fidelity.emulated_output_cosine - fidelity.target_output_cosine)
           if fidelity.emulated_output_cosine is not None and fidelity.target_output_cosine is not None else None)
    return clean_fact({
        "id": "fidelity", "fact": "fidelity", "storage": numerics.storage,
        "emulation": numerics.describe(), "mode": fidelity.mode, "quantised": fidelity.quantised,
        "emulated_output_cosine": fidelity.emulated_output_cosine,
        "target_output_cosine": fidelity.target_output_cosine, "gap": gap, "holds": fidelity.holds,
        "target_output_finite": fidelity.target_output_cosine is not None,
        "ieee_output_finite": bool(ieee.finite), "ieee_output_cosine": ieee.cosine,
        "emulated_output_restored": restores,
    })


def replay_fact(check: ReplayCheck, finding: Finding, group: Group) -> dict[str, Any]:
    return clean_fact({
        "id": f"replay:{check.index}", "fact": "replay", "op": check.op, "index": check.index,
        "op_type": finding.op_type, "golden_ops": ",".join(check.golden_ops), "fused": len(group.nodes) > 1,
        "cpu_vs_golden_cosine": check.cpu_vs_golden_cosine, "cpu_vs_target_cosine": check.cpu_vs_target_cosine,
        "target_vs_golden_cosine": check.target_vs_golden_cosine, "target_finite": check.target_finite,
        "finding": finding.id, "finding_kind": finding.kind, "pack": check.pack, "in_target_precision": check.emulated,
    })


def fix_fact(finding: Finding, is_root: bool, step: int, before: Any, after: Any, holds: bool) -> dict[str, Any]:
    return clean_fact({
        "id": f"fix_check:{finding.id}", "fact": "fix_check", "finding": finding.id, "finding_kind": finding.kind,
        "index": finding.index, "op": finding.op, "op_type": finding.op_type, "is_root": is_root, "step": step,
        "output_cosine_before": before.cosine, "output_cosine_after": after.cosine, "restores": after.restores,
        "fidelity_holds": holds,
    })


def alternative_fact(name: str, settings: str, root: Finding, before: Any, after: Any) -> dict[str, Any]:
    values = root.values
    return clean_fact({
        "id": f"alternative_check:{name}", "fact": "alternative_check", "alternative": name,
        "fix_settings": settings or None, "index": root.index, "op": root.op, "op_type": root.op_type,
        "finding": root.id, "finding_kind": root.kind,
        "fix_keep": values.get("fix_keep") or root.op, "fix_keep_golden": values.get("fix_keep_golden"),
        "fix_keep_types": values.get("fix_keep_types"), "fix_precision": "float16" if name == "keep_float" else None,
        "output_cosine_before": before.cosine, "output_cosine_after": after.cosine, "restores": after.restores,
    })
