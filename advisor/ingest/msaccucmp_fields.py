"""msaccucmp cells that hold several values: TensorIndex (``<op name>:<input|output>:<n>``) and
StandardDeviation (``(mean;std),(mean;std)``, NPU side first).

Both are split with Arrow's compute kernels (substring splits, RE2 regexes and casts in C++, no
Python per row) on
the Arrow strings the reader holds. pandas' regex ``str`` methods are the reference: they stay
for StandardDeviation as the exact path, which locates a malformed value for the error message.
pyarrow is imported when a column is split, not when the package is (``advisor --help`` does not
pay for it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.errors import InputFormatError
from advisor.ingest.csv_cells import shown
from advisor.ingest.msaccucmp_layout import FLOAT_NA
from advisor.ingest.table import STAT_COLUMNS

MAX_SLOT_DIGITS = 18  # int64 holds any 18-digit number
TENSOR_ID_PATTERN = r":(?P<io>input|output):(?P<slot>[0-9]{1," + str(MAX_SLOT_DIGITS) + "})$"
STD_PATTERN = r"^\s*\(([^;()]*);([^;()]*)\)\s*,\s*\(([^;()]*);([^;()]*)\)\s*$"
_STD_STRICT = r"^\((?P<a>[^;()\s]*);(?P<b>[^;()\s]*)\),\((?P<c>[^;()\s]*);(?P<d>[^;()\s]*)\)$"
_STD_NAMED = r"^\s*\((?P<a>[^;()]*);(?P<b>[^;()]*)\)\s*,\s*\((?P<c>[^;()]*);(?P<d>[^;()]*)\)\s*$"


def arrow_strings(values: Any) -> Any:
    """A pandas Series / array of text, or an Arrow array, as an Arrow (chunked) array of strings;
    no copy when pandas already keeps the strings in Arrow."""
    import pyarrow as pa

    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values
    array = values.array if isinstance(values, pd.Series) else values
    if isinstance(array, pd.arrays.ArrowStringArray):
        return array.__arrow_array__()
    return pa.array(pd.Series(array, dtype=object).where(pd.notna(array), None), type=pa.large_string())


def string_array(arrow: Any) -> pd.api.extensions.ExtensionArray:
    """Arrow strings as the canonical pandas ``string`` array (kept in Arrow where pandas can)."""
    import pyarrow as pa

    if pa.types.is_string(arrow.type):
        arrow = arrow.cast(pa.large_string())
    try:
        return pd.arrays.ArrowStringArray(arrow)
    except (ImportError, TypeError, ValueError):  # a pandas whose "string" dtype is not Arrow-backed
        return pd.array(arrow.to_pandas(), dtype="string")


def split_tensor_ids(ids: Any) -> tuple[pd.api.extensions.ExtensionArray, pd.api.extensions.ExtensionArray]:
    """(io, slot) from TensorIndex, read from the right (op names may hold ``:``): ``input`` or
    ``output`` and the slot number; NA where an id does not end that way."""
    io, values, missing = split_tensor_ids_arrow(arrow_strings(ids))
    return string_array(io), pd.arrays.IntegerArray(values, missing)


def split_tensor_ids_arrow(ids: Any) -> tuple[Any, np.ndarray, np.ndarray]:
    """As split_tensor_ids, kept in Arrow and numpy: io (Arrow strings), slot (int64, 0 where
    NA) and where the slot is NA."""
    import pyarrow.compute as pc

    parts = pc.extract_regex(ids, TENSOR_ID_PATTERN)
    slot = pc.struct_field(parts, [1]).cast("int64")
    if not slot.null_count:  # the usual case: every id ends in :input:n or :output:n
        return pc.struct_field(parts, [0]), slot.to_numpy(), np.zeros(len(slot), dtype=bool)
    missing = np.asarray(pc.is_null(slot).to_numpy(zero_copy_only=False), dtype=bool)
    values = np.asarray(pc.fill_null(slot, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return pc.struct_field(parts, [0]), values, missing


def split_tensor_ids_regex(ids: pd.Series) -> tuple[pd.api.extensions.ExtensionArray,
                                                    pd.api.extensions.ExtensionArray]:
    """The reference split with pandas' regex (Python's ``re``), for the tests."""
    parts = ids.astype("string").str.extract(r":(input|output):([0-9]{1,18})$")
    return parts[0].array, pd.to_numeric(parts[1]).astype("Int64").array


def split_standard_deviation(values: Any, lines: np.ndarray, path: Path, header: str) -> dict[str, np.ndarray]:
    """npu_mean, npu_std, golden_mean, golden_std as float64 (NaN where the cell is NA)."""
    fast = _split_std_fast(values)
    if fast is not None:
        return fast
    return _split_std_exact(pd.Series(string_array(arrow_strings(values))), lines, path, header)


def _split_std_fast(values: Any) -> dict[str, np.ndarray] | None:
    """Arrow's substring splits, or its regex, and casts; None when any cell is not four plain
    numbers (a ``*`` or empty part, a malformed cell): the exact path decides those. msaccucmp
    writes no spaces, so the cells are first split as it writes them (_split_std_plain); only
    when some cell is not written that way are they matched by the regexes, strict (no
    trimming) and then with spaces."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = arrow_strings(values)
    plain = _split_std_plain(text)
    if plain is not None:
        return plain
    parts = pc.extract_regex(text, _STD_STRICT)
    trim = parts.null_count != text.null_count
    if trim:
        parts = pc.extract_regex(text, _STD_NAMED)
        if parts.null_count != text.null_count:  # a present cell that is not (a;b),(c;d)
            return None
    out = {}
    try:
        for i, name in enumerate(STAT_COLUMNS):
            part = pc.struct_field(parts, [i])
            number = (pc.utf8_trim_whitespace(part) if trim else part).cast(pa.float64())
            out[name] = np.asarray(number.to_numpy(zero_copy_only=False), dtype=np.float64)  # NA -> NaN
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return out


