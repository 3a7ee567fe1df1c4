"""The canonical ComparisonTable: what every reader produces and every later stage consumes.

One row per compared tensor, in the order of the source file. Columns (all present in every table;
missing information is NA):

identity
    op_index        Int64   the target (NPU, fused) op id: all tensors of one op share it (msaccucmp ``Index``;
                            msprobe: the API call's position in execution order, from 0)
    op_sequence     Int64   ``OpSequence`` when the compare was restricted to a selection
    op_type         category target op type (``Conv2D``, ``TransData``...; msprobe: the API, ``Functional.linear``,
                            or ``Module.<class>`` / ``Cell.<class>`` for a module)
    op_name         category target op name (msaccucmp ``NPUDump``; msprobe: the API call,
                            ``Functional.linear.0.forward``, old ``Functional_linear_0_forward``)
    golden_ops      category golden op names the target op was fused from, comma-joined (msprobe: the bench call)
    tensor_id       string  the tensor's own name as in the source (``<op>:<input|output>:<n>``,
                            ``Functional.linear.0.forward.input.0``)
    io              category ``input`` or ``output`` (msprobe module tensors also ``parameter``,
                            ``parameter_grad``)
    slot            Int64   tensor slot n (NA for a keyword argument or a named parameter: see tensor_id)
    direction       string  ``forward`` or ``backward`` (msprobe); NA for msaccucmp (inference graphs)
    npu_dtype       category normalised dtype of the target tensor: float32, float16, bfloat16, int8, ...
    golden_dtype    category normalised dtype of the golden tensor
    npu_address     string  device address (when dumped from device memory)
    golden_address  string
    shape           category target tensor shape as printed, e.g. ``[1,3,224,224]``
    golden_shape    category golden tensor shape as printed, when the source gives it apart (msprobe)
flags
    overflow        boolean ``OverFlow`` (YES -> True, NO -> False, else NA)
    is_network_output boolean  the ``Node_Output`` row (the final network output)
    npu_only        boolean  the op exists only on the target (GroundTruth ``*``, msprobe Bench Name ``N/A``)
    golden_only     boolean  the op exists only on the golden side (NPUDump ``*``)
    shape_mismatch  boolean  both sides exist but their shapes differ (msprobe ``shape unmatched``, or the two
                            printed shapes differ); NA when the source gives one shape only (msaccucmp)
    md5_match       boolean  MD5 mode: the two tensors' MD5 digests are equal
    tool_npu_op     boolean  msquickcmp's own marks (``IsNpuOps``, ``IsOutputNode``, ``IsPrecisionError``, YES/NO,
    tool_output_node boolean  appended to every msit result_*.csv): the op exists only on the NPU, the tensor is
    tool_precision_error boolean  a network output, the row fails msquickcmp's thresholds. NA when absent.
    npu_nonfinite   boolean  the tensor holds inf or NaN, as its printed statistics say (msprobe ``inf``,
    golden_nonfinite boolean ``-inf``, ``Nan`` in the max/min cells, dump.json ``Infinity``/``NaN``): a
                            value, unlike ``N/A`` (no value); NA when the source does not say (msaccucmp:
                            a non-finite ``StandardDeviation`` shows it instead)
arguments (msprobe)
    npu_arg         string  the value of a non-tensor argument (bool, str) as msprobe prints it in its statistic
    golden_arg      string  columns (``True``, ``False``, ``mean``): BatchNorm's ``training``, a loss's
                            ``reduction``. Such a row has no statistics and no metrics (all NaN); numeric
                            arguments (``eps``) are statistics as printed. NA for tensors.
metrics (float64; NaN when absent or not computable; inf kept)
    cosine, max_abs_error, accumulated_relative_error, relative_euclidean_distance, kl_divergence,
    mean_absolute_error, root_mean_square_error, max_relative_error, mean_relative_error
    euclidean_distance  sqrt(sum (x-y)^2), absolute (msprobe ``EucDist``)
    err_ratio_1e3, err_ratio_5e3  share of elements whose relative error is below 0.001 / 0.005
                            (msprobe ``One Thousandth Err Ratio`` / ``Five Thousandths Err Ratio``)
statistics (float64, per tensor; target side ``npu_``, golden side ``golden_``)
    npu_mean, npu_std, golden_mean, golden_std   (msaccucmp ``StandardDeviation`` ``(mean;std),(mean;std)``)
    npu_max, npu_min, npu_norm, golden_max, golden_min, golden_norm   (msprobe; norm = L2 norm)
statistic differences (float64, |npu - golden| / |golden|, a fraction: 0.05 is 5 %; NaN when golden is 0)
    max_rel_diff, min_rel_diff, mean_rel_diff, norm_rel_diff   (msprobe summary mode ``MaxRelativeErr``...
                            ``NormRelativeErr``, or computed from the statistics)
provenance
    verdict         category the tool's own judgement as printed: msprobe ``Accuracy Reached or Not``
                            (``Yes``/``No``/``Unmatched``/``None``) or ``Result`` (summary ``Warning``,
                            MD5 ``Pass``/``Different``); NA when blank
    compare_fail_reason category (msprobe ``Err_message``)
    source_line     int64   1-based line of the row in the source file (the header is line 1)

``category`` columns hold texts that repeat from row to row (a million rows: 2 io values, a handful
of dtypes, a few dozen shapes and op types; each op's name and golden ops on all of its tensors'
rows): each is a pandas Categorical, an integer code per row into its distinct texts (categories of
dtype ``string``, in order), NA as code -1. ``ComparisonTable`` encodes them whatever the reader
produced (``encode_text_columns``); the values read are the same texts. ``fillna`` with a text
needs ``astype("string")`` first, and ``fillna`` from another column does not apply: ``first_present``
merges two of them. ``text_mask`` tests a coded column's distinct texts (``isin``, ``==``, ``str``
methods) without the hash table of Python strings pandas builds for ``isin`` or ``==`` on a
category, and ``row_at`` reads one row of a frame with coded columns.

Columns a reader does not know are kept, named ``user_<snake_case name>`` and typed by what they hold
(advisor/ingest/extra_columns.py): all numbers -> float64, listed in ``ComparisonTable.extra_metrics``
(user-defined metrics); all yes/no words (YES/NO, True/False) -> boolean; else string.
``ComparisonTable.extra_columns`` maps each to its header as written. ``ComparisonTable.warnings``
says what a reader derived or assumed (e.g. a trimmed msaccucmp table without TensorIndex); the run
report shows them. ``present_metrics`` lists
the metric and statistic columns the source filled, ``derived_metrics`` those of them computed exactly
from other values of the source (e.g. msprobe's relative Euclidean distance = EucDist / Bench l2norm).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

IDENTITY_COLUMNS: dict[str, str] = {
    "op_index": "Int64",
    "op_sequence": "Int64",
    "op_type": "category",
    "op_name": "category",
    "golden_ops": "category",
    "tensor_id": "string",
    "io": "category",
    "slot": "Int64",
    "direction": "string",
    "npu_dtype": "category",
    "golden_dtype": "category",
    "npu_address": "string",
    "golden_address": "string",
    "shape": "category",
    "golden_shape": "category",
}
FLAG_COLUMNS: dict[str, str] = {
    "overflow": "boolean",
    "is_network_output": "boolean",
    "npu_only": "boolean",
    "golden_only": "boolean",
    "shape_mismatch": "boolean",
    "md5_match": "boolean",
    "tool_npu_op": "boolean",
    "tool_output_node": "boolean",
    "tool_precision_error": "boolean",
    "npu_nonfinite": "boolean",
    "golden_nonfinite": "boolean",
}
ARGUMENT_COLUMNS: dict[str, str] = {"npu_arg": "string", "golden_arg": "string"}
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
# Element-wise metrics msprobe computes and msaccucmp does not.
MSPROBE_METRIC_COLUMNS: tuple[str, ...] = ("euclidean_distance", "err_ratio_1e3", "err_ratio_5e3")
STAT_COLUMNS: tuple[str, ...] = ("npu_mean", "npu_std", "golden_mean", "golden_std")
EXTREMA_COLUMNS: tuple[str, ...] = ("npu_max", "npu_min", "npu_norm", "golden_max", "golden_min", "golden_norm")
STAT_DIFF_COLUMNS: tuple[str, ...] = ("max_rel_diff", "min_rel_diff", "mean_rel_diff", "norm_rel_diff")
PROVENANCE_COLUMNS: dict[str, str] = {"verdict": "category", "compare_fail_reason": "category",
                                      "source_line": "int64"}
FLOAT_COLUMNS: tuple[str, ...] = (*METRIC_COLUMNS, *MSPROBE_METRIC_COLUMNS, *STAT_COLUMNS, *EXTREMA_COLUMNS,
                                  *STAT_DIFF_COLUMNS)

COLUMNS: dict[str, str] = {
    **IDENTITY_COLUMNS,
    **FLAG_COLUMNS,
    **{name: "float64" for name in FLOAT_COLUMNS},
    **ARGUMENT_COLUMNS,
    **PROVENANCE_COLUMNS,
}
# Text columns of few distinct values, held as codes (see above).
CODED_COLUMNS: tuple[str, ...] = tuple(name for name, dtype in COLUMNS.items() if dtype == "category")


@dataclass
class ComparisonTable:
    """A comparison result in canonical form, with where it came from."""

    frame: pd.DataFrame
    source: Path
    format: str                     # reader name, e.g. "msaccucmp", "msaccucmp-legacy"
    extra_metrics: list[str] = field(default_factory=list)
    present_metrics: list[str] = field(default_factory=list)  # metrics the source really had
    derived_metrics: list[str] = field(default_factory=list)  # of those, computed from other values
    extra_columns: dict[str, str] = field(default_factory=dict)  # kept unknown column -> header as written
    warnings: list[str] = field(default_factory=list)         # what the reader derived or assumed

    def __post_init__(self) -> None:
        encode_text_columns(self.frame)

    def __len__(self) -> int:
        return len(self.frame)


def na_array(dtype: str, rows: int) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """``rows`` NA values of a canonical dtype (0 for ``int64``, which has no NA)."""
    if dtype == "float64":
        return np.full(rows, np.nan)
    if dtype == "int64":
        return np.zeros(rows, dtype=np.int64)
    if dtype == "boolean":
        return pd.arrays.BooleanArray(np.zeros(rows, dtype=bool), np.ones(rows, dtype=bool))
    if dtype == "Int64":
        return pd.arrays.IntegerArray(np.zeros(rows, dtype=np.int64), np.ones(rows, dtype=bool))
    if dtype == "category":
        return pd.Categorical.from_codes(np.full(rows, -1, dtype=np.int8), categories=pd.Index([], dtype="string"))
    if dtype == "string":
        try:
            import pyarrow as pa

            return pd.arrays.ArrowStringArray(pa.nulls(rows, type=pa.large_string()))
        except (ImportError, TypeError, ValueError):  # pandas keeps its strings without Arrow
            pass
    # A scalar broadcast by Series is ~7x faster than pd.array over an object array of NA.
    return pd.Series(pd.NA, index=range(rows), dtype=dtype).array


def coded(values: pd.Series | pd.api.extensions.ExtensionArray | np.ndarray) -> pd.Categorical:
    """Text values as a ``category`` column: codes into the distinct texts (a ``string`` Index)."""
    series = pd.Series(values, copy=False)
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = series.cat.categories
        if categories.dtype == "string":  # the texts in order, as ``astype("category")`` has them
            return series.array if categories.is_monotonic_increasing else \
                series.cat.reorder_categories(categories.sort_values()).array
        series = series.astype(object)
    return series.astype("string").astype("category").array


def coded_from(codes: np.ndarray, texts: Sequence[str] | Any) -> pd.Categorical:
    """A ``category`` column from ``codes`` into ``texts`` (distinct; a list or an Arrow string array;
    code -1: NA), the texts in order as ``coded`` keeps them: a column made without a Python string
    per row, and its texts sorted by Arrow (code-point order, as Python sorts ``str``), not as Python
    objects (the calls of a million-row msprobe comparison are 275k texts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arrow = texts.cast(pa.large_string()) if isinstance(texts, pa.Array) else \
        pa.array(list(texts), type=pa.large_string())
    order = pc.sort_indices(arrow).to_numpy()
    rank = np.empty(len(arrow) + 1, dtype=np.int8 if len(arrow) < 127 else np.int32)
    rank[order] = np.arange(len(arrow))
    rank[-1] = -1
    categories = pd.Index(pd.arrays.ArrowStringArray(arrow.take(order)), dtype="string")
    return pd.Categorical.from_codes(rank[np.asarray(codes, dtype=np.int64)], dtype=pd.CategoricalDtype(categories))


def encode_text_columns(frame: pd.DataFrame) -> None:
    """Hold the CODED_COLUMNS of ``frame`` as codes (in place); a column already coded is kept."""
    for name in CODED_COLUMNS:
        if name in frame.columns and not (isinstance(frame[name].dtype, pd.CategoricalDtype)
                                          and frame[name].cat.categories.dtype == "string"):
            frame[name] = coded(frame[name])


def first_present(first: pd.Series, second: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(first.fillna(second))`` of two ``category`` columns, from their codes: per row a
    code (-1 where both are NA) into the distinct texts, numbered in the order they first appear."""
    texts = first.cat.categories.append(second.cat.categories).unique()
    # a trailing -1 so that code -1 (NA) maps to -1
    first_map = np.append(texts.get_indexer(first.cat.categories), -1)
    second_map = np.append(texts.get_indexer(second.cat.categories), -1)
    merged = first_map[first.cat.codes.to_numpy()]
    merged = np.where(merged >= 0, merged, second_map[second.cat.codes.to_numpy()])
    # The codes in the order they first appear (pd.unique hashes small integers: a fifth of the
    # time of factorize, which also codes every row), then each renumbered by that order.
    order = pd.unique(merged)
    known = order[order >= 0]
    renumber = np.full(len(texts) + 1, -1, dtype=np.int64)   # per merged code (-1: the last slot)
    renumber[known] = np.arange(len(known))
    return renumber[merged], pd.Index(texts.take(known), dtype="string")


def equal_texts(first: pd.Series, second: pd.Series) -> np.ndarray:
    """Per row, whether two ``category`` columns hold the same text (False where either is NA), from
    their codes: no Python string per row."""
    texts = first.cat.categories.append(second.cat.categories).unique()
    left = np.append(texts.get_indexer(first.cat.categories), -1)[first.cat.codes.to_numpy()]
    right = np.append(texts.get_indexer(second.cat.categories), -2)[second.cat.codes.to_numpy()]
    return (left == right) & (left >= 0)


def text_mask(column: pd.Series, test: Callable[[pd.Series], pd.Series]) -> np.ndarray:
    """``test(column)`` (a vectorised test of text: ``isin``, ``==``, ``str.contains``) as a bool
    array, False where NA. A coded column's distinct texts are tested once each and the answers
    spread by its codes: pandas' own ``isin`` or ``==`` on a category first builds a hash table of
    its texts as Python strings (~30 MiB for the op names of a million rows)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        hits = test(pd.Series(column.cat.categories, copy=False)).fillna(False).to_numpy(dtype=bool)
        return np.append(hits, False)[column.cat.codes.to_numpy()]   # code -1 (NA) takes the False
    return test(column).fillna(False).to_numpy(dtype=bool)


def lower_isin(values: pd.Series, names: Any) -> pd.Series:
    """``values.fillna("").str.lower().isin(names)`` (a text column against lower-case names), each
    distinct text of a coded column lower-cased once (``text_mask``)."""
    hits = text_mask(values, lambda texts: texts.str.lower().isin(names))
    if "" in names:   # NA counts as ""
        hits = hits | values.isna().to_numpy(dtype=bool)
    return pd.Series(hits, index=values.index, name=values.name)


def row_at(frame: pd.DataFrame, position: int) -> pd.Series:
    """Row ``position`` of ``frame`` as an object Series named by its label, read column by column:
    ``frame.iloc[position]`` first finds the columns' common dtype, which hashes every distinct text
    of each coded column (a second and ~50 MiB of Python strings on the ops of a million rows)."""
    return pd.Series({column: frame[column].iat[position] for column in frame.columns}, dtype=object,
                     name=frame.index[position])


def na_column(name: str, rows: int) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """Canonical column ``name`` with every value NA."""
    return na_array(COLUMNS[name], rows)


def na_columns(names: list[str], rows: int) -> dict[str, pd.Series]:
    """Canonical columns ``names``, all NA, for ``pd.DataFrame(..., copy=False)``. Columns of one
    dtype are one Series of NA, shared: pandas' copy-on-write gives a column its own copy the first
    time it is written to, so a million-row table from a format that fills a third of the schema
    does not hold a buffer per absent column."""
    shared: dict[str, pd.Series] = {}
    for name in names:
        if COLUMNS[name] not in shared:   # made once per dtype, not once per column and dropped
            shared[COLUMNS[name]] = pd.Series(na_column(name, rows), copy=False)
    return {name: shared[COLUMNS[name]] for name in names}


def empty_frame(rows: int) -> pd.DataFrame:
    """A frame with every canonical column, all NA, of the canonical dtypes."""
    return pd.DataFrame({name: na_column(name, rows) for name in COLUMNS}, copy=False)


def check_schema(frame: pd.DataFrame) -> None:
    """Raise AssertionError if a reader broke the contract (used by readers' tests)."""
    missing = [name for name in COLUMNS if name not in frame.columns]
    assert not missing, f"missing canonical columns: {missing}"
    wrong = {name: str(frame[name].dtype) for name, dtype in COLUMNS.items()
             if str(frame[name].dtype) != dtype}
    assert not wrong, f"columns with wrong dtype: {wrong}"
