"""Columns a reader does not know: kept, typed, never a reason to refuse a file.

Tools append their own columns (msquickcmp's ``IsNpuOps, IsOutputNode, IsPrecisionError``), users
add theirs, spreadsheets add empty ones. Each unknown column becomes ``user_<snake_case name>`` in
the ComparisonTable, typed by what it holds:

- every value a number (``inf`` and the usual "no value" words allowed): float64, and the column is
  a user metric (``ComparisonTable.extra_metrics``);
- every value a yes/no word (``YES``/``NO``, ``True``/``False``, any case): boolean;
- anything else, or nothing at all: text.

``ComparisonTable.extra_columns`` maps each kept column to its header as written. The yes/no
reading is shared with the known flag columns (``OverFlow``, msquickcmp's three).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from advisor.ingest.csv_cells import NO_VALUE, numbers_and_words, text_column

TRUE_WORDS = frozenset({"yes", "true"})
FALSE_WORDS = frozenset({"no", "false"})

# msit / msquickcmp append these to every result_*.csv (YES/NO): canonical flag columns.
MSQUICKCMP_FLAGS: dict[str, str] = {
    "IsNpuOps": "tool_npu_op",
    "IsOutputNode": "tool_output_node",
    "IsPrecisionError": "tool_precision_error",
}


def user_column_name(header: str) -> str:
    """``MyMetric`` / ``my metric`` / ``My-Metric`` -> ``user_my_metric``."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", header)
    text = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    return f"user_{text or 'column'}"


def yes_no_flags(values: pd.Series) -> pd.api.extensions.ExtensionArray:
    """``YES``/``TRUE`` -> True, ``NO``/``FALSE`` -> False (any case, spaces ignored), else NA;
    worked out once per distinct value."""
    codes, uniques = pd.factorize(values.to_numpy(dtype=object, na_value=None))
    words = [str(u).strip().lower() for u in uniques]
    known = np.array([w in TRUE_WORDS or w in FALSE_WORDS for w in words] + [False])
    truth = np.array([w in TRUE_WORDS for w in words] + [False])
    return pd.arrays.BooleanArray(truth[codes], ~known[codes])  # code -1 (NA) takes the last slot


def typed_extra(cells: pd.Series) -> tuple[np.ndarray | pd.api.extensions.ExtensionArray, bool]:
    """An unknown column's values, typed (see the module doc); and whether it is a metric."""
    values, words = numbers_and_words(cells)  # the C parser's fast path for the usual, numeric case
    if words is None and not np.isnan(values).all():
        return values, True
    text = text_column(cells, NO_VALUE)
    present = text.notna().to_numpy(dtype=bool)
    if not present.any():  # nothing in it: no claim about what it holds
        return text.array, False
    if words is None:  # numbers, NaN and "no value" words only
        return values, True
    flags = yes_no_flags(text)
    if not (present & flags.isna()).any():
        return flags, False
    return text.array, False
