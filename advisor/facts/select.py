"""Op-fact selection: which ops become ``op`` facts for the rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .clean import clean_fact
from .fp16 import keep_fp32_names
from .ops import TOOL_FLAGS
from .training import TRAINING_OP_FIELDS, decorate_op_fact

DEFAULT_MAX_OP_FACTS = 2000


OP_FACT_FIELDS = ("op", "op_type", "golden_ops", "direction", "dtype", "position", "source_line", "tensors",
                  "in_cosine", "out_cosine", "in_red", "out_red", "in_scale", "out_scale", "out_max_abs_error",
                  "out_kl",
                  "is_input", "is_output", "input_source", "inputs_known", "inputs_from", "inputs_agree",
                  "out_deviates",
                  "error_enters", "hidden_entry", "local_drop", "entry_confidence", "out_overflow",
                  "overflow_enters", "out_nonfinite", "input_deviates", "fp16_sensitive", "absorbed",
                  "downstream_deviating", "inserted_norm_op", "inserted_norm_type",
                  *TOOL_FLAGS)


GRAPH_OP_FACT_FIELDS = ("graph_known", "fused_from", "fusion_passes", "is_fused", "narrowing_cast", "cast_from",
                        "cast_to", "before_first_entry")


def choose_op_facts(ops: pd.DataFrame, network: dict[str, Any], limit: int, warnings: list[str],
              graph: bool = False) -> list[dict]:
    primary = ops["overflow_enters"] | ops["input_deviates"] | ops["is_output"] | ops["is_input"]
    if graph:
        primary = primary | (ops["narrowing_cast"] & ops["before_first_entry"])
    primary = primary | ops["param_first"] | ops["arg_differs"] | ops["bits_first"]
    notable = primary | ops["error_enters"] | ops["hidden_entry"] | _first_marked(ops)
    fields = list(OP_FACT_FIELDS) + list(TRAINING_OP_FIELDS) + (list(GRAPH_OP_FACT_FIELDS) if graph else [])
    chosen = ops[notable]
    if len(chosen) > limit:
        # Keep every primary op, then the earliest entry points: the earliest cause leads anyway.
        rank = np.where(primary[notable], 0, 1)
        chosen = (chosen.assign(_rank=rank).sort_values(["_rank", "position"])
                  .head(limit).sort_values("position"))
        warnings.append(f"{int(notable.sum())} notable ops; rules saw the first {limit} "
                        f"(raise --max-op-facts to see all)")
    facts = []
    for index, op in zip(chosen.index, chosen[fields].to_dict("records"), strict=True):
        fact = {"id": f"op:{index}", "fact": "op", "index": int(index), **op}
        if op["overflow_enters"]:
            fact["keep_fp32"] = ",".join(keep_fp32_names(ops, int(op["position"])))
        fact["output_deviates"] = network["output_deviates"]
        decorate_op_fact(fact, network)
        facts.append(clean_fact(fact))
    return facts


def _first_marked(ops: pd.DataFrame) -> np.ndarray:
    """The first op msquickcmp marks IsPrecisionError: its own verdict, for rules to weigh."""
    marked = ops["tool_precision_error"].fillna(False).to_numpy(dtype=bool)
    first = np.zeros(len(ops), dtype=bool)
    if marked.any():
        first[int(np.argmax(marked))] = True
    return first
