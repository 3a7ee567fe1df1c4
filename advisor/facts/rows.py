"""Row flags: per comparison row, whether it is comparable, deviates, overflows, by its dtype's thresholds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..dtypes import FP16_MAX
from ..ingest.table import equal_texts, first_present
from .roles import state_difference
from .thresholds import Thresholds

# The run's judgement: given the ``tensor`` fields as columns and the row count, a mask per judged flag
# (``deviates``, ``beyond_own_rounding``).
Judge = Callable[[Mapping[str, Any], int], Mapping[str, np.ndarray]]

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


def row_flags(frame: pd.DataFrame, thresholds: Thresholds, judge: Judge) -> pd.DataFrame:
    """Per-row: comparable, deviates, non-finite target, overflow. What each row measures is published
    as the ``tensor`` fields (facts/schema.py); ``judge`` (the run's judgement rules, engine/judgement.py)
    decides from them which rows deviate, against the dtype's limits and against one op's own rounding.

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
        # A norm printed as inf while the extrema are finite overflowed in the tool's own (FP16)
        # arithmetic: it says nothing about the tensor, so only finite norms give a scale.
        golden_norm = frame["golden_norm"].to_numpy()
        npu_norm = frame["npu_norm"].to_numpy()
        norm_scale = np.abs(npu_norm / golden_norm - 1.0)
        scale = np.where(np.isnan(scale) & (np.abs(golden_norm) > scale_min_rms) & np.isfinite(golden_norm)
                         & np.isfinite(npu_norm), norm_scale, scale)
        # Non-finite values: msaccucmp shows them as a non-finite (mean; std) or an infinite error;
        # msprobe prints inf / NaN extrema (npu_nonfinite / golden_nonfinite, read as values).
        npu_says, golden_says = _flag(frame["npu_nonfinite"]), _flag(frame["golden_nonfinite"])
        nonfinite = ((golden_ok & ~(np.isfinite(npu_mean) & np.isfinite(npu_std))) | np.isposinf(
            frame["max_abs_error"].to_numpy()) | npu_says) & ~golden_says
        # The reference holds inf/NaN where the target does not (a saturating target, or a reference
        # that overflowed itself): the two differ, and neither side's metric can say by how much.
        reference_nonfinite = golden_says & ~npu_says
        # One side all zero makes cosine NaN; a target that collapsed to zeros is a real deviation.
        collapsed = golden_ok & (npu_std == 0) & (npu_mean == 0) & (frame["golden_std"].to_numpy() > 0)
        limit = _limits(frame, thresholds, dtype, codes)
        ill, drift = ill_conditioned(frame, comparable, thresholds.knob("rows", "ill_conditioned"))
        # The statistics' drift against the tensor's scale, where nothing else measures the tensor (a
        # .pkl dump's max/min/mean; a float16 norm that overflowed in the tool's own arithmetic).
        state_rel, state_stat = state_difference(frame)
        # ... and in a float32 statistics comparison: a norm can hide a shift (x in [0, 1] against 2x - 1
        # has the same norm), the extrema and mean cannot. Low-precision tensors' maxima are noisier than
        # their dtype's scale limit (a clean bfloat16 attention's logits), so there the norm alone judges.
        extrema = np.isfinite(frame["golden_max"].to_numpy()) & np.isfinite(frame["golden_min"].to_numpy())
        wide = np.append(names.isin(["float32", "float64"]), False)[codes]   # code -1 (no dtype): False
        alone = (np.isnan(cos) & np.isnan(red) & np.isnan(scale)) | (extrema & np.isnan(cos) & wide
                                                                     & equal_texts(frame["npu_dtype"],
                                                                                   frame["golden_dtype"]))
        # What an op with identical inputs may do: its own rounding only (propagation decides which
        # ops that is; every row is measured against those limits too).
        own = _limits(frame, thresholds, dtype, codes, profile="identical_inputs")
        tensor = {
            "comparable": comparable, "ill_conditioned": ill, "statistics_only": alone,
            **_uses(cos, red, scale, drift, state_rel, limit),
            **{f"own_{name}": use for name, use in _uses(cos, red, scale, drift, state_rel, own).items()},
            "target_nonfinite": nonfinite, "reference_nonfinite_only": reference_nonfinite, "collapsed": collapsed,
            # Integer tensors (token ids, indices, masks) on both sides carry no rounding: any difference
            # of a printed statistic or of their bits is a difference (msprobe gives them no relative error).
            "integer_differs": integer_rows(frame) & _any_statistic_differs(frame),
        }
    # The judgement rules (rules/core/judgement) decide, column by column.
    judged = judge(tensor, len(frame))
    del tensor, limit, own
    deviates = judged["deviates"]
    deviates_own = deviates | judged["beyond_own_rounding"]
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
    with np.errstate(invalid="ignore"):   # a saturated FP16 tensor: its extrema at the format's limit
        saturated = (np.fmax(np.abs(frame["npu_max"].to_numpy()), np.abs(frame["npu_min"].to_numpy())) >= FP16_MAX) \
            & ~golden_says   # a -inf the reference holds too (a mask filled with -inf) is no overflow
    overflow = frame["overflow"].fillna(False).to_numpy(dtype=bool) | ((nonfinite | saturated) & is_fp16 & comparable)
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
        "deviates_own": deviates_own,
        "state_rel": where_comparable(state_rel),   # the statistics' largest difference against the tensor's scale
        "state_stat": state_stat,   # which statistic (codes into roles.STATISTICS, -1: none printed)
        "nonfinite": nonfinite & comparable,
        "both_nonfinite": npu_says & golden_says & comparable,
        "reference_nonfinite": reference_nonfinite & comparable,   # inf/NaN on the reference's side only
        "overflow": overflow,
        "stored_dtype": pd.Categorical.from_codes(codes, categories=names),
        "line": frame["source_line"],
    }, copy=False)  # no consolidated copy of the columns


