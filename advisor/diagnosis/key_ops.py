"""The ops a report's per-op table shows: the few that matter out of maybe a million, with their metrics.

Which ops matter: the root cause's op, the ops where error enters, the worst ops by output cosine, the
root cause's neighbourhood (its graph inputs and successors with ``--graph``, else the ops just
before and after it in execution order) and the network output. Selected with column operations on
the per-op frame the facts were built from, so the cost does not grow with the rows of the input.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..facts.builder import FactSet
from ..ingest.table import row_at, text_mask
from . import KeyOp

MAX_ENTRIES = 10          # ops where error enters, first ones in execution order
WORST = 10                # worst ops by output cosine
NEIGHBOURS = 2            # ops before and after the root cause in execution order (no graph)
MAX_OUTPUTS = 3


def key_ops(facts: FactSet, root_index: int | None) -> list[KeyOp]:
    """The ops that matter, in execution order, each with the reasons it was chosen."""
    ops = facts.ops
    if not len(ops):
        return []
    roles: dict[int, list[str]] = {}

    def mark(positions: np.ndarray | list[int], role: str) -> None:
        for position in positions:
            roles.setdefault(int(position), []).append(role)

    root = _position(ops, root_index)
    if root is not None:
        mark([root], "root")
    entries = (ops["error_enters"] | ops["hidden_entry"]).to_numpy(dtype=bool) if "error_enters" in ops \
        else np.zeros(len(ops), dtype=bool)
    mark(np.flatnonzero(entries)[:MAX_ENTRIES], "entry")
    cosine = ops["out_cosine"].to_numpy(dtype=float)
    compared = np.flatnonzero(np.isfinite(cosine))
    worst = compared[np.argsort(cosine[compared], kind="stable")[:WORST]]
    mark(worst[cosine[worst] < 1.0], "worst")
    if root is not None:
        mark(_neighbours(facts, root), "neighbour")
    outputs = np.flatnonzero(ops["is_output"].to_numpy(dtype=bool)) if "is_output" in ops else np.array([], int)
    if not len(outputs) and facts.network.get("output_op"):
        # A Node_Output row is no op of its own: the output is the op its golden dump was written from.
        outputs = np.flatnonzero(text_mask(ops["op"], lambda texts: texts == facts.network["output_op"]))[-1:]
    mark(outputs[:MAX_OUTPUTS], "output")
    return [_row(ops, position, tags) for position, tags in sorted(roles.items())]


def _position(ops: pd.DataFrame, index: int | None) -> int | None:
    if index is None:
        return None
    try:
        position = ops.index.get_loc(index)
    except KeyError:
        return None
    return int(position) if isinstance(position, (int, np.integer)) else None


def _neighbours(facts: FactSet, root: int) -> list[int]:
    """Graph inputs and successors of the root cause's op (``--graph``), else its execution-order
    neighbours."""
    join = facts.join
    if join is not None and join.nodes_of(root):
        own = join.nodes_of(root)
        near = [j for i in own for j in (*join.graph.predecessor_indices(i), *join.graph.successor_indices(i))]
        positions = [join.op_of_node[j] for j in near if j in join.op_of_node]
        return [p for p in dict.fromkeys(positions) if p != root]
    return [p for p in range(max(0, root - NEIGHBOURS), min(len(facts.ops), root + NEIGHBOURS + 1)) if p != root]


def _number(value: object) -> float | None:
    if value is None or pd.isna(value):
        return None
    number = float(value)  # type: ignore[arg-type]
    return number if np.isfinite(number) else None


def _flag(row: pd.Series, column: str) -> bool:
    return bool(row[column]) if column in row and not pd.isna(row[column]) else False


def _row(ops: pd.DataFrame, position: int, roles: list[str]) -> KeyOp:
    row = row_at(ops, position)
    op_type = row.get("op_type")
    dtype = row.get("dtype")
    return KeyOp(index=int(ops.index[position]), op=str(row["op"]),
                 op_type=None if op_type is None or pd.isna(op_type) else str(op_type),
                 dtype=None if dtype is None or pd.isna(dtype) else str(dtype),
                 roles=list(dict.fromkeys(roles)),
                 in_cosine=_number(row.get("in_cosine")), out_cosine=_number(row.get("out_cosine")),
                 out_red=_number(row.get("out_red")), out_max_abs_error=_number(row.get("out_max_abs_error")),
                 deviates=_flag(row, "out_deviates"), overflow=_flag(row, "out_overflow"),
                 source_line=int(row["source_line"]) if not pd.isna(row["source_line"]) else None)


def op_types_of(ops: pd.DataFrame, names: set[str]) -> dict[str, str]:
    """Op type of each of ``names`` that is a target op name or one of the golden ops an op was made
    from (the remedy's keep lists name golden ops); names the comparison does not know are left out."""
    if not names or not len(ops):
        return {}
    types = ops["op_type"]
    own = text_mask(ops["op"], lambda texts: texts.isin(names))
    found = {str(name): str(kind) for name, kind in zip(ops["op"][own].tolist(), types[own].tolist(), strict=True)
             if not pd.isna(kind)}
    pattern = "|".join(map(re.escape, names))
    listed = text_mask(ops["golden_ops"], lambda texts: texts.str.contains(pattern, regex=True) if len(names) < 500
                       else texts.notna())
    golden = ops["golden_ops"][listed].astype("string")
    exploded = golden.str.split(",").explode().str.strip()
    hits = exploded[exploded.isin(names)]
    for name, kind in zip(hits.tolist(), types.loc[hits.index].tolist(), strict=True):
        if not pd.isna(kind):
            found.setdefault(str(name), str(kind))
    return found
