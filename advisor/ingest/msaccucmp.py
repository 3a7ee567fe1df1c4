"""Reader for the msaccucmp vector-compare result CSV (FORMATS.md §1): current and legacy layouts.

Columns are recognised by name, not position, so every optional column (OpSequence, zero to two
Address, OverFlow, CompareFailReason, any subset of the ten metrics, user metrics after them)
is just "present or not". The two sides' DataType/Address share a name and are told apart by
whether they come before or after GroundTruth.

Speed: the file goes through one pandas C-engine pass with explicit dtypes, and everything after
that is column arithmetic. Two fields hold several values each. pandas' regex ``str`` methods
take 1.3 s (TensorIndex) and 2.7 s (StandardDeviation) per million rows, longer than parsing
the whole file, so the fast paths split them differently: StandardDeviation goes through a
second C-engine pass, TensorIndex through numpy on the joined bytes. The regex versions stay as
the exact fallback, and they are what locate a malformed value for the error message.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.dtypes import normalise_dtypes
from advisor.errors import InputFormatError
from advisor.ingest.csv_cells import check_first_row, check_last_row_complete, parser_error, read_header, shown
from advisor.ingest.extra_columns import MSQUICKCMP_FLAGS, typed_extra, user_column_name, yes_no_flags
from advisor.ingest.table import COLUMNS, METRIC_COLUMNS, STAT_COLUMNS, ComparisonTable, na_array, na_column

CURRENT = "msaccucmp"
LEGACY = "msaccucmp-legacy"

# Header name -> canonical metric column, in the order msaccucmp prints them.
METRIC_HEADERS: dict[str, str] = {
    "CosineSimilarity": "cosine",
    "MaxAbsoluteError": "max_abs_error",
    "AccumulatedRelativeError": "accumulated_relative_error",
    "RelativeEuclideanDistance": "relative_euclidean_distance",
    "KullbackLeiblerDivergence": "kl_divergence",
    "StandardDeviation": "standard_deviation",  # split into STAT_COLUMNS
    "MeanAbsoluteError": "mean_absolute_error",
    "RootMeanSquareError": "root_mean_square_error",
    "MaxRelativeError": "max_relative_error",
    "MeanRelativeError": "mean_relative_error",
}
STD_ROLE = "standard_deviation"

CURRENT_IDENTITY: dict[str, str] = {
    "Index": "op_index", "OpSequence": "op_sequence", "OpType": "op_type", "NPUDump": "op_name",
    "GroundTruth": "golden_ops", "TensorIndex": "tensor_id", "Shape": "shape", "OverFlow": "overflow",
}
# Columns msaccucmp fills that a trimmed table may lack: what is derived instead.
DERIVABLE = ("OpType", "NPUDump", "GroundTruth", "TensorIndex")
LEGACY_IDENTITY: dict[str, str] = {
    "Index": "op_index", "LeftOp": "op_name", "RightOp": "golden_ops", "TensorIndex": "tensor_id",
}
# Both sides print a DataType (and an Address when dumped from device memory) under one name.
SIDED: dict[str, tuple[str, str]] = {
    "DataType": ("npu_dtype", "golden_dtype"),
    "Address": ("npu_address", "golden_address"),
}
REASON_HEADER = "CompareFailReason"
FLAG_ROLES = ("overflow", *MSQUICKCMP_FLAGS.values())
# A single-op detail file (per-element errors of one tensor) shares NPUDump/GroundTruth with a result.
DETAIL_MARKERS = frozenset({"AbsoluteError", "RelativeError"})

# What msaccucmp writes for "no value". `*` marks a missing side; in number columns it is just NA.
FLOAT_NA = ["NaN", "nan", "-nan", "NAN", "*", ""]
TEXT_NA = ["NaN", "nan", "*", ""]
SIDE_NA = ["NaN", "nan", ""]  # NPUDump / GroundTruth / LeftOp / RightOp: keep `*`, it sets a flag
INTEGER_ROLES = ("op_index", "op_sequence")

ColumnArray = np.ndarray | pd.api.extensions.ExtensionArray


@dataclass
class Layout:
    """Which header position holds what: ``names`` feeds read_csv, one internal name per field."""

    names: list[str]
    headers: dict[str, str]                              # role -> header text, for messages
    metric_roles: list[str] = field(default_factory=list)  # canonical metrics, file order
    user_roles: list[str] = field(default_factory=list)    # user_<snake_case>, file order

    @property
    def float_roles(self) -> list[str]:
        metrics = set(self.metric_roles) - {STD_ROLE}
        return [n for n in self.names if n in INTEGER_ROLES or n in metrics]

    @property
    def text_roles(self) -> list[str]:
        floats = set(self.float_roles)  # once: a per-name recomputation made wide headers cubic
        return [n for n in self.names if n in self.headers and n not in floats]


@dataclass(frozen=True)
class MsaccucmpReader:
    """One msaccucmp layout: which names identify it, which columns it needs."""

    name: str
    identity: dict[str, str]
    required: tuple[str, ...]
    expected_header: str
    markers: frozenset[str]            # any one of these names in the header claims the file
    excluded: frozenset[str] = frozenset()

    def matches(self, header_fields: Sequence[str]) -> bool:
        # Loose on purpose: a file that is clearly msaccucmp but lacks a required column should
        # hear which column is missing, not that its header is unknown. A trimmed table (the
        # vendor advisor's: Index and CosineSimilarity) is claimed by Index and a metric.
        fields = {_header_name(f.strip()) for f in header_fields}
        if fields & self.excluded:
            return False
        trimmed = "NPUDump" in self.identity and "Index" in fields and bool(fields & set(METRIC_HEADERS))
        return bool(fields & self.markers) or trimmed

    def read(self, path: Path, encoding: str) -> ComparisonTable:
        fields = read_header(path, encoding)
        layout = resolve_layout(fields, self.identity, self.required, path)
        check_first_row(path, encoding, len(fields))
        chunks = ColumnChunks()
        last_line = 0
        for raw, lines in parse_rows(path, encoding, layout):
            chunks.append(canonical_columns(raw, lines, layout, path))
            last_line = int(lines[-1])
        if not last_line:
            raise InputFormatError("no rows: the file has a header but no comparison rows", path=path)
        check_last_row_complete(path, encoding, len(fields), last_line)
        # In schema order, whatever order the file had them in.
        present = [m for m in METRIC_COLUMNS if m in layout.metric_roles]
        if STD_ROLE in layout.metric_roles:
            present += list(STAT_COLUMNS)
        frame = chunks.frame([*COLUMNS, *layout.user_roles])
        table = ComparisonTable(frame=frame, source=path, format=self.name, present_metrics=present)
        for role in layout.user_roles:
            frame[role], is_metric = typed_extra(frame[role])
            table.extra_columns[role] = layout.headers[role]
            if is_metric:
                table.extra_metrics.append(role)
        if self.name == CURRENT:
            derive_missing(table, layout)
        return table


READERS: tuple[MsaccucmpReader, ...] = (
    MsaccucmpReader(
        name=CURRENT, identity=CURRENT_IDENTITY,
        required=("Index",),
        expected_header="Index, OpType, NPUDump, DataType, GroundTruth, DataType, TensorIndex, Shape, "
                        "CosineSimilarity... (at least Index and one metric)",
        markers=frozenset({"NPUDump", "GroundTruth", "TensorIndex"}),
        excluded=frozenset({"LeftOp", "RightOp"}) | DETAIL_MARKERS,
    ),
    MsaccucmpReader(
        name=LEGACY, identity=LEGACY_IDENTITY,
        required=("Index", "LeftOp", "RightOp", "TensorIndex"),
        expected_header="Index, LeftOp, RightOp, TensorIndex, CosineSimilarity...",
        markers=frozenset({"LeftOp", "RightOp"}),
    ),
)


# --- header --------------------------------------------------------------------------------------

# Every header name msaccucmp, msquickcmp and their docs print, by its lower-case spelling: the
# docs write "Overflow", the tool "OverFlow"; a spreadsheet may change the case of any of them.
KNOWN_HEADERS: dict[str, str] = {name.lower(): name for name in (
    *CURRENT_IDENTITY, *LEGACY_IDENTITY, *SIDED, *METRIC_HEADERS, REASON_HEADER, *MSQUICKCMP_FLAGS)}


def _header_name(text: str) -> str:
    """The header as msaccucmp spells it: any case; a file re-saved by pandas spells the second
    DataType/Address "DataType.1"/"Address.1"."""
    match = re.fullmatch(r"(.+?)\.\d+", text)
    if match and match.group(1).lower() in ("datatype", "address"):
        text = match.group(1)
    return KNOWN_HEADERS.get(text.lower(), text)


user_metric_name = user_column_name  # the name tests and older callers use


def resolve_layout(fields: Sequence[str], identity: dict[str, str], required: Sequence[str],
                   path: Path) -> Layout:
    """Give every header position a role; unknown columns after the identity block are user
    metrics, unknown ones inside it (e.g. a pandas index column) are skipped."""
    names = [_header_name(f) for f in fields]
    golden_header = next(h for h, role in identity.items() if role == "golden_ops")
    golden_at = names.index(golden_header) if golden_header in names else len(names)
    identity_end = max((i for i, n in enumerate(names) if n in identity or n in SIDED), default=-1)
    layout = Layout(names=[], headers={})
    for position, name in enumerate(names):
        if name in identity:
            role = identity[name]
        elif name in SIDED:
            role = SIDED[name][0 if position < golden_at else 1]
        elif name in METRIC_HEADERS:
            role = METRIC_HEADERS[name]
            layout.metric_roles.append(role)
        elif name == REASON_HEADER:
            role = "compare_fail_reason"
        elif name in MSQUICKCMP_FLAGS:
            role = MSQUICKCMP_FLAGS[name]
        elif name and position > identity_end:
            role = user_column_name(name)
            while role in layout.headers:  # two headers that snake_case alike
                role += "_"
            layout.user_roles.append(role)
        else:
            role = f"_skip{position}"
        if role in layout.headers:
            raise InputFormatError(f"column {fields[position]} appears twice in the header", path=path,
                                   line=1)
        if not role.startswith("_skip"):
            layout.headers[role] = fields[position]
        layout.names.append(role)
    headers = layout.headers
    missing = [h for h in required if identity[h] not in headers]
    if missing:
        needs = ", ".join(required) + (", an NPU op name (NPUDump)" if "NPUDump" in identity else "")
        raise InputFormatError(
            f"missing required column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            f"an msaccucmp result needs {needs} and at least one metric column",
            path=path, line=1)
    if not layout.metric_roles:
        raise InputFormatError(
            f"no metric column; expected at least one of {', '.join(METRIC_HEADERS)}", path=path, line=1)
    return layout


# --- parsing ---------------------------------------------------------------------------------------

# Rows per read_csv chunk. Each chunk is turned into canonical columns before the next is read,
# so the raw text of only one chunk (StandardDeviation strings, parser buffers) is alive at a
# time: peak memory stays near the size of the final table.
CHUNK_ROWS = 200_000


def _read_options(layout: Layout) -> dict[str, object]:
    dtypes: dict[str, object] = {r: "float64" for r in layout.float_roles}
    na_values: dict[str, list[str]] = {r: FLOAT_NA for r in layout.float_roles}
    for role in layout.text_roles:
        dtypes[role] = object
        na_values[role] = SIDE_NA if role in ("op_name", "golden_ops") else TEXT_NA
    for role in layout.names:
        dtypes.setdefault(role, object)  # skipped columns: read (see parse_rows), then dropped
    return dict(engine="c", header=0, names=layout.names, index_col=False, dtype=dtypes,
                keep_default_na=False, na_values=na_values, chunksize=CHUNK_ROWS,
                skip_blank_lines=False)  # keeps row i on line i + 2; blank rows are dropped below


def parse_rows(path: Path, encoding: str,
               layout: Layout) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """Chunks of raw rows (blank lines dropped) with the physical line of each row."""
    next_line = 2
    for raw in _raw_chunks(path, encoding, layout):
        lines, next_line = _physical_lines(raw, next_line)
        keep = ~_blank_rows(raw)
        if not keep.all():
            raw, lines = raw.loc[keep].reset_index(drop=True), lines[keep]
        if len(raw):
            yield raw, lines


def _raw_chunks(path: Path, encoding: str, layout: Layout) -> Iterator[pd.DataFrame]:
    """pandas' chunks as they come, with its errors turned into InputFormatErrors."""
    try:
        # No usecols: with it the C parser silently drops the extra fields of a too-long row.
        with pd.read_csv(path, encoding=encoding, **_read_options(layout)) as chunks:
            yield from chunks
    except UnicodeDecodeError:
        raise  # read_comparison retries as GBK
    except pd.errors.EmptyDataError:
        raise InputFormatError("no rows: the file has a header but no comparison rows",
                               path=path) from None
    except pd.errors.ParserError as err:
        raise parser_error(err, path) from None
    except ValueError:  # a number column held text: only now look for where
        raise _locate_bad_number(path, encoding, layout) from None
    except csv.Error as err:  # the C parser's own messages come as ParserError; this is a safety net
        raise InputFormatError(f"not a readable CSV: {err}", path=path) from None