def _split_std_plain(text: Any) -> dict[str, np.ndarray] | None:
    """The cells exactly as _STD_STRICT takes them, split without a regex (a third of the CPU of
    RE2's four captures on a million cells): every present cell is ``(`` + two halves joined by
    ``),(`` + ``)``, each half two parts joined by ``;``, each part a number Arrow's cast takes
    (which refuses spaces, brackets and empty text). None when any cell is otherwise."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = text.drop_null() if text.null_count else text
    if not len(present):
        return None
    if not (pc.all(pc.starts_with(present, "(")).as_py() and pc.all(pc.ends_with(present, ")")).as_py()):
        return None
    pieces = pc.utf8_slice_codeunits(present, 1, -1)
    for separator in ("),(", ";"):  # halves, then their parts: each cell's exactly two
        pieces = pc.split_pattern(pieces, separator)
        if pc.min_max(pc.list_value_length(pieces)).as_py() != {"min": 2, "max": 2}:
            return None
        pieces = pc.list_flatten(pieces)
    try:
        numbers = pieces.cast(pa.float64()).to_numpy(zero_copy_only=False).reshape(-1, len(STAT_COLUMNS))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not text.null_count:
        return {name: numbers[:, i] for i, name in enumerate(STAT_COLUMNS)}
    where = np.asarray(pc.is_valid(text).to_numpy(zero_copy_only=False), dtype=bool)
    out = {}
    for i, name in enumerate(STAT_COLUMNS):
        out[name] = np.full(len(text), np.nan)
        out[name][where] = numbers[:, i]
    return out


def _split_std_exact(values: pd.Series, lines: np.ndarray, path: Path | str,
                     header: str) -> dict[str, np.ndarray]:
    text = values.astype("string")
    parts = text.str.extract(STD_PATTERN)
    numbers = {name: pd.to_numeric(parts[i].str.strip().replace(dict.fromkeys(FLOAT_NA, pd.NA)),
                                   errors="coerce")
               for i, name in enumerate(STAT_COLUMNS)}
    unparsed = parts[0].isna() & text.notna()
    for i, name in enumerate(STAT_COLUMNS):
        cell = parts[i].str.strip()
        unparsed |= numbers[name].isna() & cell.notna() & ~cell.isin(FLOAT_NA)
    bad = np.flatnonzero(unparsed.to_numpy(dtype=bool, na_value=False))
    if bad.size:
        raise InputFormatError(
            f"bad value {shown(text.iat[bad[0]])} in column {header}: expected (mean;std),(mean;std)",
            path=Path(path), line=int(lines[bad[0]]))
    return {name: numbers[name].to_numpy(dtype="float64", na_value=np.nan) for name in STAT_COLUMNS}


def integers(values: np.ndarray, header: str, path: Path, lines: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """An integer column read as float64 (NaN: no value) -> Int64; a fraction or infinity is an error."""
    bad = np.flatnonzero(~np.isnan(values) & (~np.isfinite(values) | (values != np.round(values))))
    if bad.size:
        raise InputFormatError(f"bad integer {float(values[bad[0]])!r} in column {header}",
                               path=path, line=int(lines[bad[0]]))
    missing = np.isnan(values)
    return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)
