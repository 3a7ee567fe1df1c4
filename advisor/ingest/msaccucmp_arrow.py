"""The fast read of an msaccucmp result: pyarrow's CSV reader, batch by batch, text kept in Arrow.

pandas' C parser turns every text cell into a Python object (then the reader copied them into
pandas strings); pyarrow's parser writes numbers straight into float64 buffers and text into Arrow
strings, which the canonical table keeps as they are (pandas' ``string`` dtype is Arrow-backed).
Only the columns the layout gives a role are converted; a column skipped by the layout is parsed
but never converted. StandardDeviation is split batch by batch, so its text is never held for the
whole file.

This path takes the usual file only, and gives way (returns None) to the exact read
(msaccucmp_exact.py) whenever it cannot vouch for the result: a row whose physical line is not
``row + 2`` (blank lines, quoted newlines), any cell pyarrow refuses (a ``*`` in a number column, a
row of the wrong length, bytes that are not UTF-8), a StandardDeviation cell that is not four plain
numbers, a row with every identity field empty. The exact read then gives the same table, or the
one-line error naming the file and line. pyarrow is imported here, when a file is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.dtypes import normalise_dtype
from advisor.ingest.csv_cells import physical_line_count
from advisor.ingest.extra_columns import FALSE_WORDS, TRUE_WORDS
from advisor.ingest.msaccucmp_fields import _split_std_fast, integers, split_tensor_ids, string_array
from advisor.ingest.msaccucmp_layout import FLAG_ROLES, INTEGER_ROLES, STD_ROLE, ColumnArray, Layout
from advisor.ingest.table import METRIC_COLUMNS, STAT_COLUMNS, na_array, na_columns

# Bytes of the file per batch: large enough for pyarrow's threads, small enough that one batch's
# StandardDeviation text is a few MB.
BLOCK_BYTES = 16 << 20
ENCODINGS = ("utf-8", "utf-8-sig")
# No-value words every text and number column shares; ``*`` is NA too except in the two op-name
# columns, where it marks a missing side (handled below).
COMMON_NA = ["NaN", "nan", ""]
SIDE_ROLES = ("op_name", "golden_ops")


class _GiveWay(Exception):
    """The exact read must decide this file."""


def read_arrow(path: Path, encoding: str, layout: Layout) -> pd.DataFrame | None:
    """The canonical columns (plus the user columns), or None when the exact read must decide."""
    if encoding not in ENCODINGS:
        return None
    import pyarrow as pa

    try:
        floats, texts, rows = _read_batches(path, layout)
        if not rows or physical_line_count(path) != rows + 1:  # blank lines, quoted newlines
            return None
        return _canonical(floats, texts, rows, layout, path)
    except (pa.ArrowException, _GiveWay):
        return None


def _read_batches(path: Path, layout: Layout) -> tuple[dict[str, list[np.ndarray]], dict[str, list[Any]], int]:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    float_roles = set(layout.float_roles)
    wanted = [role for role in layout.names if not role.startswith("_skip")]
    reader = pcsv.open_csv(
        path,
        read_options=pcsv.ReadOptions(column_names=layout.names, skip_rows=1, block_size=BLOCK_BYTES),
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(
            column_types={r: pa.float64() if r in float_roles else pa.large_string() for r in wanted},
            include_columns=wanted, null_values=COMMON_NA, strings_can_be_null=True))
    floats: dict[str, list[np.ndarray]] = {}
    texts: dict[str, list[Any]] = {}
    rows = 0
    pool = pa.default_memory_pool()
    for batch in reader:
        rows += batch.num_rows
        for role in wanted:
            column = batch.column(role)
            if role == STD_ROLE:
                stats = _split_std_fast(column)
                if stats is None:
                    raise _GiveWay
                for name, values in stats.items():
                    floats.setdefault(name, []).append(values)
            elif role in float_roles:  # nulls become NaN
                floats.setdefault(role, []).append(column.to_numpy(zero_copy_only=False))
            else:
                texts.setdefault(role, []).append(column)
        del batch, column
        pool.release_unused()  # the batch's parse buffers: else the allocator keeps them all, not one
    return floats, texts, rows


def _canonical(floats: dict[str, list[np.ndarray]], texts: dict[str, list[Any]], rows: int, layout: Layout,
               path: Path) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = np.arange(2, rows + 2, dtype=np.int64)
    number = {role: np.concatenate(floats.pop(role)) for role in list(floats)}
    text = {role: pa.chunked_array(texts.pop(role), type=pa.large_string()) for role in list(texts)}
    for role in text:
        if role not in SIDE_ROLES:
            text[role] = _star_is_na(text[role])
    if _blank_rows(number, text, rows):
        raise _GiveWay  # the exact read drops such rows and keeps the others' lines
    columns: dict[str, ColumnArray] = {}
    for role in INTEGER_ROLES:
        columns[role] = (integers(number.pop(role), layout.headers[role], path, lines) if role in number
                         else na_array("Int64", rows))
    no_text = pa.nulls(rows, type=pa.large_string())
    op_name, golden = text.pop("op_name", no_text), text.pop("golden_ops", no_text)
    golden_only = _equals(op_name, "*")
    npu_only = _equals(golden, "*")
    op_type = text.pop("op_type", no_text)
    is_output = pc.and_(pc.is_null(op_type), pc.fill_null(pc.equal(op_name, "Node_Output"), False))
    if "tensor_id" in text:
        columns["io"], columns["slot"] = split_tensor_ids(text["tensor_id"])
    columns.update(
        op_type=string_array(op_type),
        op_name=string_array(_mask(op_name, golden_only)),
        golden_ops=string_array(_mask(golden, npu_only)),
        **{role: string_array(_dtype_names(text.pop(role))) for role in ("npu_dtype", "golden_dtype") if role in text},
        **{role: _yes_no(text.pop(role)) for role in FLAG_ROLES if role in text},
        is_network_output=pd.arrays.BooleanArray(_bools(is_output), np.zeros(rows, dtype=bool)),
        npu_only=pd.arrays.BooleanArray(npu_only, np.zeros(rows, dtype=bool)),
        golden_only=pd.arrays.BooleanArray(golden_only, np.zeros(rows, dtype=bool)),
    )
    for role in ("tensor_id", "npu_address", "golden_address", "shape", "compare_fail_reason", *layout.user_roles):
        if role in text:
            columns[role] = string_array(text.pop(role))
    for metric in (*METRIC_COLUMNS, *STAT_COLUMNS):
        if metric in number:
            columns[metric] = number.pop(metric)
    columns["source_line"] = lines
    pa.default_memory_pool().release_unused()  # what the masks and splits replaced
    absent = na_columns([name for name in layout.columns if name not in columns], rows)
    return pd.DataFrame({name: columns[name] if name in columns else absent[name] for name in layout.columns},
                        copy=False)


def _bools(values: Any) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def _equals(values: Any, word: str) -> np.ndarray:
    import pyarrow.compute as pc

    return _bools(pc.fill_null(pc.equal(values, word), False))


def _mask(values: Any, where: np.ndarray) -> Any:
    """``values`` with NA where ``where``; no copy when nothing is masked."""
    import pyarrow.compute as pc

    return pc.if_else(where, None, values) if where.any() else values


def _star_is_na(values: Any) -> Any:
    return _mask(values, _equals(values, "*"))


def _blank_rows(number: dict[str, np.ndarray], text: dict[str, Any], rows: int) -> bool:
    """Any row with no Index, op names or TensorIndex (a line of bare commas)."""
    import pyarrow.compute as pc

    blank = np.isnan(number["op_index"]) if "op_index" in number else np.ones(rows, dtype=bool)
    if not blank.any():
        return False
    for role in ("op_name", "golden_ops", "tensor_id"):
        if role in text:
            blank &= _bools(pc.is_null(text[role]))
    return bool(blank.any())


def _distinct_map(values: Any, function: Any, result_type: Any) -> Any:
    """``function`` applied once per distinct value (a column of dtypes or YES/NO holds a handful),
    then spread to every row by Arrow; NA stays NA."""
    import pyarrow as pa
    import pyarrow.compute as pc

    distinct = pc.unique(values).drop_null()
    mapped = pa.array([function(v) for v in distinct.to_pylist()], type=result_type)
    return pc.take(mapped, pc.index_in(values, value_set=distinct))


def _dtype_names(values: Any) -> Any:
    import pyarrow as pa

    return _distinct_map(values, normalise_dtype, pa.large_string())


def _yes_no(values: Any) -> pd.api.extensions.ExtensionArray:
    """As extra_columns.yes_no_flags: YES/TRUE -> True, NO/FALSE -> False, else NA."""
    import pyarrow as pa

    def word(text: str) -> bool | None:
        text = text.strip().lower()
        return True if text in TRUE_WORDS else False if text in FALSE_WORDS else None

    flags = _distinct_map(values, word, pa.bool_())
    known = ~_bools(flags.is_null())
    return pd.arrays.BooleanArray(_bools(flags.fill_null(False)) & known, ~known)