def _physical_lines(raw: pd.DataFrame, first: int) -> tuple[np.ndarray, int]:
    lines = np.arange(first, first + len(raw), dtype=np.int64)
    extra = 0
    if "compare_fail_reason" in raw:
        # The one free-text field: a quoted newline in it shifts every later line number.
        reason = raw["compare_fail_reason"]
        if reason.str.contains("\n", regex=False, na=False).any():
            per_row = reason.str.count("\n").fillna(0).to_numpy(np.int64)
            lines[1:] += np.cumsum(per_row)[:-1]
            extra = int(per_row[-1])
    return lines, int(lines[-1]) + 1 + extra if len(lines) else first


def _blank_rows(raw: pd.DataFrame) -> np.ndarray:
    # A blank line is a row with every field NA; Index is a float column, so test it first.
    blank = np.isnan(raw["op_index"].to_numpy())
    if blank.any():
        for role in ("op_name", "golden_ops", "tensor_id"):
            if role in raw:
                blank &= raw[role].isna().to_numpy()
    return blank


def _locate_bad_number(path: Path, encoding: str, layout: Layout) -> InputFormatError:
    """Re-read the number columns as text, chunk by chunk, up to the first cell that is no number."""
    float_roles = layout.float_roles
    usecols = float_roles + [r for r in ("compare_fail_reason",) if r in layout.headers]
    options = _read_options(layout) | {"dtype": object}
    next_line = 2
    with pd.read_csv(path, encoding=encoding, usecols=usecols, **options) as chunks:
        for text in chunks:
            lines, next_line = _physical_lines(text, next_line)
            first: tuple[int, str] | None = None
            for role in float_roles:
                column = text[role]
                bad = np.flatnonzero(pd.to_numeric(column, errors="coerce").isna().to_numpy()
                                     & column.notna().to_numpy())
                if bad.size and (first is None or bad[0] < first[0]):
                    first = (int(bad[0]), role)
            if first is not None:
                row, role = first
                return InputFormatError(
                    f"bad number {shown(text[role].iat[row])} in column {layout.headers[role]}",
                    path=path, line=int(lines[row]))
    return InputFormatError("a number column holds a value that is not a number", path=path)


