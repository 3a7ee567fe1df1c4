"""``advisor ops`` groups rows with the facts' vectorised group-by; the result is the one a plain
per-op reading gives (the reference below: one pandas selection per op), on real comparisons and
on the odd cases (rows without an index, negative indexes, network output rows, inputs only)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from advisor.ingest import read_comparison
from advisor.ingest.table import METRIC_COLUMNS
from advisor.inspect.common import HIGHER_IS_BETTER
from advisor.inspect.ops import summarise_ops

DATA = Path(__file__).resolve().parents[1] / "data"


def _first(values) -> str | None:
    values = values.dropna()
    return str(values.iloc[0]) if len(values) else None


def _worst(metric, values) -> float:
    array = np.asarray(values, dtype=np.float64)
    array = array[~np.isnan(array)]
    if not array.size:
        return math.nan
    return float(array.min() if metric in HIGHER_IS_BETTER else array.max())


def reference(table) -> list[dict]:
    """One op per index (rows without one: per name), in index order, each summarised row by row."""
    frame = table.frame
    rows = frame[~frame["is_network_output"].fillna(False).to_numpy(dtype=bool)]
    metrics = [m for m in METRIC_COLUMNS if m in table.present_metrics] or list(METRIC_COLUMNS)
    key = rows["op_index"].astype("Float64").fillna(-1).to_numpy(dtype=np.float64)
    names = rows["op_name"].astype("string").fillna("").to_numpy(dtype=object)
    groups: dict[tuple, list[int]] = {}
    for position, (k, n) in enumerate(zip(key, names, strict=True)):
        groups.setdefault((k, n) if k < 0 else (k, ""), []).append(position)
    out = []
    for (k, _), positions in sorted(groups.items(), key=lambda item: (item[0][0] < 0, item[0][0], item[1][0])):
        part = rows.iloc[positions]
        is_input = (part["io"] == "input").fillna(False).to_numpy(dtype=bool)
        out.append({
            "index": int(k) if k >= 0 else None, "op_type": _first(part["op_type"]) or "",
            "name": _first(part["op_name"]) or _first(part["golden_ops"]) or "",
            "fused_from": [g for g in (_first(part["golden_ops"]) or "").split(",") if g],
            "dtype": _first(part.loc[~is_input, "npu_dtype"]) or _first(part["npu_dtype"]),
            "tensors": len(part), "overflow": bool(part["overflow"].fillna(False).any()),
            "source_line": int(part["source_line"].iloc[0]),
            "inputs": {m: _worst(m, part.loc[is_input, m]) for m in metrics},
            "outputs": {m: _worst(m, part.loc[~is_input, m]) for m in metrics}})
    return out


def _same(got: list, expected: list[dict]) -> None:
    assert len(got) == len(expected)
    for op, ref in zip(got, expected, strict=True):
        for name, value in ref.items():
            mine = getattr(op, name)
            if isinstance(value, dict):
                assert mine.keys() == value.keys()
                for metric, number in value.items():
                    assert mine[metric] == pytest.approx(number, nan_ok=True), (op.name, name, metric)
            else:
                assert mine == value, (op.name, name)


COMPARISONS = sorted([*DATA.glob("scenarios/*/result_*.csv"), *DATA.glob("msaccucmp_genuine/*/result_*.csv")])[:12]


@pytest.mark.parametrize("path", COMPARISONS, ids=lambda p: p.parent.name)
def test_grouping_matches_a_per_op_reading(path):
    table = read_comparison(path)
    _same(summarise_ops(table), reference(table))


def test_rows_without_an_index_and_odd_orders(tmp_path):
    header = "Index,OpType,NPUDump,DataType,GroundTruth,DataType,TensorIndex,Shape,OverFlow,CosineSimilarity"
    rows = [
        "5,Conv2D,conv,DT_FLOAT16,conv_a,float32,conv:input:0,[1],NO,0.99",
        "5,Conv2D,conv,DT_FLOAT16,conv_a,float32,conv:output:0,[1],YES,0.5",
        "-3,Relu,neg_b,DT_FLOAT,neg_b,float32,neg_b:output:0,[1],NO,0.9",
        "2,Add,add,DT_FLOAT,*,NaN,add:output:0,[1],NO,NaN",
        "NaN,Cast,loose_b,DT_FLOAT,loose_b,float32,loose_b:output:0,[1],NO,0.7",
        "-3,Relu,neg_a,DT_FLOAT,neg_a,float32,neg_a:input:0,[1],NO,0.8",
        "NaN,Cast,loose_a,DT_FLOAT,loose_a,float32,loose_a:input:0,[1],NO,0.6",
        "2,Add,add,DT_FLOAT16,a_1,float32,add:input:0,[1],NO,0.4",
        "NaN,,Node_Output,DT_FLOAT,out,float32,Node_Output:output:0,[1],NO,0.1",
        "NaN,Cast,loose_b,DT_FLOAT16,loose_b,float32,loose_b:output:1,[1],NO,0.2",
    ]
    path = tmp_path / "result_20240101000000.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    table = read_comparison(path)
    ops = summarise_ops(table)
    _same(ops, reference(table))
    assert [op.index for op in ops] == [2, 5, None, None, None, None]
    assert [op.name for op in ops][2:] == ["neg_b", "neg_a", "loose_b", "loose_a"]
