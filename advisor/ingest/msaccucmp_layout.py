"""The msaccucmp result layouts (docs/formats.md): which header position holds which canonical column.

Columns are recognised by name, not position, so every optional column (OpSequence, zero to two
Address, OverFlow, CompareFailReason, any subset of the ten metrics, user metrics after them)
is just "present or not". The two sides' DataType/Address share a name and are told apart by
whether they come before or after GroundTruth.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.errors import InputFormatError
from advisor.ingest.extra_columns import MSQUICKCMP_FLAGS, user_column_name
from advisor.ingest.table import COLUMNS

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
    def columns(self) -> list[str]:
        """The table's columns: the canonical ones, then the user columns in file order."""
        return [*COLUMNS, *self.user_roles]

    @property
    def float_roles(self) -> list[str]:
        metrics = set(self.metric_roles) - {STD_ROLE}
        return [n for n in self.names if n in INTEGER_ROLES or n in metrics]

    @property
    def text_roles(self) -> list[str]:
        floats = set(self.float_roles)  # once: a per-name recomputation made wide headers cubic
        return [n for n in self.names if n in self.headers and n not in floats]




# --- header --------------------------------------------------------------------------------------

# Every header name msaccucmp, msquickcmp and their docs print, by its lower-case spelling: the
# docs write "Overflow", the tool "OverFlow"; a spreadsheet may change the case of any of them.
KNOWN_HEADERS: dict[str, str] = {name.lower(): name for name in (
    *CURRENT_IDENTITY, *LEGACY_IDENTITY, *SIDED, *METRIC_HEADERS, REASON_HEADER, *MSQUICKCMP_FLAGS)}


def header_name(text: str) -> str:
    """The header as msaccucmp spells it: any case; a file re-saved by pandas spells the second
    DataType/Address "DataType.1"/"Address.1"."""
    match = re.fullmatch(r"(.+?)\.\d+", text)
    if match and match.group(1).lower() in ("datatype", "address"):
        text = match.group(1)
    return KNOWN_HEADERS.get(text.lower(), text)



def resolve_layout(fields: Sequence[str], identity: dict[str, str], required: Sequence[str],
                   path: Path) -> Layout:
    """Give every header position a role; unknown columns after the identity block are user
    metrics, unknown ones inside it (e.g. a pandas index column) are skipped."""
    names = [header_name(f) for f in fields]
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