# --- canonical frame -----------------------------------------------------------------------------

def canonical_columns(raw: pd.DataFrame, lines: np.ndarray, layout: Layout,
                      path: Path) -> dict[str, ColumnArray]:
    """The canonical columns (plus user metrics) for one chunk of raw rows."""
    n = len(raw)
    columns: dict[str, ColumnArray] = {}
    for role in INTEGER_ROLES:
        columns[role] = _integers(raw, role, layout, path, lines)
    op_name = raw["op_name"] if "op_name" in raw else pd.Series(np.nan, index=raw.index, dtype=object)
    golden = raw["golden_ops"] if "golden_ops" in raw else pd.Series(np.nan, index=raw.index, dtype=object)
    # numpy's == on the object arrays: ten times faster than pandas' on a Series
    names = op_name.to_numpy(dtype=object)
    golden_only = names == "*"
    npu_only = golden.to_numpy(dtype=object) == "*"
    op_type = _text(raw, "op_type", n)
    is_output = op_type.isna()
    if is_output.any():  # only the rows without an op type can be the Node_Output row
        is_output[is_output] = names[is_output] == "Node_Output"
    io_col, slot = split_tensor_ids(raw["tensor_id"]) if "tensor_id" in raw else (_na_text(n), na_array("Int64", n))
    columns.update(
        op_type=op_type,
        op_name=op_name.mask(golden_only).astype("string").array,
        golden_ops=golden.mask(npu_only).astype("string").array,
        tensor_id=_text(raw, "tensor_id", n),
        io=io_col,
        slot=slot,
        npu_dtype=normalise_dtypes(raw["npu_dtype"]) if "npu_dtype" in raw else _na_text(n),
        golden_dtype=normalise_dtypes(raw["golden_dtype"]) if "golden_dtype" in raw else _na_text(n),
        npu_address=_text(raw, "npu_address", n),
        golden_address=_text(raw, "golden_address", n),
        shape=_text(raw, "shape", n),
        # an absent flag column is made NA once, at full length, by ColumnChunks.frame
        **{role: yes_no_flags(raw[role]) for role in FLAG_ROLES if role in raw},
        is_network_output=pd.array(is_output, dtype="boolean"),
        npu_only=pd.array(npu_only, dtype="boolean"),
        golden_only=pd.array(golden_only, dtype="boolean"),
    )
    # Copies, not views: a view would keep the chunk's whole float block alive until the end.
    for metric in METRIC_COLUMNS:
        columns[metric] = raw[metric].to_numpy(copy=True) if metric in raw else np.full(n, np.nan)
    if STD_ROLE in raw:
        columns.update(split_standard_deviation(raw[STD_ROLE], lines, path,
                                                layout.headers[STD_ROLE]))
    else:
        columns.update({name: np.full(n, np.nan) for name in STAT_COLUMNS})
    columns["compare_fail_reason"] = _text(raw, "compare_fail_reason", n)
    columns["source_line"] = lines
    for role in layout.user_roles:
        columns[role] = raw[role].to_numpy(copy=True)
    return columns


