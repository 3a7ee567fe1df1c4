"""The network fact: whole-network counts, the network output, ops dumped on one side only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..ingest.table import ComparisonTable, row_at
from ..tensors.dump_names import parse_dump_name
from .clean import clean_fact
from .graph_join import MAX_LISTED, GraphJoin
from .propagation import compared_outputs
from .roles import ROLES
from .rows import compute_dtype, dtype_counts, first_seen, integer_rows


def unmatched_fields(frame: pd.DataFrame, ops: pd.DataFrame, join: GraphJoin | None) -> dict[str, Any]:
    """Ops dumped on one side only (every row npu_only, or every row golden_only): counts and names.
    Array work over the rows, then one look-up per unmatched op."""
    member = (frame["op_index"].notna().to_numpy() & ~frame["is_network_output"].fillna(False).to_numpy(dtype=bool)
              & frame["op_index"].isin(ops.index).fillna(False).to_numpy(dtype=bool))
    if not member.any() or not len(ops):
        return {"unmatched_ops": 0, "npu_only_ops": 0, "golden_only_ops": 0}
    codes = np.searchsorted(ops.index.to_numpy(), frame["op_index"].to_numpy()[member])
    sides = {}
    for column in ("npu_only", "golden_only"):
        other = ~frame[column].fillna(False).to_numpy(dtype=bool)[member]
        sides[column] = np.bincount(codes, weights=other, minlength=len(ops)) == 0
    npu_only = np.flatnonzero(sides["npu_only"] & (ops["tensors"].to_numpy() > 0))
    golden_only = np.flatnonzero(sides["golden_only"] & (ops["tensors"].to_numpy() > 0))
    names = ops["op"].astype(object).to_numpy()
    fields: dict[str, Any] = {"unmatched_ops": len(npu_only) + len(golden_only), "npu_only_ops": len(npu_only),
                              "golden_only_ops": len(golden_only)}
    if len(npu_only):
        fields["npu_only_names"] = ",".join(str(names[p]) for p in npu_only[:MAX_LISTED])
    if len(golden_only):
        fields["golden_only_names"] = ",".join(str(names[p]) for p in golden_only[:MAX_LISTED])
    if join is not None and len(npu_only):
        nodes = join.graph.nodes
        fields["npu_only_inserted"] = sum(1 for p in npu_only if any(nodes[i].is_inserted for i in join.nodes_of(p)))
    return fields


def network_output(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame,
                    join: GraphJoin | None = None) -> dict[str, Any]:
    """The network output: the Node_Output row, else the ops that produce the graph's outputs (with
    ``--graph``), else the forward outputs no later call takes (msprobe, see unconsumed_outputs), else
    the last op with a compared output."""
    net_out = rows[rows["is_net_out"] & rows["comparable"]]
    if len(net_out):
        cos = net_out["cos"].min()
        golden_file = frame.loc[net_out.index[0], "golden_ops"]
        return {"output_source": "Node_Output", "output_op": _output_op_name(golden_file),
                "output_cosine": cos, "output_red": net_out["red"].max(),
                "output_deviates": bool(net_out["deviates"].any()), "output_known": bool(np.isfinite(cos)),
                "output_nonfinite": bool((net_out["nonfinite"] | net_out["both_nonfinite"]).any()),
                "output_line": int(net_out["line"].iloc[0])}
    if join is not None:
        outputs = join.output_ops(compared_outputs(ops))
        if outputs:
            chosen = ops.iloc[sorted(outputs)]
            worst = row_at(chosen, int(chosen["out_cosine"].fillna(-2.0).to_numpy().argmin()))
            return {"output_source": "graph_output", "output_op": worst["op"], "op_index": list(chosen.index),
                    "output_ops": ",".join(str(op) for op in chosen["op"][:MAX_LISTED]),
                    "output_cosine": chosen["out_cosine"].min(), "output_red": chosen["out_red"].max(),
                    "output_deviates": bool(chosen["out_deviates"].any()), "output_known": True,
                    "output_nonfinite": bool(_nonfinite(chosen).any()),
                    "output_line": int(worst["source_line"])}
    # An output counts as compared when any judged metric exists (statistics-only comparisons
    # such as msprobe summary mode have no cosine, only a scale from the norms).
    compared = ops[ops["out_cosine"].notna() | ops["out_red"].notna() | ops["out_scale"].notna()
                   | ops["out_state_rel"].notna() | ops["out_nonfinite"]]
    heads = unconsumed_outputs(frame, rows, ops)
    if heads is not None and heads.any():
        chosen = ops[heads]
        worst = row_at(chosen, int(_badness(chosen).argmax()))
        return {"output_source": "unconsumed_outputs", "output_op": worst["op"], "op_index": list(chosen.index),
                "output_ops": ",".join(str(op) for op in chosen["op"][:MAX_LISTED]), "output_count": len(chosen),
                "output_cosine": chosen["out_cosine"].min(), "output_red": chosen["out_red"].max(),
                "output_scale": chosen["out_scale"].max(), "output_nonfinite": bool(_nonfinite(chosen).any()),
                "output_deviates": bool(chosen["out_deviates"].any()), "output_known": True,
                "output_line": int(worst["source_line"])}
    if not len(compared):
        return {"output_source": "none", "output_known": False, "output_deviates": False, "output_nonfinite": False}
    last = row_at(compared, len(compared) - 1)
    source = "last_op" if last.name == ops.index[-1] else "last_compared_op"
    return {"output_source": source, "output_op": last["op"], "op_index": last.name,
            "output_cosine": last["out_cosine"], "output_red": last["out_red"], "output_scale": last["out_scale"],
            "output_nonfinite": bool(last["out_nonfinite"] or last["out_both_nonfinite"]),
            "output_deviates": bool(last["out_deviates"]), "output_known": True,
            "output_line": int(last["source_line"])}


def _nonfinite(ops: pd.DataFrame) -> np.ndarray:
    """Ops whose target output holds inf or NaN, whether or not the reference's does too."""
    return ops["out_nonfinite"].to_numpy(dtype=bool) | ops["out_both_nonfinite"].to_numpy(dtype=bool)


