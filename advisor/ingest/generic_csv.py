"""Reader for any comparison CSV, given a small YAML column mapping (format ``generic``).

For tools advisor does not know yet. The mapping names, for each canonical column
(advisor/ingest/table.py), the header that holds it::

    # mytool.yaml
    format: generic              # required, always "generic"
    columns:                     # required: canonical column -> header in the CSV
      op_name: Layer             # required
      tensor_id: Tensor          # optional identity columns: op_type, op_index, golden_ops, io, slot...
      cosine: cos_sim            # at least one metric or statistic column
      max_abs_error: max_err
    io_from: tensor_id           # optional: read io and slot from the end of this mapped column's names
                                 # (``conv1:output:0`` or ``conv1.forward.output.0``)
    dtype: float16               # optional: npu_dtype and golden_dtype of every row, when not mapped
    sep: ";"                     # optional: field delimiter (default ",")
    na_values: ["-", "n.a."]     # optional: more words meaning "no value" (NaN, N/A, None... always do)

Values are read by the canonical column's type: numbers (``inf`` kept, a bad one is an error naming
its column and line), integers, booleans (``yes/no/true/false/1/0``), text; dtype names are
normalised (``torch.float16`` -> ``float16``). Without ``op_index`` the ops are numbered in the
order the file lists them. The relative Euclidean distance and the statistic differences are
derived where the mapped columns allow it (``derived_metrics``).

Every mistake in the mapping is one line naming the mapping file and the field
(``mytool.yaml, field 'columns.cosin': unknown canonical column; did you mean cosine?``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.dtypes import normalise_dtypes
from advisor.errors import InputFormatError, UsageError
from advisor.ingest.csv_cells import NO_VALUE, numbers, read_text_cells, text_column
from advisor.ingest.derived_metrics import derive_metrics
from advisor.ingest.msaccucmp_fields import split_tensor_ids
from advisor.ingest.msprobe_names import split_tensor_names
from advisor.ingest.table import COLUMNS, FLOAT_COLUMNS, ComparisonTable, na_column
from advisor.yamlfile import load_yaml

FORMAT = "generic"
MAPPING_KEYS = ("format", "columns", "io_from", "dtype", "sep", "na_values")
MAPPABLE = tuple(name for name in COLUMNS if name != "source_line")
TRUE_WORDS = frozenset({"yes", "true", "1", "y", "t"})
FALSE_WORDS = frozenset({"no", "false", "0", "n", "f"})


@dataclass(frozen=True)
class ColumnMapping:
    """A checked mapping file."""

    path: Path
    columns: dict[str, str]                       # canonical column -> CSV header
    io_from: str | None = None
    dtype: str | None = None
    sep: str = ","
    na_values: frozenset[str] = field(default_factory=frozenset)


def load_mapping(path: str | Path) -> ColumnMapping:
    path = Path(path)
    document = _read_yaml(path)
    for key in document:
        if key not in MAPPING_KEYS:
            raise _mapping_error(path, str(key), f"unknown key{_suggest(str(key), MAPPING_KEYS)}; "
                                                 f"known keys: {', '.join(MAPPING_KEYS)}")
    if document.get("format") != FORMAT:
        raise _mapping_error(path, "format", f"must be '{FORMAT}', found {document.get('format')!r}")
    columns = document.get("columns")
    if not isinstance(columns, dict) or not columns:
        raise _mapping_error(path, "columns", "required: a mapping of canonical column -> CSV header")
    for name, header in columns.items():
        if name not in MAPPABLE:
            raise _mapping_error(path, f"columns.{name}",
                                 f"unknown canonical column{_suggest(str(name), MAPPABLE)}; "
                                 "the list is in advisor/ingest/table.py")
        if not isinstance(header, str) or not header.strip():
            raise _mapping_error(path, f"columns.{name}", "expected the CSV header text")
    if "op_name" not in columns:
        raise _mapping_error(path, "columns.op_name", "required: the header holding the op name")
    if not set(columns) & set(FLOAT_COLUMNS):
        raise _mapping_error(path, "columns", "map at least one metric or statistic column "
                                              "(cosine, max_abs_error, relative_euclidean_distance, ...)")
    io_from = document.get("io_from")
    if io_from is not None and io_from not in columns:
        raise _mapping_error(path, "io_from", f"{io_from!r} is not one of the mapped columns")
    dtype = document.get("dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise _mapping_error(path, "dtype", "expected a dtype name such as float16")
    sep = document.get("sep", ",")
    if not isinstance(sep, str) or len(sep) != 1:
        raise _mapping_error(path, "sep", "expected one character")
    na_values = document.get("na_values", [])
    if not isinstance(na_values, list) or not all(isinstance(v, str) for v in na_values):
        raise _mapping_error(path, "na_values", "expected a list of strings")
    return ColumnMapping(path=path, columns={k: v.strip() for k, v in columns.items()}, io_from=io_from,
                         dtype=dtype, sep=sep, na_values=frozenset(na_values))


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputFormatError("column mapping file not found", path=path)
    document = load_yaml(path, InputFormatError)
    if not isinstance(document, dict):
        raise InputFormatError("a column mapping must be a YAML mapping (format: generic, columns: ...)",
                               path=path)
    return document


def _mapping_error(path: Path, field_name: str, message: str) -> InputFormatError:
    return InputFormatError(message, path=path, field=field_name)


def _suggest(name: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]}?" if close else ""


@dataclass(frozen=True)
class GenericCsvReader:
    """The registry entry (never detected from a header) or, with a mapping, the reader itself."""

    mapping: ColumnMapping | None = None
    name: str = FORMAT
    expected_header: str = "any header, with a YAML column mapping (docs/formats.md)"

    def matches(self, header_fields: list[str]) -> bool:
        return False

    def read(self, path: Path, encoding: str) -> ComparisonTable:
        if self.mapping is None:
            raise UsageError("format 'generic' needs a column mapping file (see docs/formats.md)")
        return read_generic(path, encoding, self.mapping)


def read_generic(path: Path, encoding: str, mapping: ColumnMapping) -> ComparisonTable:
    cells, lines = read_text_cells(path, encoding, sep=mapping.sep)
    for name, header in mapping.columns.items():
        if header not in cells.columns:
            raise InputFormatError(f"column '{header}' named by {mapping.path} is not in the header",
                                   path=path, line=1, field=f"columns.{name}")
    no_value = NO_VALUE | mapping.na_values
    n = len(cells)
    columns: dict[str, object] = {}
    present: set[str] = set()
    for name, header in mapping.columns.items():
        columns[name] = _typed(cells[header], COLUMNS[name], header, lines, path, no_value)
        if COLUMNS[name] == "float64":
            present.add(name)
    if "op_index" not in columns:
        codes, _ = pd.factorize(pd.Series(columns["op_name"]))
        columns["op_index"] = pd.arrays.IntegerArray(np.maximum(codes, 0).astype(np.int64), codes < 0)
    if mapping.io_from:
        io, slot = _split_io(pd.Series(columns[mapping.io_from], dtype="string"))
        columns.setdefault("io", io)
        columns.setdefault("slot", slot)
    for side in ("npu_dtype", "golden_dtype"):
        if side in columns:
            columns[side] = normalise_dtypes(pd.Series(columns[side]))
        elif mapping.dtype:
            columns[side] = normalise_dtypes(pd.Series([mapping.dtype] * n))
    derived = derive_metrics(columns, present)
    columns["source_line"] = lines
    frame = pd.DataFrame({c: columns[c] if c in columns else na_column(c, n) for c in COLUMNS}, copy=False)
    order = [m for m in FLOAT_COLUMNS if m in present]
    return ComparisonTable(frame=frame, source=path, format=FORMAT, present_metrics=order,
                           derived_metrics=[m for m in order if m in derived])


def _typed(cells: pd.Series, dtype: str, header: str, lines: np.ndarray, path: Path,
           no_value: frozenset[str]) -> object:
    if dtype == "float64":
        return numbers(cells, header, lines, path, no_value=no_value)
    if dtype == "Int64":
        values = numbers(cells, header, lines, path, no_value=no_value)
        bad = np.flatnonzero(~np.isnan(values) & (~np.isfinite(values) | (values != np.round(values))))
        if bad.size:
            raise InputFormatError(f"bad integer {cells.iat[bad[0]]!r} in column {header}", path=path,
                                   line=int(lines[bad[0]]))
        return pd.array(values, dtype="Int64")
    text = text_column(cells, no_value)
    if dtype == "boolean":
        words = text.str.lower()
        bad = np.flatnonzero((words.notna() & ~words.isin(TRUE_WORDS | FALSE_WORDS)).to_numpy(dtype=bool))
        if bad.size:
            raise InputFormatError(f"bad yes/no value {cells.iat[bad[0]]!r} in column {header}", path=path,
                                   line=int(lines[bad[0]]))
        return words.isin(TRUE_WORDS).astype("boolean").mask(words.isna()).array
    return text.array


def _split_io(names: pd.Series) -> tuple[object, object]:
    """io, slot from msaccucmp-style (``op:output:0``) or msprobe-style (``call.output.0``) names."""
    io, slot = split_tensor_ids(names)
    io, slot = pd.Series(io, dtype="string"), pd.Series(slot, dtype="Int64")
    todo = io.isna() & names.notna()
    if todo.any():
        parts = split_tensor_names(names[todo])
        io[todo] = parts["io"]
        slot[todo] = parts["slot"]
    return io.array, slot.array