class ColumnChunks:
    """Canonical columns collected chunk by chunk, joined column by column at the end so only
    one column is ever held twice."""

    def __init__(self) -> None:
        self._parts: dict[str, list[ColumnArray]] = {}

    def append(self, columns: dict[str, ColumnArray]) -> None:
        for name, values in columns.items():
            self._parts.setdefault(name, []).append(values)

    def frame(self, order: Sequence[str]) -> pd.DataFrame:
        """The columns in ``order``; canonical columns this format never fills are made NA once,
        at full length, not chunk by chunk."""
        rows = sum(len(part) for part in self._parts["source_line"])
        data = {name: _concat(self._parts.pop(name)) if name in self._parts else na_column(name, rows)
                for name in order}
        return pd.DataFrame(data, copy=False)  # copy=False: no second copy of each float column


def _concat(parts: list[ColumnArray]) -> ColumnArray:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return pd.concat([pd.Series(p, copy=False) for p in parts], ignore_index=True).array


def _text(raw: pd.DataFrame, role: str, n: int) -> pd.api.extensions.ExtensionArray:
    return raw[role].astype("string").array if role in raw else _na_text(n)


def _na_text(n: int) -> pd.api.extensions.ExtensionArray:
    return na_array("string", n)


def _integers(raw: pd.DataFrame, role: str, layout: Layout, path: Path,
              lines: np.ndarray) -> pd.api.extensions.ExtensionArray:
    if role not in raw:
        return pd.array(np.full(len(raw), np.nan), dtype="Int64")
    values = raw[role].to_numpy()
    bad = np.flatnonzero(~np.isnan(values) & (~np.isfinite(values) | (values != np.round(values))))
    if bad.size:
        raise InputFormatError(f"bad integer {float(values[bad[0]])!r} in column {layout.headers[role]}",
                               path=path, line=int(lines[bad[0]]))
    return pd.array(values, dtype="Int64")


