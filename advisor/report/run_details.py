"""The lower half of the report, as view rows: the network summary, the inputs, the settings a user
changed and the per-op table. Every label is a human one in the report language; values that say the
same thing as another part of the report (the keep-FP32 list, which the findings and the remedy show)
or that only machines need (ids, source line of the output row) stay in report.json only."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..diagnosis import KeyOp
from .labels import data_label
from .model import KeyOpView, Row, ThresholdGrid, ThresholdRow
from .text import fmt_value, json_safe

# Network fields the summary table does not show (report.json keeps them all).
HIDDEN_NETWORK = ("id", "fact", "output_known", "output_line", "keep_fp32_all", "graph_known")
# Network fields that hold comma-joined names: shown with a space after each comma, so they wrap.
NAME_LISTS = ("output_ops", "npu_only_names", "golden_only_names", "fusion_passes_effective")
# Network fields whose text value is itself a key with a label (``output_source.last_op``).
LABELLED_VALUES = ("output_source", "graph_side")
# Counts that only mean something in a training comparison (msprobe): left out of other runs while zero.
TRAINING_COUNTS = ("argument_rows", "arguments_compared", "differing_arguments", "counter_rows", "checksums_compared",
                   "checksums_differ", "differing_parameters", "parameters_compared", "differing_buffers")
ROLE_ORDER = ("root", "entry", "worst", "neighbour", "output")
KEY_OP_METRICS = ("in_cosine", "out_cosine", "out_red", "out_max_abs_error")


def display_text(value: Any, labels: Mapping[str, str]) -> str:
    """A value for people: yes/no for booleans, lists joined, ``name = value`` for mappings."""
    if isinstance(value, bool):
        return labels["yes" if value else "no"]
    if isinstance(value, Mapping):
        return "; ".join(f"{key} = {display_text(item, labels)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(display_text(item, labels) for item in value)
    return fmt_value(value)


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, (list, tuple, dict, set)) and not value)


def network_rows(network: Mapping[str, Any], labels: Mapping[str, str]) -> list[Row]:
    rows = []
    for key, value in network.items():
        if key in HIDDEN_NETWORK or _empty(value) or (key in TRAINING_COUNTS and not value
                                                       and not network.get("training")):
            continue
        if key in LABELLED_VALUES:
            text = labels.get(f"{key}.{value}", str(value))
        elif key in NAME_LISTS and isinstance(value, str):
            text = ", ".join(name.strip() for name in value.split(","))
        else:
            text = display_text(value, labels)
        rows.append(Row(str(key), data_label(labels, "network", str(key)), json_safe(value), text))
    return rows


def override_rows(overrides: Mapping[str, Any], labels: Mapping[str, str]) -> list[Row]:
    """What the user changed: empty settings are left out; rule parameters are one row per rule."""
    rows = []
    for key, value in overrides.items():
        if _empty(value) or (isinstance(value, Mapping) and all(_empty(v) for v in value.values())):
            continue
        label = data_label(labels, "override", str(key))
        if key == "params" and isinstance(value, Mapping):
            rows += [Row(f"params.{rule}", f"{label}{labels['colon']} {rule}", json_safe(params),
                         display_text(params, labels)) for rule, params in value.items() if not _empty(params)]
        else:
            rows.append(Row(str(key), label, json_safe(value), display_text(value, labels)))
    return rows


def key_op_columns(layout: str, metrics: Sequence[str]) -> tuple[str, ...]:
    """The metric columns of the per-op table: the facts' cosines and errors, or the layout's own
    (the relative error of each statistic; the differing and compared checksums)."""
    return KEY_OP_METRICS if layout == "tensor" or not metrics else tuple(metrics)


def key_op_views(ops: Sequence[KeyOp], finding_at: Mapping[int, str], labels: Mapping[str, str],
                 columns: Sequence[str] = (), embedded: Collection[int] = ()) -> tuple[KeyOpView, ...]:
    """One row per op that matters. ``finding_at``: op index -> id of the finding shown for it;
    ``columns``: the metric columns (key_op_columns); ``embedded``: the ops whose rows of the comparison
    the page embeds (each row's line number links to them)."""
    columns = tuple(columns) or KEY_OP_METRICS
    views = []
    for op in ops:
        roles = tuple(r for r in ROLE_ORDER if r in op.roles)
        values = [getattr(op, c) if c in KEY_OP_METRICS else op.values.get(c) for c in columns]
        compared = op.out_cosine is not None if columns == KEY_OP_METRICS else any(v is not None for v in values)
        differs = (op.values.get("checksums_differ") or 0) > 0
        status = ("overflow" if op.overflow else "deviates" if op.deviates else "differs" if differs else
                  "agrees" if compared else "unknown")
        linked = op.index in embedded and op.source_line is not None
        views.append(KeyOpView(
            index=op.index, op=op.op, op_type=op.op_type or "—", dtype=op.dtype or "—",
            roles=roles, role_labels=tuple(labels[f"role.{r}"] for r in roles),
            metrics=tuple((json_safe(v), fmt_value(v)) for v in values),
            status=status, status_label=labels[f"status.{status}"],
            source_line=op.source_line,
            source_href=f"#src-L{op.source_line}" if linked else None,   # inside the op's block: opens it
            source_title=labels["key_ops.line_title"].format(line=op.source_line) if linked else "",
            finding=finding_at.get(op.index)))
    return tuple(views)


def threshold_grid(rows: Sequence[ThresholdRow]) -> ThresholdGrid:
    """The thresholds as one row per dtype and one column per metric ("—" where a dtype has none)."""
    metrics = list(dict.fromkeys(row.metric for row in rows))
    labels = {row.metric: row.metric_label for row in rows}
    by_dtype: dict[str, dict[str, str]] = {}
    for row in rows:
        by_dtype.setdefault(row.dtype, {})[row.metric] = row.text
    return ThresholdGrid(metrics=tuple(labels[m] for m in metrics),
                         rows=tuple((dtype, tuple(values.get(m, "—") for m in metrics))
                                    for dtype, values in by_dtype.items()))
