"""Row flags: per comparison row, whether it is comparable, deviates, overflows, by its dtype's thresholds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..ingest.table import first_present
from .thresholds import Thresholds

# Lower rank = more precise. A tensor computed from lower-precision data carries that precision's
# error even when it is stored wider (an FP16 network's output cast back to float32), so a row is
# judged by the least precise of its own dtype and the network's compute dtype.
PRECISION_RANK = {"float64": 0, "float32": 1, "float16": 2, "bfloat16": 3, "int8": 4, "uint8": 4}


def compute_dtype(dtypes: pd.Series) -> str | None:
    """The least precise float/int8 dtype among the target tensors: what the network computes in."""
    present = [d for d in dtypes.dropna().unique() if d in PRECISION_RANK]
    return max(present, key=PRECISION_RANK.__getitem__) if present else None


def effective_dtypes(dtypes: pd.Series, floor: str | None) -> pd.Series:
    if floor is None:
        return dtypes
    rank = dtypes.map(PRECISION_RANK)
    return dtypes.mask(rank < PRECISION_RANK[floor], floor)


def row_flags(frame: pd.DataFrame, thresholds: Thresholds) -> pd.DataFrame:
    """Per-row: comparable, deviates, non-finite target, overflow.

    A million rows hold a handful of distinct dtypes, so the stored dtype is kept as a Categorical
    (``stored_dtype``) and what depends on it (compute dtype, effective dtype, thresholds) is
    worked out once per distinct dtype, not once per row."""
    scale_min_rms = thresholds.knob("rows", "scale_min_rms")
    comparable = ~(frame["npu_only"].fillna(False) | frame["golden_only"].fillna(False)).to_numpy(dtype=bool)
    codes, names = first_present(frame["npu_dtype"], frame["golden_dtype"])  # code -1: no dtype on either side
    per_code = pd.Series([*names, None], dtype=names.dtype)  # indexed by code; -1 takes the NA
    dtype = effective_dtypes(per_code, compute_dtype(first_seen(codes, names, comparable)))
    cos = frame["cosine"].to_numpy()
    red = frame["relative_euclidean_distance"].to_numpy()
    npu_mean, npu_std = frame["npu_mean"].to_numpy(), frame["npu_std"].to_numpy()
    golden_mean, golden_std = frame["golden_mean"].to_numpy(), frame["golden_std"].to_numpy()
    golden_ok = np.isfinite(golden_mean) & np.isfinite(golden_std)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # Root mean square from (mean; std): rms^2 = mean^2 + std^2. A golden tensor near zero has
        # no meaningful scale, so the ratio is only taken above a tiny rms.
        golden_rms = np.hypot(golden_mean, golden_std)
        scale = np.where(golden_ok & (golden_rms > scale_min_rms),
                         np.abs(np.hypot(npu_mean, npu_std) / golden_rms - 1.0), np.nan)
        # msprobe prints L2 norms instead of (mean; std): over the same elements the norm ratio is the
        # rms ratio, so statistics-only comparisons (summary mode, dump.json pairs) are judged too.
        golden_norm = frame["golden_norm"].to_numpy()
        norm_scale = np.abs(frame["npu_norm"].to_numpy() / golden_norm - 1.0)
        scale = np.where(np.isnan(scale) & (np.abs(golden_norm) > scale_min_rms), norm_scale, scale)
        nonfinite = (golden_ok & ~(np.isfinite(npu_mean) & np.isfinite(npu_std))) | np.isposinf(
            frame["max_abs_error"].to_numpy())
        # One side all zero makes cosine NaN; a target that collapsed to zeros is a real deviation.
        collapsed = golden_ok & (npu_std == 0) & (npu_mean == 0) & (frame["golden_std"].to_numpy() > 0)
        deviates = comparable & ((cos < thresholds.per_row(dtype, "cosine")[codes])
                                 | (red > thresholds.per_row(dtype, "relative_euclidean_distance")[codes])
                                 | (scale > thresholds.per_row(dtype, "scale")[codes])
                                 | nonfinite | collapsed)
    elsewhere = ~comparable
    anywhere_else = bool(elsewhere.any())

    def where_comparable(values: np.ndarray) -> np.ndarray:
        """``values``, NaN on the rows that are not comparable. The table's own column is shared, not
        copied, when it is NaN there already (msaccucmp writes no metric for a row with one side):
        8 MiB a column at 1M rows, at the run's peak."""
        if not anywhere_else or np.isnan(values[elsewhere]).all():
            return values
        return np.where(comparable, values, np.nan)

    if anywhere_else:
        scale[elsewhere] = np.nan   # worked out here: written in place

    is_fp16 = (per_code == "float16").fillna(False).to_numpy(dtype=bool)[codes]
    overflow = frame["overflow"].fillna(False).to_numpy(dtype=bool) | (nonfinite & is_fp16 & comparable)
    return pd.DataFrame({
        "op_index": frame["op_index"],
        "is_input": (frame["io"] == "input").fillna(False).to_numpy(dtype=bool),
        "is_net_out": frame["is_network_output"].fillna(False).to_numpy(dtype=bool),
        "comparable": comparable,
        "cos": where_comparable(cos),
        "red": where_comparable(red),
        "scale": scale,   # NaN where not comparable already (written in place above)
        "mae": where_comparable(frame["max_abs_error"].to_numpy()),
        "kl": where_comparable(frame["kl_divergence"].to_numpy()),
        "deviates": deviates,
        "nonfinite": nonfinite & comparable,
        "overflow": overflow,
        "stored_dtype": pd.Categorical.from_codes(codes, categories=names),
        "line": frame["source_line"],
    }, copy=False)  # no consolidated copy of the columns


def first_seen(codes: np.ndarray, names: pd.Index, mask: np.ndarray) -> pd.Series:
    """The distinct names of the ``mask`` rows, in the order they first appear (``Series.unique``)."""
    order = pd.unique(codes[mask])   # in order of appearance, by hashing small integers (np.unique sorts)
    return pd.Series(names.take(order[order >= 0]))


def dtype_counts(rows: pd.DataFrame, mask: np.ndarray) -> pd.Series:
    """``value_counts()`` of the stored dtypes of the ``mask`` rows: most frequent first, ties in
    the order they first appear, no NA."""
    stored = rows["stored_dtype"].array
    known = stored.codes[mask]
    known = known[known >= 0]
    order = pd.unique(known)
    counts = pd.Series(np.bincount(known, minlength=len(stored.categories))[order],
                       index=stored.categories.take(order))
    return counts.sort_values(ascending=False, kind="stable")