def derive_missing(table: ComparisonTable, layout: Layout) -> None:
    """What a trimmed table lacks, derived where it can be and said in one warning."""
    missing = [h for h in DERIVABLE if CURRENT_IDENTITY[h] not in layout.headers]
    if not missing:
        return
    said = []
    frame = table.frame
    if "TensorIndex" in missing:
        # msaccucmp lists an op's tensors together; without TensorIndex nothing tells an input
        # from an output, so every row is read as an output, numbered in file order.
        index = frame["op_index"].to_numpy(dtype=np.float64, na_value=np.nan)
        new_op = np.ones(len(index), dtype=bool)
        new_op[1:] = ~((index[1:] == index[:-1]) | (np.isnan(index[1:]) & np.isnan(index[:-1])))
        starts = np.flatnonzero(new_op)
        slot = np.arange(len(index)) - np.repeat(starts, np.diff(np.append(starts, len(index))))
        frame["io"] = pd.array(np.full(len(index), "output", dtype=object), dtype="string")
        frame["slot"] = pd.array(slot, dtype="Int64")
        names = frame["op_name"]
        frame["tensor_id"] = (names + ":output:" + pd.Series(slot, dtype="string")).where(names.notna())
        said.append("every row is read as an output of its op, numbered in file order"
                    + (" (TensorIndex = <NPUDump>:output:<n>)" if "NPUDump" not in missing else ""))
    if "NPUDump" in missing:
        # The op is known by its Index only (as the vendor advisor reports it): name it so.
        frame["op_name"] = ("Index " + frame["op_index"].astype("string")).astype("string")
        said.append("ops are named by their Index ('Index 7')")
    if "OpType" in missing:
        said.append("op types are unknown")
    if "GroundTruth" in missing:
        said.append("golden op names are unknown")
    plural = "s" if len(missing) > 1 else ""
    table.warnings.append(f"{table.source.name}: no {', '.join(missing)} column{plural}: {'; '.join(said)}")