def _limits(frame: pd.DataFrame, thresholds: Thresholds, dtype: pd.Series, codes: np.ndarray,
            profile: str = "") -> dict[str, np.ndarray]:
    """Per row, each metric's threshold by its dtype (in ``profile`` where the table has one);
    backward rows (gradients) by the ``gradient`` profile where the table has one."""
    backward = (frame["direction"] == "backward").fillna(False).to_numpy(dtype=bool)
    limits = {}
    for metric in ("cosine", "relative_euclidean_distance", "scale"):
        limits[metric] = thresholds.per_row(dtype, metric, profile)[codes]
        if backward.any() and not profile:
            limits[metric] = np.where(backward, thresholds.per_row(dtype, metric, "gradient")[codes], limits[metric])
    return limits


def _uses(cos: np.ndarray, red: np.ndarray, scale: np.ndarray, drift: np.ndarray, state_rel: np.ndarray,
          limit: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each measure over its limit (1.0: at the limit); for cosine, the angle's share ``(1 - cos) / (1 - limit)``."""
    distance, scale_limit = limit["relative_euclidean_distance"], limit["scale"]
    return {"cosine_use": (1.0 - cos) / (1.0 - limit["cosine"]), "distance_use": red / distance,
            "scale_use": scale / scale_limit, "drift_use": drift / distance, "statistics_use": state_rel / scale_limit}


def ill_conditioned(frame: pd.DataFrame, comparable: np.ndarray, share: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row: whether the tensor is ill-conditioned (its reference norm below ``share`` of the
    largest reference norm among its op's rows) and, for those, its absolute difference relative to
    that largest norm (the Euclidean distance, else the largest difference of its printed norm and
    extrema). Only comparisons that print norms (msprobe) can say; elsewhere nothing is."""
    n = len(frame)
    golden_norm = frame["golden_norm"].to_numpy()
    known = comparable & np.isfinite(golden_norm)
    if not known.any():
        return np.zeros(n, dtype=bool), np.full(n, np.nan)
    op = frame["op_index"].to_numpy(dtype=np.float64, na_value=np.nan)
    keyed = known & np.isfinite(op)
    largest = pd.Series(np.where(keyed, golden_norm, np.nan)).groupby(np.where(keyed, op, -1.0)).transform("max")
    largest = largest.to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        ill = keyed & (largest > 0) & (golden_norm < share * largest)
        difference = frame["euclidean_distance"].to_numpy()
        stats = [np.abs(frame[f"npu_{s}"].to_numpy() - frame[f"golden_{s}"].to_numpy()) for s in ("norm", "max", "min")]
        difference = np.where(np.isfinite(difference), difference, np.fmax.reduce(stats))
        drift = np.where(ill, difference / largest, np.nan)
    return ill, drift


INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"})


def integer_rows(frame: pd.DataFrame) -> np.ndarray:
    """Rows whose two sides are integer (or bool) tensors: a quantised int8 target against a float
    golden is not one (it is judged by the int8 thresholds)."""
    both = np.ones(len(frame), dtype=bool)
    for column in ("npu_dtype", "golden_dtype"):
        codes = frame[column].cat.codes.to_numpy()
        is_int = np.append(frame[column].cat.categories.isin(INTEGER_DTYPES), False)
        both &= is_int[codes]
    return both


def _any_statistic_differs(frame: pd.DataFrame) -> np.ndarray:
    """A printed statistic differs between the two sides (both printed and finite)."""
    differs = np.zeros(len(frame), dtype=bool)
    for stat in ("max", "min", "mean", "norm"):
        npu, golden = frame[f"npu_{stat}"].to_numpy(), frame[f"golden_{stat}"].to_numpy()
        differs |= np.isfinite(npu) & np.isfinite(golden) & (npu != golden)
    return differs


def _flag(column: pd.Series) -> np.ndarray:
    """A boolean column as numpy, NA as False."""
    return column.fillna(False).to_numpy(dtype=bool)


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
