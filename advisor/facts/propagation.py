"""Propagation: where error enters (local error) and where it is only inherited (accumulated).

An op *deviates* when one of its output tensors is outside the dtype's thresholds; error *enters* at an
op that deviates while its inputs agree. When the comparison has input rows for an op
(``<op>:input:<n>``), "inputs agree" is read from them; otherwise from its graph predecessors
(``--graph``), else from the op before it in execution order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..ingest.table import coded_from, lower_isin
from .graph_join import GraphJoin, narrowing
from .ops import gradient_owner
from .training import IDENTICAL_BY


def compared_outputs(ops: pd.DataFrame) -> np.ndarray:
    """Ops whose outputs were compared (a cosine, or a non-finite target)."""
    return (ops["out_cosine"].notna() | ops["out_nonfinite"]).to_numpy(dtype=bool)


def graph_inputs(ops: pd.DataFrame, join: GraphJoin) -> dict[str, np.ndarray]:
    """For ops without input rows: what their graph predecessors' outputs say. Only those ops walk
    the graph (a comparison that lists input rows walks nothing)."""
    n = len(ops)
    known = np.zeros(n, dtype=bool)
    deviates = np.zeros(n, dtype=bool)
    overflow = np.zeros(n, dtype=bool)
    cosine = np.full(n, np.nan)
    compared = compared_outputs(ops)
    out_dev = ops["out_deviates"].to_numpy(dtype=bool)
    out_over = ops["out_overflow"].to_numpy(dtype=bool)
    out_cos = ops["out_cosine"].to_numpy(dtype=float)
    known_ops = join.known
    for position in np.flatnonzero((ops["in_rows"] == 0).to_numpy() & known_ops):
        if not known_ops[position]:
            continue
        preds = join.predecessor_ops(int(position), compared)
        if preds:
            known[position] = True
            deviates[position] = out_dev[preds].any()
            overflow[position] = out_over[preds].any()
            cosine[position] = np.fmin.reduce(out_cos[preds])
    return {"known": known, "deviates": deviates, "overflow": overflow, "cosine": cosine}


def mark_graph(ops: pd.DataFrame, join: GraphJoin) -> None:
    """Fusion evidence per op, and the Casts that narrow precision before the first problem node."""
    for name, values in join.fusion_columns(ops).items():
        ops[name] = values
    n = len(ops)
    narrowing_cast = np.zeros(n, dtype=bool)
    cast_from = np.full(n, None, dtype=object)
    cast_to = np.full(n, None, dtype=object)
    casts = np.flatnonzero(lower_isin(ops["op_type"], {"cast"}).to_numpy(dtype=bool))
    in_dtype = ops["in_dtype"].astype(object).to_numpy()
    out_dtype = ops["out_dtype"].astype(object).to_numpy()
    for position in casts:
        graph_from, graph_to = join.cast_dtypes(int(position))
        source = in_dtype[position] if isinstance(in_dtype[position], str) else graph_from
        target = out_dtype[position] if isinstance(out_dtype[position], str) else graph_to
        cast_from[position], cast_to[position] = source, target
        narrowing_cast[position] = narrowing(source, target)
    ops["narrowing_cast"] = narrowing_cast
    ops["cast_from"] = pd.array(cast_from, dtype="string")
    ops["cast_to"] = pd.array(cast_to, dtype="string")
    entries = (ops["error_enters"] | ops["hidden_entry"]).to_numpy(dtype=bool)
    first = int(np.argmax(entries)) if entries.any() else -1   # no entry: nothing is "before" one
    ops["before_first_entry"] = ops["position"].to_numpy() < first


def mark_identical_inputs(ops: pd.DataFrame) -> None:
    """Ops whose data inputs are identical on both sides (``inputs_identical``, and what shows it:
    ``inputs_identical_by`` values / checksum / statistics) and whose parameters and arguments do not
    differ: their output is judged against their own rounding (the ``identical_inputs`` limits of
    knowledge/thresholds.yaml), not the end-to-end allowance of their dtype. An op that moves its
    output beyond its own rounding on identical inputs is where error enters, however small."""
    identical = ((ops["in_rows"] > 0).to_numpy(dtype=bool) & ops["in_identical"].to_numpy(dtype=bool)
                 & ~ops["param_differs"].to_numpy(dtype=bool) & ~ops["arg_differs"].to_numpy(dtype=bool))
    ops["inputs_identical"] = identical
    codes = np.where(identical, ops["in_identical_by"].to_numpy(), -1).astype(np.int8)
    ops["inputs_identical_by"] = pd.Categorical.from_codes(codes, categories=IDENTICAL_BY)
    ops["out_deviates"] = ops["out_deviates"].to_numpy(dtype=bool) | (identical & ops["out_deviates_own"].to_numpy(
        dtype=bool))


def mark_entries(ops: pd.DataFrame, graph: dict[str, np.ndarray] | None = None, *, clean_ops: int = 3) -> None:
    """Where error enters (local error) as opposed to where it is inherited (accumulated).

    An op's inputs are read from its input rows; without them, from its graph predecessors' outputs
    when a graph was given; else from the op before it in execution order."""
    out_dev = ops["out_deviates"]
    prev_out_dev = out_dev.shift(1, fill_value=False).astype(bool)
    # (a module's parameter gradients are part of its backward call, not an op before it)
    owner = gradient_owner(ops)
    earlier_dev = (out_dev & (owner < 0)).cumsum().shift(1, fill_value=0) > 0
    has_inputs = ops["in_rows"] > 0
    by_graph = np.zeros(len(ops), dtype=bool) if graph is None else graph["known"] & ~has_inputs.to_numpy()
    ops["inputs_known"] = has_inputs
    ops["inputs_from"] = coded_from(np.where(has_inputs, 0, np.where(by_graph, 1, 2)),
                                    ["input_rows", "graph", "previous_op"])
    prev_agree = ~prev_out_dev.to_numpy(dtype=bool)
    if graph is not None:
        prev_agree = np.where(by_graph, ~graph["deviates"], prev_agree)
    # A module's parameter gradients (msprobe L0 lists them just before the module's backward call)
    # are computed by that call from its inputs: they agree when its inputs do.
    owned = owner >= 0
    in_dev = ops["in_deviates"].to_numpy(dtype=bool)
    prev_agree = np.where(owned, ~in_dev[np.maximum(owner, 0)], prev_agree)
    # An op whose parameters or arguments differ does not receive agreeing inputs, whatever its data.
    ops["inputs_agree"] = (np.where(has_inputs, ~ops["in_deviates"], prev_agree)
                           & ~ops["param_differs"].to_numpy(dtype=bool) & ~ops["arg_differs"].to_numpy(dtype=bool))
    ops["error_enters"] = out_dev & ops["inputs_agree"]
    # The first disagreement of the whole network shows on an op's *inputs*: it entered in an op the
    # comparison does not cover (a target-only Cast/TransData, an op dumped on one side only).
    ops["hidden_entry"] = has_inputs & ops["in_deviates"] & ~earlier_dev & ~ops["is_input"]
    ops["hidden_entry"] &= ~entered_in_enclosing_module(ops)
    previous_cosine = ops["out_cosine"].shift(1)
    prev_overflow = ops["out_overflow"].shift(1, fill_value=False).astype(bool)
    if graph is not None:
        previous_cosine = previous_cosine.where(~by_graph, graph["cosine"])
        prev_overflow = prev_overflow.where(~by_graph, graph["overflow"])
    reference = ops["in_cosine"].where(has_inputs, previous_cosine)
    ops["local_drop"] = (reference - ops["out_cosine"]).where(ops["error_enters"])
    ops["inputs_overflow"] = np.where(has_inputs, ops["in_overflow"], prev_overflow).astype(bool)
    ops["overflow_enters"] = ops["out_overflow"] & ~ops["inputs_overflow"]
    # Ops that deviate after this one: what a root cause here would explain.
    after = out_dev[::-1].cumsum()[::-1] - out_dev
    ops["downstream_deviating"] = after.astype("int64")
    recovery_features(ops, has_inputs, clean_ops)


def entered_in_enclosing_module(ops: pd.DataFrame, reach: int = 64) -> np.ndarray:
    """Hidden entries that are the work of the module enclosing them. msprobe lists a module when it
    returns, so at level L0 a child module (``Module.attention.proj.Linear``) comes before its parent
    (``Module.attention.MaskedAttention``): when code of the parent's own between two children (a
    matmul, a softmax) goes wrong, the first disagreement shows on the next child's inputs, and the
    parent, listed within ``reach`` ops after it, is where error enters (its inputs agree, its output
    does not)."""
    found = np.zeros(len(ops), dtype=bool)
    hidden = np.flatnonzero(ops["hidden_entry"].to_numpy(dtype=bool))
    if not len(hidden):
        return found
    names = ops["op"].astype(object).to_numpy()
    enters = ops["error_enters"].to_numpy(dtype=bool)
    for at in hidden:
        path = module_path(names[at])
        if path is None:
            continue
        for later in range(at + 1, min(at + 1 + reach, len(ops))):
            parent = module_path(names[later])
            if parent is not None and path.startswith(parent + ".") and enters[later]:
                found[at] = True
                break
    return found


def module_path(name: object) -> str | None:
    """``attention.proj`` of ``Module.attention.proj.Linear.forward.0`` (``Cell.`` for MindSpore);
    None for an API call or a name of another form."""
    if not isinstance(name, str) or not name.startswith(("Module.", "Cell.")):
        return None
    parts = name.split(".")
    for at, word in enumerate(parts):
        if word in ("forward", "backward") and at >= 3:
            return ".".join(parts[1:at - 1])
    return None


def _segment_max(values: np.ndarray, starts: np.ndarray, stops: np.ndarray, empty: float) -> np.ndarray:
    """``values[start:stop].max()`` for each (start, stop), ``empty`` where the span is empty. The
    spans must not overlap and be in order (one reduceat over the interleaved bounds)."""
    out = np.full(len(starts), empty, dtype=float)
    valid = starts < stops
    if valid.any():
        bounds = np.column_stack((starts[valid], stops[valid])).ravel()
        padded = np.append(values.astype(float), empty)        # a stop may be len(values)
        out[valid] = np.maximum.reduceat(padded, bounds)[::2]
    return out


def recovery_features(ops: pd.DataFrame, has_inputs: pd.Series, clean_ops: int) -> None:
    """What happens between an entry (``error_enters`` or ``hidden_entry``) and the next one, for
    rules to judge whether the network absorbed it (a transformer's residual stream drowns a small
    attention error; a later Softmax over the wrong axis does not recover):

    * ``previous_entry_index`` / ``next_entry_index``: the entries before and after it;
    * ``clean_streak``: the longest run of ops between it and the next entry (or the end) whose
      inputs and outputs agree;
    * ``recovered_cosine``: the highest output-cosine level that ``clean_ops`` consecutive agreeing
      ops hold in that span (absent when no such run exists). An error merely shrunk under the
      threshold sits near 0.999; clean runs keep 0.9999 and more.

    Measured for entries only; one reduceat over all of them, no loop over ops."""
    n = len(ops)
    entry = (ops["error_enters"] | ops["hidden_entry"]).to_numpy(dtype=bool)
    positions = np.flatnonzero(entry)
    index = ops.index.to_numpy()
    for column in ("previous_entry_index", "next_entry_index", "clean_streak"):
        ops[column] = pd.Series(pd.NA, index=ops.index, dtype="Int64")
    ops["recovered_cosine"] = np.nan
    if not len(positions):
        return
    agree = (~ops["out_deviates"] & ~(has_inputs & ops["in_deviates"])).to_numpy(dtype=bool)
    # streak[i]: how many consecutive agreeing ops end at position i.
    last_break = np.where(agree, -1, np.arange(n))
    streak = np.arange(n) - np.maximum.accumulate(last_break)
    # held[i]: the lowest cosine of the clean_ops agreeing ops ending at i (-inf: not all agree).
    level = np.where(agree, ops["out_cosine"].fillna(1.0).to_numpy(dtype=float), -np.inf)
    held = pd.Series(level).rolling(max(int(clean_ops), 1)).min().fillna(-np.inf).to_numpy()
    following = np.append(positions[1:], n)
    longest = _segment_max(streak, positions + 1, following, 0.0)
    recovered = _segment_max(held, positions + int(clean_ops), following, -np.inf)
    column = ops.columns.get_loc
    ops.iloc[positions, column("clean_streak")] = longest.astype(np.int64)
    ops.iloc[positions, column("recovered_cosine")] = np.where(np.isfinite(recovered), recovered, np.nan)
    ops.iloc[positions[:-1], column("next_entry_index")] = index[positions[1:]]
    ops.iloc[positions[1:], column("previous_entry_index")] = index[positions[:-1]]