# --- TensorIndex: <op name>:<input|output>:<n> -----------------------------------------------------

def split_tensor_ids(ids: pd.Series) -> tuple[pd.api.extensions.ExtensionArray,
                                              pd.api.extensions.ExtensionArray]:
    """(io, slot) from TensorIndex, read from the right (op names may hold ``:``).

    Works on the column joined into one byte string: from each row's end, step back over the
    slot digits, then check that ``:input:`` or ``:output:`` precedes them. Each step is one
    array operation over all rows, so no per-row Python runs. Ids not ending that way get NA.
    """
    n = len(ids)
    blob = ("\n".join(ids.fillna("").tolist()) + "\n").encode("utf-8")
    buf = np.frombuffer(blob, dtype=np.uint8)
    ends = np.flatnonzero(buf == ord("\n"))
    if len(ends) != n:  # an id with a newline in it: let the regex handle the oddity
        return split_tensor_ids_regex(ids)
    slot = np.zeros(n, dtype=np.int64)
    digits = np.zeros(n, dtype=np.int64)
    stepping = np.ones(n, dtype=bool)
    for j in range(MAX_SLOT_DIGITS + 1):
        # The previous row's "\n" (or the start of the blob) stops the walk.
        char = _byte_at(buf, ends - 1 - j)
        stepping &= (char >= ord("0")) & (char <= ord("9"))
        if not stepping.any():
            break
        slot += np.where(stepping, (char - ord("0")) * 10**j, 0)
        digits += stepping
    colon = ends - 1 - digits  # where the ":" before the slot must be
    has_slot = (digits > 0) & (digits <= MAX_SLOT_DIGITS) & (_byte_at(buf, colon) == ord(":"))
    is_input = has_slot & _spells(buf, colon - 6, b":input")
    is_output = has_slot & _spells(buf, colon - 7, b":output")
    io_values = np.full(n, pd.NA, dtype=object)
    io_values[is_input] = "input"
    io_values[is_output] = "output"
    valid = is_input | is_output
    return (pd.array(io_values, dtype="string"),
            pd.arrays.IntegerArray(np.where(valid, slot, 0), ~valid))


