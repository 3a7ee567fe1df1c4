"""The canonical ComparisonTable: what every reader produces and every later stage consumes.

One row per compared tensor, in the order of the source file. Columns (all present in every table;
missing information is NA):

identity
    op_index        Int64   the target (NPU, fused) op id: all tensors of one op share it (msaccucmp ``Index``)
    op_sequence     Int64   ``OpSequence`` when the compare was restricted to a selection
    op_type         string  target op type (``Conv2D``, ``TransData``...)
    op_name         string  target op name (msaccucmp ``NPUDump``)
    golden_ops      string  golden op names the target op was fused from, comma-joined
    tensor_id       string  ``<op name>:<input|output>:<n>`` as in the source
    io              string  ``input`` or ``output``
    slot            Int64   tensor slot n
    npu_dtype       string  normalised dtype of the target tensor: float32, float16, bfloat16, int8, ...
    golden_dtype    string  normalised dtype of the golden tensor
    npu_address     string  device address (when dumped from device memory)
    golden_address  string
    shape           string  as printed, e.g. ``[1,3,224,224]``
flags
    overflow        boolean ``OverFlow`` (YES -> True, NO -> False, else NA)
    is_network_output boolean  the ``Node_Output`` row (the final network output)
    npu_only        boolean  the op exists only on the target (GroundTruth ``*``)
    golden_only     boolean  the op exists only on the golden side (NPUDump ``*``)
metrics (float64; NaN when absent or not computable; inf kept)
    cosine, max_abs_error, accumulated_relative_error, relative_euclidean_distance, kl_divergence,
    mean_absolute_error, root_mean_square_error, max_relative_error, mean_relative_error
statistics (float64, from ``StandardDeviation`` ``(mean;std),(mean;std)``, target side first)
    npu_mean, npu_std, golden_mean, golden_std
provenance
    compare_fail_reason string
    source_line     int64   1-based line of the row in the source file (the header is line 1)

User-defined metric columns that follow the known ones are kept as float64 columns named
``user_<snake_case name>`` and listed in ``ComparisonTable.extra_metrics``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

IDENTITY_COLUMNS: dict[str, str] = {
    "op_index": "Int64",
    "op_sequence": "Int64",
    "op_type": "string",
    "op_name": "string",
    "golden_ops": "string",
    "tensor_id": "string",
    "io": "string",
    "slot": "Int64",
    "npu_dtype": "string",
    "golden_dtype": "string",
    "npu_address": "string",
    "golden_address": "string",
    "shape": "string",
}
FLAG_COLUMNS: dict[str, str] = {
    "overflow": "boolean",
    "is_network_output": "boolean",
    "npu_only": "boolean",
    "golden_only": "boolean",
}
METRIC_COLUMNS: tuple[str, ...] = (
    "cosine",
    "max_abs_error",
    "accumulated_relative_error",
    "relative_euclidean_distance",
    "kl_divergence",
    "mean_absolute_error",
    "root_mean_square_error",
    "max_relative_error",
    "mean_relative_error",
)
STAT_COLUMNS: tuple[str, ...] = ("npu_mean", "npu_std", "golden_mean", "golden_std")
PROVENANCE_COLUMNS: dict[str, str] = {"compare_fail_reason": "string", "source_line": "int64"}

COLUMNS: dict[str, str] = {
    **IDENTITY_COLUMNS,
    **FLAG_COLUMNS,
    **{name: "float64" for name in METRIC_COLUMNS},
    **{name: "float64" for name in STAT_COLUMNS},
    **PROVENANCE_COLUMNS,
}


@dataclass
class ComparisonTable:
    """A comparison result in canonical form, with where it came from."""

    frame: pd.DataFrame
    source: Path
    format: str                     # reader name, e.g. "msaccucmp", "msaccucmp-legacy"
    extra_metrics: list[str] = field(default_factory=list)
    present_metrics: list[str] = field(default_factory=list)  # metrics the source really had

    def __len__(self) -> int:
        return len(self.frame)


def empty_frame(rows: int) -> pd.DataFrame:
    """A frame with every canonical column, all NA, of the canonical dtypes."""
    data = {}
    for name, dtype in COLUMNS.items():
        if dtype == "float64":
            data[name] = pd.Series(float("nan"), index=range(rows), dtype="float64")
        elif dtype == "int64":
            data[name] = pd.Series(0, index=range(rows), dtype="int64")
        else:
            data[name] = pd.Series(pd.NA, index=range(rows), dtype=dtype)
    return pd.DataFrame(data)


def check_schema(frame: pd.DataFrame) -> None:
    """Raise AssertionError if a reader broke the contract (used by readers' tests)."""
    missing = [name for name in COLUMNS if name not in frame.columns]
    assert not missing, f"missing canonical columns: {missing}"
    wrong = {name: str(frame[name].dtype) for name, dtype in COLUMNS.items()
             if str(frame[name].dtype) != dtype}
    assert not wrong, f"columns with wrong dtype: {wrong}"
