"""What a comparison's layout measures, per op, for the report's plot and per-op table and the terminal.

Three layouts (the metrics a comparison file really holds, not its tool's name):

* ``tensor``: a metric per tensor (cosine, relative Euclidean distance, max absolute error...):
  msaccucmp, msprobe's tensor mode. The facts' per-op frame already carries them.
* ``statistics``: no metric of the tensors themselves, only their statistics and the relative error
  of each (msprobe's default summary mode, and two dump.json files compared by statistics): the
  relative error of max, min, mean and norm, the worst of each over an op's output tensors.
* ``checksum``: MD5 mode: per op, how many of its tensors' checksums were compared and how many differ.

Column operations over the table (one group-by), so a large comparison costs no Python loop per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..ingest.table import METRIC_COLUMNS, STAT_DIFF_COLUMNS, ComparisonTable

TENSOR, STATISTICS, CHECKSUM = "tensor", "statistics", "checksum"
CHECKSUM_COLUMNS = ("checksums_differ", "checksums_compared")


@dataclass(frozen=True)
class OpMetrics:
    """The layout of a comparison and, for ``statistics`` and ``checksum``, its metrics per op."""

    layout: str
    columns: tuple[str, ...]          # the metrics shown per op (empty for ``tensor``: the facts have them)
    frame: pd.DataFrame | None        # indexed by op_index, one float column per metric; None for ``tensor``

    def of(self, index: int) -> dict[str, float | None]:
        """The op's metrics (None where it has none)."""
        if self.frame is None or index not in self.frame.index:
            return dict.fromkeys(self.columns)
        row = self.frame.loc[index]
        return {c: (None if pd.isna(row[c]) else float(row[c])) for c in self.columns}


def layout_of(table: ComparisonTable) -> str:
    """``tensor`` when any tensor metric was read, else ``statistics`` when relative errors of the
    statistics were, else ``checksum`` when the file holds MD5 digests, else ``tensor``."""
    present = set(table.present_metrics)
    if present & set(METRIC_COLUMNS):
        return TENSOR
    if present & set(STAT_DIFF_COLUMNS):
        return STATISTICS
    if table.frame["md5_match"].notna().any():
        return CHECKSUM
    return TENSOR


def metric_columns(table: ComparisonTable) -> tuple[str, ...]:
    """The per-tensor metrics of the table's layout, for the terminal (``advisor ops``, ``node``): the
    tensor metrics read (all of them when none was), the statistics' relative errors, or
    ``checksum_differs`` (see :func:`metric_values`)."""
    layout = layout_of(table)
    if layout == STATISTICS:
        return tuple(c for c in STAT_DIFF_COLUMNS if c in table.present_metrics)
    if layout == CHECKSUM:
        return ("checksum_differs",)
    return tuple(m for m in METRIC_COLUMNS if m in table.present_metrics) or METRIC_COLUMNS


def metric_values(table: ComparisonTable, column: str) -> np.ndarray:
    """One float per row of a column :func:`metric_columns` names: ``checksum_differs`` is 1 where the two
    checksums differ, 0 where they are equal, NaN where there are none."""
    if column == "checksum_differs":
        digests = table.frame["md5_match"]
        return np.where(digests.isna().to_numpy(dtype=bool), np.nan,
                        (~digests.fillna(True)).to_numpy(dtype=np.float64))
    return table.frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


def op_metrics(table: ComparisonTable) -> OpMetrics:
    """The layout and its per-op metrics (see the module's docstring)."""
    layout = layout_of(table)
    frame = table.frame
    member = frame["op_index"].notna().to_numpy(dtype=bool) \
        & ~frame["is_network_output"].fillna(False).to_numpy(dtype=bool)
    if layout == STATISTICS:
        # An op's own result: its outputs (for a backward call, the gradients it hands on).
        outputs = member & ~(frame["io"] == "input").fillna(False).to_numpy(dtype=bool)
        columns = tuple(c for c in STAT_DIFF_COLUMNS if c in table.present_metrics)
        picked = frame.loc[outputs, ["op_index", *columns]]
        per_op = picked.astype({c: "float64" for c in columns}).groupby("op_index", sort=True).max()
        return OpMetrics(STATISTICS, columns, per_op)
    if layout == CHECKSUM:
        digests = frame["md5_match"]
        compared = member & digests.notna().to_numpy(dtype=bool)
        differ = compared & ~digests.fillna(True).to_numpy(dtype=bool)
        counts = pd.DataFrame({"op_index": frame["op_index"].to_numpy()[compared],
                               "checksums_differ": differ[compared].astype(np.float64),
                               "checksums_compared": np.ones(int(compared.sum()))})
        return OpMetrics(CHECKSUM, CHECKSUM_COLUMNS, counts.groupby("op_index", sort=True).sum())
    return OpMetrics(TENSOR, (), None)