MAX_SLOT_DIGITS = 18  # int64 holds any 18-digit number


def _byte_at(buf: np.ndarray, position: np.ndarray) -> np.ndarray:
    """buf[position] as int64, 0 where position falls before the start."""
    return np.where(position >= 0, buf[np.maximum(position, 0)], 0).astype(np.int64)


def _spells(buf: np.ndarray, start: np.ndarray, word: bytes) -> np.ndarray:
    same = start >= 0
    for offset, byte in enumerate(word):
        same &= buf[np.maximum(start + offset, 0)] == byte
    return same


def split_tensor_ids_regex(ids: pd.Series) -> tuple[pd.api.extensions.ExtensionArray,
                                                    pd.api.extensions.ExtensionArray]:
    """The reference split (slow: ~1.3 s per million rows)."""
    parts = ids.astype("string").str.extract(r":(input|output):([0-9]{1,18})$")
    return parts[0].array, pd.to_numeric(parts[1]).astype("Int64").array


# --- StandardDeviation: (mean;std),(mean;std), NPU side first -------------------------------------

STD_PATTERN = r"^\s*\(([^;()]*);([^;()]*)\)\s*,\s*\(([^;()]*);([^;()]*)\)\s*$"


def split_standard_deviation(values: pd.Series, lines: np.ndarray, path: Path,
                             header: str) -> dict[str, np.ndarray]:
    """npu_mean, npu_std, golden_mean, golden_std as float64 (NaN where the cell is NA)."""
    return (_split_std_fast(values)
            or _split_std_exact(values, lines, path, header))


def _split_std_fast(values: pd.Series) -> dict[str, np.ndarray] | None:
    # "(a;b),(c;d)" minus the brackets, with "," -> ";", is a 4-field ';'-separated line: let the
    # C parser read all of them at once. NA cells become empty lines (all NaN).
    present = int(values.notna().sum())
    if present == 0:
        return {name: np.full(len(values), np.nan) for name in STAT_COLUMNS}
    blob = ("\n".join(values.fillna("").tolist()) + "\n").encode("utf-8")
    brackets = blob.count(b"(")
    blob = blob.translate(bytes.maketrans(b",", b";"), b"()")
    # The parser fails a row with too many fields but pads one with too few: with the totals
    # right, every non-NA row has exactly four fields. Anything off goes the exact way.
    if brackets != 2 * present or blob.count(b";") != 3 * present:
        return None
    try:
        stats = pd.read_csv(io.BytesIO(blob), sep=";", header=None, names=list(STAT_COLUMNS),
                            engine="c", dtype="float64", keep_default_na=False, na_values=FLOAT_NA,
                            skip_blank_lines=False, index_col=False)
    except (ValueError, pd.errors.ParserError):
        return None
    if len(stats) != len(values):
        return None
    return {name: stats[name].to_numpy() for name in STAT_COLUMNS}


def _split_std_exact(values: pd.Series, lines: np.ndarray, path: Path,
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
            path=path, line=int(lines[bad[0]]))
    return {name: numbers[name].to_numpy(dtype="float64", na_value=np.nan) for name in STAT_COLUMNS}
