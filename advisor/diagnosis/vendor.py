"""What the vendor's own msaccucmp advisor would conclude from the same table, to say so where we differ.

Its three detectors, first match wins (facts of the public tool, docs/vendor-parity.md): the first
row flagged ``OverFlow`` YES is an FP16 overflow; else the first named input node (or Data op) whose
cosine is below 0.99 is an input mismatch; else, ignoring NaN cosines, the first row below 0.99 is a
problem node when the last row is below 0.99 too, a single-point deviation when it is not; nothing
below 0.99 is consistent. One threshold, one finding. Measured here with column operations; the
report only states it beside our own verdict (docs/vendor-parity.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..ingest.table import ComparisonTable, lower_isin, text_mask

VENDOR_COSINE = 0.99
INPUT_TYPES = frozenset({"data", "placeholder", "aippdata"})


def vendor_verdict(table: ComparisonTable, input_nodes: tuple[str, ...] = ()) -> tuple[str, int | None, str] | None:
    """(kind, op index, op name) the vendor advisor would report; None when it would not run on this
    table (no ``CosineSimilarity``: an msprobe or statistics-only comparison)."""
    if not table.format.startswith(("msaccucmp", "msquickcmp", "msit")) or "cosine" not in table.present_metrics:
        return None
    frame = table.frame
    overflow = frame["overflow"].fillna(False).to_numpy(dtype=bool)
    if overflow.any():
        return _at(frame, int(np.argmax(overflow)), "fp16_overflow")
    cosine = frame["cosine"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        low = cosine < VENDOR_COSINE
    named = text_mask(frame["op_name"], lambda texts: texts.isin(set(input_nodes))) if input_nodes else \
        lower_isin(frame["op_type"], INPUT_TYPES).to_numpy(dtype=bool)
    if (named & low).any():
        return _at(frame, int(np.argmax(named & low)), "input_mismatch")
    known = np.flatnonzero(np.isfinite(cosine))
    if not low.any() or not len(known):
        return ("consistent", None, "")
    first = int(np.argmax(low))
    return _at(frame, first, "problem_node" if low[known[-1]] else "single_point_deviation")


def _at(frame: pd.DataFrame, row: int, kind: str) -> tuple[str, int | None, str]:
    index = frame["op_index"].iloc[row]
    name = frame["op_name"].iloc[row]
    return kind, (int(index) if pd.notna(index) else None), (str(name) if pd.notna(name) else "")


def vendor_note(verdict: tuple[str, int | None, str] | None, root_kind: str | None,
                root_index: int | None) -> str | None:
    """One sentence when the vendor's verdict differs from ours (kind, or op for an op finding)."""
    if verdict is None:
        return None
    kind, index, name = verdict
    ours = root_kind or "consistent"
    if kind == ours and (kind == "consistent" or index == root_index):
        return None
    # The vendor's "problem node" only says where error appears: any cause of ours named at that
    # same op (a fused op, a quantised layer, a changed weight...) agrees with it and says more.
    if kind == "problem_node" and index is not None and index == root_index:
        return None
    where = f" at Index {index}" + (f" ({name})" if name and name != f"Index {index}" else "") if index is not None \
        else ""
    return f"the vendor's msaccucmp advisor would report {kind.replace('_', ' ')}{where} (docs/vendor-parity.md)"
