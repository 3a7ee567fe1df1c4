"""Op-fact selection: which ops become ``op`` facts for the rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..defaults import DEFAULT_MAX_OP_FACTS  # noqa: F401 - re-exported: builder, pipeline
from ..ingest.table import text_mask
from .clean import clean_fact
from .fp16 import fp32_window, keep_fp32_names
from .ops import TOOL_FLAGS
from .schema import FACT_FIELDS
from .training import TRAINING_OP_FIELDS, decorate_op_fact

OP_FACT_FIELDS = ("op", "op_type", "golden_ops", "direction", "dtype", "position", "source_line", "tensors",
                  "in_cosine", "out_cosine", "in_red", "out_red", "in_scale", "out_scale", "out_max_abs_error",
                  "out_kl", "in_state_rel", "out_state_rel",
                  "is_input", "is_output", "input_source", "inputs_known", "inputs_from", "inputs_agree",
                  "inputs_identical", "inputs_identical_by",
                  "out_deviates",
                  "error_enters", "hidden_entry", "local_drop", "out_overflow", "inputs_overflow",
                  "overflow_enters", "out_nonfinite", "out_reference_nonfinite", "input_deviates", "fp16_sensitive",
                  "previous_entry_index", "next_entry_index", "clean_streak", "recovered_cosine",
                  "downstream_deviating", "inserted_norm_op", "inserted_norm_type",
                  *TOOL_FLAGS)


GRAPH_OP_FACT_FIELDS = ("graph_known", "fused_from", "fusion_passes", "is_fused", "narrowing_cast", "cast_from",
                        "cast_to", "before_first_entry")


def choose_op_facts(ops: pd.DataFrame, network: dict[str, Any], limit: int, warnings: list[str],
                    graph: bool = False, keep_span: int = 32, wanted: np.ndarray | None = None) -> list[dict]:
    """The op facts, chosen by what a verdict needs, never by position alone.

    ``wanted``: which ops each rule of the run may match (engine.opfilter over ``op_fact_columns``: a
    mask per rule). They, and only they, become facts, so a rule sees every op it asks for and an op
    no rule can match (the engine would drop it unasserted) never takes a place under ``limit``.
    Without ``wanted`` (a caller with no rules at hand), the notable ops become facts.

    Notable ops: where error enters (or shows first on an op's inputs), where an overflow starts, the
    network inputs and output, mismatched parameters/arguments/checksums, casts before the first
    entry (``--graph``), msquickcmp's first mark. When there are more facts than ``limit``:
    - always kept, whatever the limit: the inputs, the output (of several, the one the network fact
      names: the worst), the first and the last entry (the last entry is never followed by another,
      so no rule can call it absorbed: a deviating output always has an op to blame), the first
      overflow onset;
    - the other places go round the rules (``_ranked``), each rule's candidates ranked by tier:
      1. the other outputs (a training step's outputs are every head, loss and parameter gradient:
         33,557 on a 1M-row msprobe comparison, more than the default limit on their own);
      2. the other primary ops (overflow onsets, mismatches, casts);
      3. entries the network does not visibly recover from (no ``recovered_cosine``, then the
         lowest): the candidates for a problem node; ties by position;
      4. the other ops a rule asked for, in order.
    What is left out is counted on the network fact (``op_facts_left_out``) and in a warning."""
    primary, entries, notable = notable_ops(ops, graph)
    # The training fields that describe one op (mark_training) are columns only when an op has one.
    fields = [*OP_FACT_FIELDS, *(name for name in TRAINING_OP_FIELDS if name in ops),
              *(GRAPH_OP_FACT_FIELDS if graph else ())]
    network["notable_ops"] = int(notable.sum())
    # One row per rule (engine.opfilter); the notable ops as one row when no rules are at hand.
    by_rule = np.atleast_2d(wanted) if wanted is not None else notable[np.newaxis]
    candidates = by_rule.any(axis=0)
    asked = candidates & ~notable
    chosen = ops[candidates]
    if len(chosen) > limit:
        outputs = ops["is_output"].to_numpy(dtype=bool)
        must = ops["is_input"].to_numpy(dtype=bool) | _named_output(ops, network, outputs)
        must |= _first(entries) | _first(entries[::-1])[::-1] | _first(ops["overflow_enters"].to_numpy(dtype=bool))
        tier = np.where(must, 0, np.where(outputs, 1, np.where(primary.to_numpy(dtype=bool), 2,
                                                                np.where(asked, 4, 3))))
        chosen = ops.loc[_ranked(ops, tier, by_rule, limit)]
        left_out = int(candidates.sum()) - len(chosen)
        outputs = outputs & candidates
        outputs_left = int(outputs.sum()) - int(chosen["is_output"].to_numpy(dtype=bool).sum())
        warnings.append(f"{int(candidates.sum())} ops {'may match a rule' if wanted is not None else 'are notable'}; "
                        f"rules saw {len(chosen)} of them (the inputs, the output, the first and last entry and "
                        f"the first overflow onset, then each rule's outputs, overflow onsets and mismatches, "
                        f"entries least recovered from and other ops in turn); {left_out} left out: "
                        f"raise --max-op-facts to see all" + (
                            f"; {outputs_left} of them are network outputs (of {int(outputs.sum())})"
                            if outputs_left else ""))
        network["op_facts_left_out"] = left_out
    else:
        network["op_facts_left_out"] = 0
    network["op_facts"] = len(chosen)
    facts = []
    window = fp32_window(ops) if chosen["overflow_enters"].sum() > 1 else None
    # Column by column, each as Python values (clean_fact makes them plain): to_dict("records") boxes
    # every cell of every extension column on its own, 3/4 of this function on 33k ops.
    columns = [chosen[name].tolist() for name in fields]
    for index, values in zip(chosen.index, zip(*columns, strict=True), strict=True):
        op = dict(zip(fields, values, strict=True))
        fact = {"id": f"op:{index}", "fact": "op", "index": int(index), **op}
        if op["overflow_enters"]:
            fact["keep_fp32"] = ",".join(keep_fp32_names(ops, int(op["position"]), keep_span, window))
        fact["output_deviates"] = network["output_deviates"]
        decorate_op_fact(fact, network)
        facts.append(clean_fact(fact))
    return facts


def op_fact_columns(ops: pd.DataFrame, network: dict[str, Any], graph: bool) -> dict[str, Any]:
    """The op facts' fields as columns of ``ops`` (or one value every op fact carries), for
    engine.opfilter: what is not here (fields set on the fact alone) counts as "may match" there."""
    fields = [*OP_FACT_FIELDS, *TRAINING_OP_FIELDS, *(GRAPH_OP_FACT_FIELDS if graph else ())]
    # Every other field of the op fact schema is absent from every op fact of this run...
    columns: dict[str, Any] = {name: None for name in FACT_FIELDS["op"] if name not in SET_ON_FACT}
    columns.update({name: ops[name] for name in fields if name in ops})
    columns["index"] = ops.index.to_numpy()
    columns["output_deviates"] = network["output_deviates"]
    columns["training"] = True if network.get("training") else None
    return columns


# ...except these, set on single facts (choose_op_facts, training.decorate_op_fact): "may match".
SET_ON_FACT = frozenset({"id", "keep_fp32", "differing_parameters", "parameters_compared", "differing_buffers",
                         "differing_parameter_share", "differing_parameter_list"})


def notable_ops(ops: pd.DataFrame, graph: bool) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(primary, entries, notable): the ops choose_op_facts keeps first, where error enters, and
    every op that becomes a fact when the limit allows (see there)."""
    primary = ops["overflow_enters"] | ops["input_deviates"] | ops["is_output"] | ops["is_input"]
    if graph:
        primary = primary | (ops["narrowing_cast"] & ops["before_first_entry"])
    primary = primary | ops["param_first"] | ops["arg_differs"] | ops["bits_first"] | ops["mode_differs"]
    entries = (ops["error_enters"] | ops["hidden_entry"]).to_numpy(dtype=bool)
    return primary, entries, primary.to_numpy(dtype=bool) | entries | _first_marked(ops)


def _ranked(ops: pd.DataFrame, tier: np.ndarray, by_rule: np.ndarray, limit: int) -> pd.Index:
    """The candidates of ``by_rule`` (a mask per rule) kept under ``limit``, in position order; tier 0
    whatever the limit. Each rule's candidates are ranked by tier, then the entries least recovered
    from, then position, and the places go round the rules: every rule's first candidate, then every
    rule's second... so no rule's candidates (a team rule's Softmax ops) are crowded out by another's
    (twenty thousand overflow onsets)."""
    candidates = np.flatnonzero(by_rule.any(axis=0))
    position = ops["position"].to_numpy()
    recovered = ops["recovered_cosine"].to_numpy(dtype=float)[candidates]
    order = candidates[np.lexsort((position[candidates],
                                   np.where(np.isnan(recovered), -np.inf, recovered), tier[candidates]))]
    turn = np.full(len(order), len(order), dtype=np.int64)      # each op's earliest place in any rule's list
    for mask in by_rule[:, order]:
        turn = np.where(mask, np.minimum(turn, np.cumsum(mask) - 1), turn)
    places = np.lexsort((np.arange(len(order)), turn, tier[order] != 0))
    kept = order[places[(tier[order][places] == 0) | (np.arange(len(order)) < limit)]]
    return ops.index[kept[np.argsort(position[kept], kind="stable")]]


def _named_output(ops: pd.DataFrame, network: dict[str, Any], outputs: np.ndarray) -> np.ndarray:
    """The output the network fact names (the worst of several); every output when it names none."""
    if outputs.sum() <= 1 or not network.get("output_op"):
        return outputs
    return outputs & text_mask(ops["op"], lambda texts: texts == network["output_op"])


def _first(mask: np.ndarray) -> np.ndarray:
    """Only the first True of ``mask``."""
    first = np.zeros(len(mask), dtype=bool)
    if mask.any():
        first[int(np.argmax(mask))] = True
    return first


def _first_marked(ops: pd.DataFrame) -> np.ndarray:
    """The first op msquickcmp marks IsPrecisionError: its own verdict, for rules to weigh."""
    return _first(ops["tool_precision_error"].fillna(False).to_numpy(dtype=bool))