def _badness(ops: pd.DataFrame) -> np.ndarray:
    """How far each op's output is from agreeing, for naming the worst of several outputs."""
    cosine = 1.0 - ops["out_cosine"].fillna(1.0).to_numpy(dtype=float)
    return (ops["out_nonfinite"].to_numpy(dtype=bool) * 4.0 + ops["out_deviates"].to_numpy(dtype=bool) * 2.0
            + np.fmax(np.nan_to_num(ops["out_scale"].to_numpy(dtype=float)), cosine))


# The statistics that identify a tensor when it is passed from one call to the next (the bench side:
# the reference run, whose tensors are what the target's should be). Not the shape: a transpose or a
# view msprobe does not dump changes it and keeps every statistic.
FLOW_KEY = ("golden_max", "golden_min", "golden_mean", "golden_norm")


def unconsumed_outputs(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame) -> np.ndarray | None:
    """The network outputs of a comparison that lists each call's inputs (msprobe): the forward ops
    with a float output that no later forward call takes as data (the same statistics on the
    reference side), every head of a multi-output network and a training step's loss; and the ops
    that compute a parameter's gradient. None when the comparison cannot say (no forward direction,
    no statistics, inputs not listed)."""
    if "role" not in rows or frame["golden_norm"].isna().all():
        return None
    forward = (frame["direction"] == "forward").fillna(False).to_numpy(dtype=bool)
    if not forward.any():
        return None
    role = rows["role"].array.codes
    keyed = rows["comparable"].to_numpy(dtype=bool) & forward & frame["golden_norm"].notna().to_numpy(dtype=bool)
    outputs = keyed & (role == ROLES.index("output")) & ~integer_rows(frame)
    inputs = keyed & (role == ROLES.index("data"))
    if not outputs.any() or not inputs.any():
        return None
    key = frame.loc[:, list(FLOW_KEY)]
    position = np.arange(len(frame))
    produced = key[outputs].assign(at=position[outputs])
    taken = key[inputs].assign(taken_at=position[inputs])
    matched = produced.merge(taken, on=list(FLOW_KEY), how="left")
    later = (matched["taken_at"] > matched["at"]).groupby(matched["at"]).any()
    free_rows = later.index.to_numpy()[~later.to_numpy(dtype=bool)]
    # A training step's other outputs: the gradients of its parameters, which the update uses.
    free_rows = np.union1d(free_rows, np.flatnonzero(rows["param_grad"].to_numpy(dtype=bool)))
    op_index = frame["op_index"].to_numpy(dtype=np.float64, na_value=np.nan)[free_rows]
    return ops.index.isin(op_index[np.isfinite(op_index)].astype(np.int64))


def _output_op_name(golden_file: object) -> str:
    """The op a Node_Output row's golden file was dumped from (``Softmax_111.0.1714993867004658.npy``
    -> ``Softmax_111``); the cell as written when it is no dump file name; ``Node_Output`` when empty."""
    if golden_file is None or pd.isna(golden_file) or not str(golden_file).strip():
        return "Node_Output"
    text = str(golden_file).strip()
    parsed = parse_dump_name(text.split(",")[0].strip().rsplit("/", 1)[-1])
    return parsed.op if parsed is not None else text


def tensor_counts(table: ComparisonTable, rows: pd.DataFrame) -> dict[str, Any]:
    """What the network fact says about the rows (counts and dtypes), taken before ``rows`` is freed."""
    comparable = rows["comparable"].to_numpy()
    stored = rows["stored_dtype"].array
    dtypes = dtype_counts(rows, comparable)
    return {
        "rows": len(table.frame),
        "compared_tensors": int(comparable.sum()),
        "deviating_tensors": int(rows["deviates"].sum()),
        "dtype": str(dtypes.index[0]) if len(dtypes) else "unknown",
        "compute_dtype": compute_dtype(first_seen(stored.codes, stored.categories, comparable)) or "unknown",
        "has_fp16": bool((stored.categories == "float16").any()),  # the categories are the dtypes present
    }


def network_fact(table: ComparisonTable, tensors: dict[str, Any], ops: pd.DataFrame,
                 output: dict[str, Any]) -> dict[str, Any]:
    """``tensors``: ``tensor_counts`` of the rows."""
    deviating = np.flatnonzero(ops["out_deviates"].to_numpy(dtype=bool))   # positions: no copy of the ops
    fact: dict[str, Any] = {
        "id": "network", "fact": "network",
        "rows": tensors["rows"], "ops": len(ops),
        "compared_tensors": tensors["compared_tensors"],
        "deviating_tensors": tensors["deviating_tensors"],
        "deviating_ops": len(deviating),
        "entry_points": int((ops["error_enters"] | ops["hidden_entry"]).sum()),
        "overflow_ops": int(ops["out_overflow"].sum()),
        "nonfinite_ops": int(ops["out_nonfinite"].sum()),
        "input_ops": int(ops["is_input"].sum()),
        "input_deviates": bool(ops["input_deviates"].any()),
        "dtype": tensors["dtype"],
        "compute_dtype": tensors["compute_dtype"],
        "has_fp16": tensors["has_fp16"],
        "format": table.format,
        **output,
    }
    if len(deviating):
        fact["first_deviating_index"] = int(ops.index[deviating[0]])
        fact["first_deviating_op"] = str(ops["op"].iloc[deviating[0]])
    return clean_fact(fact)
