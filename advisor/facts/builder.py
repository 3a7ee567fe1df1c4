"""Facts: what the rules see. Built from the ComparisonTable with column operations only.

A million-row table is a normal input, and durable_rules misbehaves with ~100k facts, so facts are
aggregated before they are asserted:

* one ``network`` fact with the whole-network numbers;
* one row per op in ``FactSet.ops`` (a DataFrame: every op, for the report's series and for rules
  that want counts), of which the *notable* ops become ``op`` facts (ops where error enters, where
  overflow starts, the network's input and output ops) and every op a rule of the run may match
  (engine.opfilter decides that over the whole table at once). An op whose inputs already disagree
  only inherits error; unless a rule asks for it, rules learn about it through counts.

Local versus accumulated error (the distinction users most often get wrong): an op *deviates* when
one of its output tensors is outside the dtype's thresholds; error *enters* at an op that deviates
while its inputs agree. When the comparison has input rows for an op (``<op>:input:<n>``), "inputs
agree" is read from them; otherwise from the op before it in execution order (``inputs_from`` says
which; the rules weigh it). Python measures, the rules judge: docs/how-it-judges.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..graph import FusionReport, Graph
from ..ingest.table import ComparisonTable
from .clean import clean_fact
from .fp16 import examined_for_fp16, mark_fp16_sensitive, summarise_overflow
from .graph_join import GraphJoin, join_graph
from .network import network_fact, network_output, tensor_counts, unmatched_fields
from .ops import aggregate_ops, mark_inputs, mark_inserted_normalization, mark_tool_flags, tool_flag_fields
from .propagation import graph_inputs, mark_entries, mark_graph, mark_identical_inputs
from .rows import Judge, row_flags
from .select import DEFAULT_MAX_OP_FACTS, choose_op_facts, notable_ops, op_fact_columns
from .thresholds import Thresholds
from .training import judge_roles, mark_training, training_network_fields

__all__ = ["DEFAULT_MAX_OP_FACTS", "FactSet", "build_facts", "clean_fact"]


@dataclass
class FactSet:
    network: dict[str, Any]
    ops: pd.DataFrame                      # one row per op, execution order, all ops
    op_facts: list[dict[str, Any]]         # the notable ops, ready to assert
    error_metric: str | None               # secondary metric for the plot
    warnings: list[str] = field(default_factory=list)
    join: GraphJoin | None = None          # the model graph joined to ``ops`` (``--graph``)

    def all_facts(self) -> list[dict[str, Any]]:
        return [self.network, *self.op_facts]


def build_facts(table: ComparisonTable, thresholds: Thresholds, *, judge: Judge, input_nodes: tuple[str, ...] = (),
                max_op_facts: int = DEFAULT_MAX_OP_FACTS, graph: Graph | None = None,
                fusion: FusionReport | None = None,
                wanted: Callable[[dict[str, Any], int], np.ndarray] | None = None) -> FactSet:
    """The facts of one comparison, its rows judged by ``judge`` (the run's judgement rules,
    engine/judgement.py). ``wanted(columns, n)``: the ops the run's rules may match, given
    the op facts' fields as columns (select.op_fact_columns); they become op facts too."""
    frame = table.frame
    warnings: list[str] = list(table.warnings)  # what the reader derived or assumed reaches the report
    rows = row_flags(frame, thresholds, judge)
    judge_roles(frame, rows)   # parameters, arguments, counters and checksums are not plain tensors
    ops = aggregate_ops(frame, rows)
    mark_training(frame, rows, ops)
    mark_identical_inputs(ops)
    mark_tool_flags(frame, rows, ops)
    mark_inputs(ops, input_nodes, warnings)
    join = join_graph(ops, graph, fusion) if graph is not None else None
    if join is not None:
        warnings.extend(join.warnings)
        if not join.matched:
            join = None
    # Everything that reads the per-row table (~100 bytes a row) is taken now; it is freed before
    # the op-level steps.
    output = network_output(frame, rows, ops, join)
    tensors = tensor_counts(table, rows)
    training = clean_fact(training_network_fields(frame, rows, ops))
    del rows
    mark_entries(ops, graph_inputs(ops, join) if join is not None else None,
                 clean_ops=int(thresholds.knob("propagation", "clean_ops")))
    output_index = output.pop("op_index", None)
    if output_index is None:
        ops["is_output"] = False
    else:
        ops["is_output"] = ops.index.isin(output_index if isinstance(output_index, list) else [output_index])
    if join is not None:
        mark_graph(ops, join)
    network = network_fact(table, tensors, ops, output)
    network.update(training)
    network.update(clean_fact(tool_flag_fields(ops)))
    if join is not None:  # graph facts only with --graph: a run without one reports what it always did
        network.update(clean_fact(unmatched_fields(frame, ops, join)))
        network.update(clean_fact(join.network_fields()))
    keep_span = int(thresholds.knob("fp16", "keep_fp32_span"))
    mark_fp16_sensitive(ops, examined_for_fp16(notable_ops(ops, join is not None)[2],
                                               ops["overflow_enters"].to_numpy(dtype=bool), keep_span))
    mark_inserted_normalization(ops)
    asked = wanted(op_fact_columns(ops, network, join is not None), len(ops)) if wanted is not None else None
    op_facts = choose_op_facts(ops, network, max_op_facts, warnings, graph=join is not None, keep_span=keep_span,
                               wanted=asked)
    summarise_overflow(network, ops, span=keep_span, most=int(thresholds.knob("fp16", "max_keep_fp32")))
    error_metric = next((m for m in ("relative_euclidean_distance", "max_abs_error", "mean_relative_error")
                         if m in table.present_metrics), None)
    return FactSet(network=network, ops=ops, op_facts=op_facts, error_metric=error_metric, warnings=warnings,
                   join=join)
