"""Reader for the msaccucmp vector-compare result CSV (docs/formats.md): current and legacy layouts.

The header gives every position a role (msaccucmp_layout.py). The rows are read by pyarrow's CSV
parser into Arrow-backed columns (msaccucmp_arrow.py), or, when that read cannot vouch for the
result (blank lines, quoted newlines, short rows, ``*`` in a number column, GBK text, a bad cell),
by pandas' C parser chunk by chunk (msaccucmp_exact.py), which also names the file and line of a
bad cell. Multi-value cells are split in msaccucmp_fields.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.ingest.csv_cells import read_header
from advisor.ingest.extra_columns import typed_extra, user_column_name
from advisor.ingest.msaccucmp_arrow import read_arrow
from advisor.ingest.msaccucmp_exact import read_exact
from advisor.ingest.msaccucmp_layout import (
    CURRENT,
    CURRENT_IDENTITY,
    DERIVABLE,
    DETAIL_MARKERS,
    LEGACY,
    LEGACY_IDENTITY,
    METRIC_HEADERS,
    STD_ROLE,
    Layout,
    header_name,
    resolve_layout,
)
from advisor.ingest.table import METRIC_COLUMNS, STAT_COLUMNS, ComparisonTable, coded

__all__ = ["CURRENT", "LEGACY", "READERS", "MsaccucmpReader", "resolve_layout", "user_metric_name"]

user_metric_name = user_column_name  # the name tests and older callers use


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
        fields = {header_name(f.strip()) for f in header_fields}
        if fields & self.excluded:
            return False
        trimmed = "NPUDump" in self.identity and "Index" in fields and bool(fields & set(METRIC_HEADERS))
        return bool(fields & self.markers) or trimmed

    def read(self, path: Path, encoding: str) -> ComparisonTable:
        fields = read_header(path, encoding)
        layout = resolve_layout(fields, self.identity, self.required, path)
        frame = read_arrow(path, encoding, layout)
        if frame is None:
            frame = read_exact(path, encoding, layout, len(fields))
        # In schema order, whatever order the file had them in.
        present = [m for m in METRIC_COLUMNS if m in layout.metric_roles]
        if STD_ROLE in layout.metric_roles:
            present += list(STAT_COLUMNS)
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
        frame["io"] = coded(np.full(len(index), "output", dtype=object))
        frame["slot"] = pd.array(slot, dtype="Int64")
        names = frame["op_name"].astype("string")
        frame["tensor_id"] = (names + ":output:" + pd.Series(slot, dtype="string")).where(names.notna())
        said.append("every row is read as an output of its op, numbered in file order"
                    + (" (TensorIndex = <NPUDump>:output:<n>)" if "NPUDump" not in missing else ""))
    if "NPUDump" in missing:
        # The op is known by its Index only (as the vendor advisor reports it): name it so.
        frame["op_name"] = coded("Index " + frame["op_index"].astype("string"))
        said.append("ops are named by their Index ('Index 7')")
    if "OpType" in missing:
        said.append("op types are unknown")
    if "GroundTruth" in missing:
        said.append("golden op names are unknown")
    plural = "s" if len(missing) > 1 else ""
    table.warnings.append(f"{table.source.name}: no {', '.join(missing)} column{plural}: {'; '.join(said)}")

