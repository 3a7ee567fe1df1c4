"""The residual: where the target departs from its own emulation, found with advisor's error-entry logic.

The comparison is judged again with the emulated run in place of the golden one: each row's target
tensor against the emulated value of the golden tensor it was paired with. Precision (the storage
dtype, FP16 accumulation, overflow, int8 as configured) is then on both sides, so an op whose inputs
agree with the emulation and whose output does not computes something precision does not explain: a
second, non-precision fault. Values both sides hold as the same inf or NaN (an overflow the emulation
predicts) count as agreeing and are left out of the metrics.

The rows keep everything of the comparison but their metrics, and go through the same fact builder
as the comparison itself (advisor.facts.build_facts: thresholds per dtype, inputs agree, error
enters, recovery), so "error enters" means exactly what it means in the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..evidence.facts import GoldenInputs
from ..facts.builder import build_facts, clean_fact
from ..facts.thresholds import Thresholds
from ..ingest.msaccucmp_layout import METRIC_HEADERS
from ..ingest.table import ComparisonTable
from ..tensors.lineage import load_dump
from ..tensors.metrics import compare_tensors
from .onnxgraph import OnnxModel

#: the op fields a residual fact carries over from the emulation-referenced op facts
OP_FIELDS = ("op", "op_type", "golden_ops", "in_cosine", "out_cosine", "out_red", "out_deviates", "inputs_agree",
             "error_enters", "hidden_entry", "recovered_cosine", "next_entry_index", "downstream_deviating")


def residual_facts(table: ComparisonTable, model: OnnxModel, emulated: Callable[[str], np.ndarray | None],
                   dumps: GoldenInputs, thresholds: Thresholds, limit: int, **options: Any
                   ) -> tuple[list[dict[str, Any]], int]:
    """One ``residual`` fact per op where error enters against the emulation (the first ``limit``), and
    how many ops besides the network inputs could be judged again (0: no op's dumps, nothing to say).
    ``emulated(tensor)``: the emulated value of an ONNX tensor; ``options`` go to build_facts."""
    frame = table.frame
    rows = frame[~frame["is_network_output"].fillna(False).astype(bool)
                 & ~frame["npu_only"].fillna(False).astype(bool) & ~frame["golden_only"].fillna(False).astype(bool)]
    metrics = []
    keep = []
    for position, (target_file, golden_file, _) in zip(rows.index, dumps.locate(rows), strict=True):
        if target_file is None or golden_file is None:
            continue
        slot = golden_file.name.slot
        tensor = model.tensor_of(golden_file.name.op, int(slot) if slot.isdigit() else 0)
        value = emulated(tensor) if tensor is not None else None
        if value is None:
            continue
        metrics.append(_metrics(np.asarray(load_dump(target_file.path)), value))
        keep.append(position)
    if not keep:
        return [], 0
    judged = frame.loc[keep].copy()
    for column, values in pd.DataFrame(metrics, index=keep).items():
        judged[column] = values.to_numpy(dtype="float64")
    judged["overflow"] = pd.array([pd.NA] * len(judged), dtype="boolean")
    facts = build_facts(replace(table, frame=judged.reset_index(drop=True), warnings=[]), thresholds, **options)
    ops = facts.ops
    judged_ops = int((~ops["is_input"].fillna(False).astype(bool)).sum())
    entries = ops[(ops["error_enters"] | ops["hidden_entry"]).to_numpy(dtype=bool)].head(limit)
    out = []
    for index, op in entries.iterrows():
        fact = {"id": f"residual:{index}", "fact": "residual", "index": int(index)}
        fact.update({name: op[name] for name in OP_FIELDS if name in op and not _missing(op[name])})
        out.append(clean_fact(fact))
    return out, judged_ops


def _metrics(target: np.ndarray, emulated: np.ndarray) -> dict[str, float]:
    """The metric columns of one row, with values both sides hold as the same inf or NaN left out."""
    x = np.asarray(target, dtype=np.float64).reshape(-1)
    y = np.asarray(emulated, dtype=np.float64).reshape(-1)
    if x.size == y.size:
        same = ~np.isfinite(x) & ((x == y) | (np.isnan(x) & np.isnan(y)))
        if same.any():
            x, y = x[~same], y[~same]
    comparison = compare_tensors(x, y)
    out = {column: comparison.values[header] for header, column in METRIC_HEADERS.items()
           if header in comparison.values}
    out.update(npu_mean=comparison.npu_stats[0], npu_std=comparison.npu_stats[1],
               golden_mean=comparison.golden_stats[0], golden_std=comparison.golden_stats[1])
    return out


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
