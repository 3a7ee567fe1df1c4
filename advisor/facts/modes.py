"""Evidence of a module's mode: does each side pass its input through unchanged?

At msprobe level L0 a module's arguments are not dumped, so a Dropout left in training mode on one
side (a forgotten ``model.eval()``) cannot be read from an argument row. Its statistics show it
instead: in eval mode a Dropout returns its input unchanged, in training mode it zeroes and rescales
it. So for each op whose type depends on a mode (``mode_modules`` in
knowledge/training/tensor_roles.yaml), each side's output statistics are compared with its own input
statistics: ``mode_npu_passes`` / ``mode_golden_passes`` say whether that side passed its input
through, and ``mode_differs`` whether the two sides disagree about it. A deviation alone (a drift
first crossing a threshold at a Dropout) is no evidence of a mode.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .roles import STATISTICS

# Two statistics of one side agree when they differ by less than this share of the tensor's scale.
PASS_THROUGH_TOLERANCE = 1e-6


def mark_mode_evidence(frame: pd.DataFrame, position: np.ndarray, role: pd.Categorical, ops: pd.DataFrame) -> None:
    """``position``: each row's op position in ``ops`` (-1: none); ``role``: each row's role (a
    Categorical of ROLES). Only ops with a ``mode_argument`` are looked at."""
    n = len(ops)
    npu_passes = np.full(n, None, dtype=object)
    golden_passes = np.full(n, None, dtype=object)
    wanted = np.flatnonzero(pd.notna(ops["mode_argument"].to_numpy()))
    codes = role.codes
    data_code, output_code = role.categories.get_loc("data"), role.categories.get_loc("output")
    first_data = _first_row_per_op(position, codes == data_code, n)
    first_output = _first_row_per_op(position, codes == output_code, n)
    wanted = wanted[(first_data[wanted] >= 0) & (first_output[wanted] >= 0)]
    npu_passes[wanted] = _passes(frame, "npu", first_data[wanted], first_output[wanted])
    golden_passes[wanted] = _passes(frame, "golden", first_data[wanted], first_output[wanted])
    ops["mode_npu_passes"] = pd.array(npu_passes, dtype="boolean")
    ops["mode_golden_passes"] = pd.array(golden_passes, dtype="boolean")
    ops["mode_differs"] = (ops["mode_npu_passes"] != ops["mode_golden_passes"]).fillna(False).to_numpy(dtype=bool)


def _first_row_per_op(position: np.ndarray, where: np.ndarray, ops: int) -> np.ndarray:
    """Per op position, its first row where ``where`` holds (-1: none): one pass, not one per op."""
    rows = np.flatnonzero(where & (position >= 0))
    first = np.full(ops, -1, dtype=np.int64)
    found, at = np.unique(position[rows], return_index=True)   # the rows are in order: the first of each
    first[found] = rows[at]
    return first


def _passes(frame: pd.DataFrame, side: str, data: np.ndarray, output: np.ndarray) -> np.ndarray:
    """Per (input row, output row) pair: whether ``side``'s output statistics equal its input's
    (None when none is printed on both), all pairs at once."""
    columns = [frame[f"{side}_{s}"].to_numpy(dtype=float, na_value=np.nan) for s in STATISTICS]
    inputs = np.column_stack([column[data] for column in columns]) if len(data) else np.zeros((0, len(columns)))
    outputs = np.column_stack([column[output] for column in columns]) if len(data) else inputs
    printed = np.isfinite(inputs) & np.isfinite(outputs)
    scale = np.maximum(np.where(printed, np.abs(inputs), 0.0).max(axis=1, initial=0.0), 1e-30)
    with np.errstate(invalid="ignore"):  # inf - inf where a side prints no finite statistic
        same = np.abs(outputs - inputs) <= PASS_THROUGH_TOLERANCE * scale[:, None]
    passes = np.where(printed, same, True).all(axis=1)
    return np.where(printed.any(axis=1), passes, None).astype(object)
