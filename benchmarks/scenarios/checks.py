"""Self-checks: does a generated result CSV show the signature its label promises?

Each check reads the CSV back with pandas (as any consumer would) and returns a list of problems;
an empty list means the scenario is what it claims to be. Thresholds are the vendors' cosine 0.99.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from advisor.compare import HEADER

COSINE_OK = 0.99
INPUT_KINDS = ("input_mismatch", "rgb_bgr_swap", "duplicate_normalization", "layout_nchw_nhwc")


def read_result(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, keep_default_na=False, na_values=["NaN"], dtype={"OverFlow": str})
    frame["is_output"] = frame["NPUDump"] == "Node_Output"
    frame["io"] = frame["TensorIndex"].str.rsplit(":", n=2).str[1]
    return frame


def _low(frame: pd.DataFrame) -> pd.Series:
    """Rows whose cosine is below the threshold (NaN does not count, inf values never occur)."""
    return frame["CosineSimilarity"] < COSINE_OK


def check_layout(path: Path) -> list[str]:
    problems = []
    header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    if tuple(header) != HEADER:
        problems.append(f"header differs from msaccucmp's: {header}")
    frame = read_result(path)
    if not frame["Index"].is_monotonic_increasing:
        problems.append("rows are not sorted by Index")
    outputs = frame.index[frame["is_output"]]
    if len(outputs) == 0 or outputs[-1] != frame.index[-1] or outputs[0] != len(frame) - len(outputs):
        problems.append("Node_Output rows are missing or not last")
    return problems


def check_signature(path: Path, label: dict) -> list[str]:
    """Problems with the scenario's intended signature (empty when it shows as labelled)."""
    frame = read_result(path)
    kind, index = label["kind"], label["index"]
    network_out = frame[frame["is_output"]]["CosineSimilarity"]
    out_ok = bool((network_out >= COSINE_OK).all())
    problems = check_layout(path)
    overflow = frame["OverFlow"] == "YES"
    if kind == "consistent":
        if _low(frame).any():
            first = frame[_low(frame)].iloc[0]
            problems.append(f"clean run has cosine {first.CosineSimilarity} < {COSINE_OK} at "
                            f"{first.TensorIndex}")
        if overflow.any():
            problems.append("clean run has OverFlow YES rows")
        return problems
    op_rows = frame[(frame["Index"] == index) & ~frame["is_output"]]
    if op_rows.empty or op_rows["NPUDump"].iloc[0] != label["op"]:
        return problems + [f"no rows for labelled op {label['op']} at Index {index}"]
    before = frame[(frame["Index"] < index) & ~frame["is_output"]]
    if kind == "fp16_overflow":
        if overflow[frame["Index"] < index].any():
            problems.append("OverFlow YES before the labelled op")
        if not overflow[(frame["Index"] == index) & (frame["io"] == "output")].any():
            problems.append("labelled op's output is not flagged OverFlow YES")
        if out_ok:
            problems.append("network output still agrees despite the overflow")
        return problems
    if _low(before).any():
        first = before[_low(before)].iloc[0]
        problems.append(f"cosine < {COSINE_OK} before the labelled op, at {first.TensorIndex}")
    outputs = op_rows[op_rows["io"] == "output"]["CosineSimilarity"]
    inputs = op_rows[op_rows["io"] == "input"]["CosineSimilarity"]
    if not (outputs < COSINE_OK).all():
        problems.append(f"labelled op's output cosine {list(outputs)} is not < {COSINE_OK}")
    if (inputs < COSINE_OK).any():
        problems.append(f"labelled op's input cosine {list(inputs)} is already < {COSINE_OK}")
    if kind == "single_point_deviation" and not out_ok:
        problems.append(f"network output cosine {list(network_out)} should stay >= {COSINE_OK}")
    if kind in ("problem_node", "quant_per_tensor", "quant_symmetric") and out_ok:
        problems.append(f"network output cosine {list(network_out)} should drop below {COSINE_OK}")
    if kind in INPUT_KINDS and label["op"] != frame["NPUDump"].iloc[0]:
        problems.append("input faults must be located at the first (Data) op")
    return problems


def summarise(path: Path) -> dict:
    """Observed key numbers, stored in label.json under ``observed``."""
    frame = read_result(path)
    low = frame[_low(frame) & ~frame["is_output"]]
    overflow = frame[frame["OverFlow"] == "YES"]
    network_out = frame[frame["is_output"]]["CosineSimilarity"]
    return {
        "rows": int(len(frame)),
        "first_low_cosine_index": int(low["Index"].iloc[0]) if len(low) else None,
        "first_overflow_index": int(overflow["Index"].iloc[0]) if len(overflow) else None,
        "network_output_cosine": [None if np.isnan(v) else round(float(v), 6) for v in network_out],
    }
