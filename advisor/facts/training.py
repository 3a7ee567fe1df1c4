"""Training-comparison facts: which rows are judged, which parameters, arguments and checksums differ.

Three questions the thresholds alone answer wrongly on a training comparison (msprobe):

* **Was the tensor judged at all?** A row without a metric (reference all zeros, shapes that differ,
  no statistics) is not "within thresholds": it is counted and listed apart (``judged`` /
  ``unjudged_reason``), and a comparison that judged nothing is not a verdict.
* **What differs at an op's inputs?** The data it computes on (``in_*``, from ``data`` rows only),
  its parameters and buffers (``param_*``: the runs hold different weights) or its arguments
  (``arg_*``: the call itself differs). Buffer counters are never judged.
* **Where do the bits start to differ?** In MD5/CRC mode the first op in execution order with a
  differing checksum (``bits_*``), and whether its two sides even have the same dtype.

Everything here is measured; the rules in ``rules/core/training`` decide what it means.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..ingest.msprobe_names import split_tensor_names
from ..ingest.table import equal_texts, row_at
from .modes import mark_mode_evidence
from .ops import gradient_owner
from .roles import (
    ROLES,
    STATE_ROLES,
    STATISTICS,
    TENSOR_ROLES,
    argument_values,
    backward_rows,
    load_roles,
    parameter_gradients,
    rounding_tolerance,
    tensor_roles,
)

MAX_LISTED = 10
AGGREGATED_ROLES = ("data", "output", "gradient")   # the rows an op's in_* / out_* summaries are made of


def judge_roles(frame: pd.DataFrame, rows: pd.DataFrame) -> None:
    """Add the role columns to ``rows`` and re-judge the rows that are not plain tensors."""
    catalog = load_roles()
    backward = backward_rows(frame)
    role, role_name = tensor_roles(frame, backward)   # codes into ROLES, not a million strings
    comparable = rows["comparable"].to_numpy(dtype=bool)
    md5 = frame["md5_match"]
    has_md5 = comparable & md5.notna().to_numpy(dtype=bool)
    bits_differ = has_md5 & ~md5.fillna(True).to_numpy(dtype=bool)
    rel = rows["state_rel"].to_numpy()   # measured by row_flags
    argument = _role_in(role, ("argument",))
    counter = _role_in(role, ("counter",))
    tolerance = rounding_tolerance(frame, catalog.tolerance, catalog.rounding_units)
    # Checksums of two dtypes never agree: a parameter held in float16 against float32 says nothing.
    with np.errstate(invalid="ignore"):
        changed = (rel > tolerance) | (bits_differ & equal_texts(frame["npu_dtype"], frame["golden_dtype"]))
    if "npu_arg" in frame:
        npu_text, golden_text = frame["npu_arg"], frame["golden_arg"]
        changed |= (npu_text.notna() & golden_text.notna() & (npu_text != golden_text)).fillna(False).to_numpy(
            dtype=bool)
    # Only parameters make "different weights": buffers (running mean/var) are state a training-mode
    # forward updates but does not compute with, so two reruns of one process differ there harmlessly.
    state_differs = comparable & _role_in(role, ("parameter",)) & changed
    rows["buffer_differs"] = comparable & _role_in(role, ("buffer",)) & changed
    deviates = rows["deviates"].to_numpy(dtype=bool) & ~argument & ~counter
    rows["deviates"] = deviates | state_differs | rows["buffer_differs"].to_numpy(dtype=bool)
    rows["backward"] = backward
    rows["param_grad"] = comparable & parameter_gradients(frame, backward) if backward.any() else np.zeros(
        len(frame), dtype=bool)
    rows["role"] = pd.Categorical.from_codes(role, categories=ROLES)   # one byte per row
    rows["role_name"] = role_name
    rows["state_differs"] = state_differs
    rows["arg_differs"] = comparable & argument & changed
    rows["arg_compared"] = comparable & argument & (np.isfinite(rel) | has_md5)
    rows["bits_differ"] = bits_differ
    rows["has_checksum"] = has_md5
    rows["identical_by"] = identical_by(frame, comparable, rel, has_md5 & ~bits_differ, catalog.tolerance)
    rows["identical"] = rows["identical_by"].to_numpy() >= 0
    tensor = _role_in(role, TENSOR_ROLES)
    measured = (np.isfinite(rows["cos"].to_numpy()) | np.isfinite(rows["red"].to_numpy())
                | np.isfinite(rows["scale"].to_numpy()) | rows["nonfinite"].to_numpy(dtype=bool)
                | rows["deviates"].to_numpy(dtype=bool) | np.isfinite(rel) | has_md5)
    judged = comparable & tensor & measured
    rows["judged"] = judged
    rows["unjudged_reason"] = _unjudged_reasons(frame, comparable & tensor & ~judged)
    rows["aggregated"] = _role_in(role, AGGREGATED_ROLES)


# What shows two tensors equal, strongest first (an op's inputs are as identical as their weakest).
IDENTICAL_BY = ("values", "checksum", "statistics")


def identical_by(frame: pd.DataFrame, comparable: np.ndarray, rel: np.ndarray, same_bits: np.ndarray,
                 tolerance: float) -> np.ndarray:
    """Per row, what shows its two tensors hold the same values, as a code into IDENTICAL_BY (-1:
    nothing does, or the dtypes differ, or an element-wise metric shows a difference): no element
    differs (max |x - y| = 0), the checksums match, or every printed statistic (max and min among them)
    agrees within ``tolerance`` of the tensor's scale (``rel``, see
    roles.state_difference: the rounding of a reduction summed in another order, as a mirrored image's
    mean shows; statistics cannot see the order of the values)."""
    basis = np.full(len(frame), -1, dtype=np.int8)
    # Statistics only where they are printed in full: msprobe's max and min beside its mean and norm
    # (msaccucmp's (mean; std) cell has three decimals: equal there is not equal).
    printed = np.isfinite(frame["golden_max"].to_numpy()) & np.isfinite(frame["golden_min"].to_numpy())
    with np.errstate(invalid="ignore"):
        basis[(rel <= tolerance) & printed] = 2
    basis[same_bits] = 1
    error = frame["max_abs_error"].to_numpy()
    basis[error == 0] = 0
    with np.errstate(invalid="ignore"):   # an element-wise metric that shows a difference has the last word
        differs = (error > 0) | (frame["cosine"].to_numpy() < 1.0)
    same = comparable & equal_texts(frame["npu_dtype"], frame["golden_dtype"]) & ~differs
    return np.where(same, basis, -1).astype(np.int8)


def _role_in(codes: np.ndarray, names: Any) -> np.ndarray:
    """Per row: whether its role (codes into ROLES, the categories of ``tensor_roles``) is one of ``names``."""
    return np.isin(codes, [at for at, name in enumerate(ROLES) if name in set(names)])


UNJUDGED_REASONS = ("no metric or statistics", "reference all zeros", "shapes differ")


def _unjudged_reasons(frame: pd.DataFrame, unjudged: np.ndarray) -> pd.Categorical:
    """Per row: why a tensor row was not judged (a Categorical of UNJUDGED_REASONS; NaN: judged, or
    not a tensor)."""
    reason = np.full(len(frame), -1, dtype=np.int8)
    if unjudged.any():
        shapes = frame["shape_mismatch"].fillna(False).to_numpy(dtype=bool)
        zero = ((frame["golden_norm"] == 0) | ((frame["golden_max"] == 0) & (frame["golden_min"] == 0))
                | ((frame["golden_mean"] == 0) & (frame["golden_std"] == 0))).fillna(False).to_numpy(dtype=bool)
        reason[unjudged] = 0
        reason[unjudged & zero] = 1
        reason[unjudged & shapes] = 2
    return pd.Categorical.from_codes(reason, categories=UNJUDGED_REASONS)


def mark_training(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame) -> None:
    """Per op: its differing parameters/buffers at the start of the comparison, its differing
    arguments, and whether it is the first op whose bits differ."""
    position = _op_positions(frame, ops)
    in_ops = position >= 0
    backward = rows["backward"].to_numpy(dtype=bool)
    start = np.arange(len(frame)) < (int(np.argmax(backward)) if backward.any() else len(frame))
    tensor_ids = _ObjectsAt(frame["tensor_id"])   # the few rows listed, not a million Python objects
    role = _ObjectsAt(rows["role"])

    # Parameters and buffers that differ before the first backward row: the weights the runs start from.
    state = np.flatnonzero(rows["state_differs"].to_numpy(dtype=bool) & start & in_ops)
    ops["param_differs"] = False
    rel = rows["state_rel"].to_numpy()
    stat = rows["state_stat"].to_numpy()
    worst = _worst_per_op(state, position, rel)
    if worst.size:
        npu, golden = np.full(worst.size, None, dtype=object), np.full(worst.size, None, dtype=object)
        for code, statistic in enumerate(STATISTICS):   # md5 rows (code -1) print no value
            here = stat[worst] == code
            npu[here] = frame[f"npu_{statistic}"].to_numpy(dtype=float, na_value=np.nan)[worst[here]]
            golden[here] = frame[f"golden_{statistic}"].to_numpy(dtype=float, na_value=np.nan)[worst[here]]
        worst_rel = rel[worst]
        _set_many(ops, position[worst], param_differs=True, param_tensor=_objects(frame["tensor_id"], worst),
                  param_name=_labels(frame, rows, worst), param_role=_objects(rows["role"], worst),
                  param_stat=np.array([STATISTICS[c] if c >= 0 else "md5" for c in stat[worst]], dtype=object),
                  param_npu=npu, param_golden=golden,
                  param_rel_diff=np.where(np.isfinite(worst_rel), worst_rel, None),
                  params_differing=np.bincount(position[state], minlength=len(ops))[position[worst]])
    ops["param_first"] = False
    if len(state):
        ops.iloc[int(position[state].min()), ops.columns.get_loc("param_first")] = True
    # Arguments (scalars, bools, strings) whose two values differ: the first of each op.
    args = np.flatnonzero(rows["arg_differs"].to_numpy(dtype=bool) & in_ops)
    ops["arg_differs"] = False
    if len(args):
        first = args[np.unique(position[args], return_index=True)[1]]
        npu_values, golden_values = argument_values(frame, first)
        _set_many(ops, position[first], arg_differs=True, arg_tensor=_objects(frame["tensor_id"], first),
                  arg_name=_labels(frame, rows, first),
                  arg_npu=np.array([_text(v) for v in npu_values], dtype=object),
                  arg_golden=np.array([_text(v) for v in golden_values], dtype=object),
                  args_differing=np.bincount(position[args], minlength=len(ops))[position[first]])
    # MD5 / CRC mode: the first op (execution order) whose data, output or gradient bits differ.
    bits = np.flatnonzero(rows["bits_differ"].to_numpy(dtype=bool) & rows["aggregated"].to_numpy(dtype=bool)
                          & in_ops)
    ops["bits_first"] = False
    if len(bits):
        first_op = int(position[bits].min())
        owner = gradient_owner(ops)[first_op]   # a module's gradients: where its backward call is
        first_op = int(owner) if owner >= 0 else first_op
        at = int(bits[position[bits] == first_op][0])
        npu_dtype, golden_dtype = frame["npu_dtype"].iloc[at], frame["golden_dtype"].iloc[at]
        _set(ops, first_op, bits_first=True, bits_tensor=tensor_ids[at], bits_role=role[at],
             bits_npu_dtype=npu_dtype if pd.notna(npu_dtype) else None,
             bits_golden_dtype=golden_dtype if pd.notna(golden_dtype) else None,
             bits_dtype_changed=bool(pd.notna(npu_dtype) and pd.notna(golden_dtype) and npu_dtype != golden_dtype))
    # Modules whose output depends on a mode (Dropout's training flag) that level L0 does not dump.
    modes = load_roles().mode_modules
    codes, types = pd.factorize(ops["op_type"])   # one look-up per distinct op type (code -1: missing)
    per_type = np.array([modes.get(t) if isinstance(t, str) else None for t in types] + [None], dtype=object)
    ops["mode_argument"] = per_type[codes]
    mark_mode_evidence(frame, position, rows["role"].array, ops)


class _ObjectsAt:
    """``series.astype(object).to_numpy()[at]`` for single positions, converting only the row asked for."""

    def __init__(self, series: pd.Series) -> None:
        self.series = series

    def __getitem__(self, at: int) -> Any:
        return self.series.iloc[at:at + 1].astype(object).to_numpy()[0]


def _op_positions(frame: pd.DataFrame, ops: pd.DataFrame) -> np.ndarray:
    """Per row, the position of its op in ``ops`` (-1: not an op there)."""
    index = ops.index.to_numpy()
    keys = frame["op_index"].to_numpy(dtype=np.float64, na_value=np.nan)
    at = np.searchsorted(index, np.nan_to_num(keys, nan=-1))
    at = np.minimum(at, max(len(index) - 1, 0))
    found = len(index) > 0
    hit = found & np.isfinite(keys) & (index[at] == keys) if found else np.zeros(len(keys), dtype=bool)
    return np.where(hit, at, -1)


def _worst_per_op(candidates: np.ndarray, position: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """Per op among the ``candidates`` rows, the one whose statistics moved most (NaN counts as the
    most: a value printed on one side only); ties go to the first row."""
    if not len(candidates):
        return np.zeros(0, dtype=np.int64)
    key = np.nan_to_num(rel[candidates], nan=np.inf)
    order = np.lexsort((np.arange(len(candidates)), -key, position[candidates]))
    first = np.unique(position[candidates][order], return_index=True)[1]
    return candidates[order][first]


def _objects(series: pd.Series, at: np.ndarray) -> np.ndarray:
    """``series`` at the positions ``at`` as Python objects (None where missing), converting only those."""
    return np.array([None if pd.isna(v) else v for v in series.take(at).astype(object)], dtype=object)


def _labels(frame: pd.DataFrame, rows: pd.DataFrame, at: np.ndarray) -> np.ndarray:
    """Each listed argument's or parameter's name: its role's (``eps``), its slot (``input 1``), the
    keyword it was passed by (``mode``), else ``value``."""
    names = _objects(rows["role_name"], at)
    slots = _objects(frame["slot"], at)
    keywords = _objects(split_tensor_names(frame["tensor_id"].take(at).reset_index(drop=True))["arg"],
                        np.arange(len(at)))
    return np.array([name if isinstance(name, str) else f"input {slot}" if slot is not None
                     else str(keyword) if keyword is not None else "value"
                     for name, slot, keyword in zip(names, slots, keywords, strict=True)], dtype=object)


PER_OP_FIELDS = {
    "param": ("param_differs", "param_tensor", "param_name", "param_role", "param_stat", "param_npu",
              "param_golden", "param_rel_diff", "params_differing"),
    "arg": ("arg_differs", "arg_tensor", "arg_name", "arg_npu", "arg_golden", "args_differing"),
    "bits": ("bits_tensor", "bits_role", "bits_npu_dtype", "bits_golden_dtype", "bits_dtype_changed"),
}


def _set(ops: pd.DataFrame, position: int, **values: Any) -> None:
    """Set one op's fields. The columns of PER_OP_FIELDS are made (None for every other op) only when
    an op has a value: a million-row inference comparison then carries none of them, and an absent
    field reads as a None one (the op fact leaves both out)."""
    for column, value in values.items():
        if column not in ops:
            ops[column] = np.full(len(ops), None, dtype=object)
        ops.iat[int(position), ops.columns.get_loc(column)] = value


def _set_many(ops: pd.DataFrame, positions: np.ndarray, **values: np.ndarray) -> None:
    """As ``_set`` for many ops at once: ``values`` hold one entry per position."""
    for column, value in values.items():
        if column not in ops:
            ops[column] = np.full(len(ops), None, dtype=object)
        ops.iloc[positions, ops.columns.get_loc(column)] = value


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return f"{value:g}" if isinstance(value, float) else str(value)


TRAINING_OP_FIELDS = tuple(dict.fromkeys(("param_first", "bits_first", "mode_argument", "mode_npu_passes",
                                          "mode_golden_passes", "mode_differs", *PER_OP_FIELDS["param"],
                                          *PER_OP_FIELDS["arg"], *PER_OP_FIELDS["bits"])))


def training_network_fields(frame: pd.DataFrame, rows: pd.DataFrame, ops: pd.DataFrame) -> dict[str, Any]:
    """Counts for the network fact: judged and unjudged tensors (listed), differing parameters and
    arguments, checksums; and whether this is a training comparison."""
    roles = rows["role"].array.codes

    def role_is(name: str) -> np.ndarray:   # compared as codes into ROLES, not as Python objects
        return roles == ROLES.index(name)

    parameter = role_is("parameter")
    judged = rows["judged"].to_numpy(dtype=bool)
    reasons = rows["unjudged_reason"].array
    unjudged = np.flatnonzero(reasons.codes >= 0)
    listed = unjudged[:MAX_LISTED]   # names only for the rows listed
    # One value at a time: taking rows of a chunked Arrow column copies the whole column first.
    tensor_ids, op_names = frame["tensor_id"], frame["op_name"]
    names = {at: tensor_ids.iat[at] if pd.notna(tensor_ids.iat[at]) else op_names.iat[at] for at in listed.tolist()}
    stated = np.zeros(len(rows), dtype=bool)
    stated[parameter] = rows["state_stat"].to_numpy()[parameter] >= 0   # code -1: no statistic printed
    fields: dict[str, Any] = {
        "judged_tensors": int(judged.sum()),
        "unjudged_tensors": len(unjudged),
        "training": bool(rows["backward"].to_numpy(dtype=bool).any()
                         or np.isin(roles, [ROLES.index(name) for name in STATE_ROLES]).any()),
        "argument_rows": int(role_is("argument").sum()),
        "arguments_compared": int(rows["arg_compared"].sum()),
        "differing_arguments": int(rows["arg_differs"].sum()),
        "counter_rows": int(role_is("counter").sum()),
        "parameters_compared": int((rows["comparable"].to_numpy(dtype=bool) & parameter & stated
                                    | (rows["has_checksum"].to_numpy(dtype=bool) & parameter)).sum()),
        "differing_buffers": int(rows["buffer_differs"].sum()),
        "checksums_compared": int(rows["has_checksum"].sum()),
        "checksums_differ": int(rows["bits_differ"].sum()),
    }
    if len(unjudged):
        fields["unjudged_list"] = "; ".join(f"{names[at]} ({UNJUDGED_REASONS[reasons.codes[at]]})"
                                            for at in listed.tolist())
    state = ops[ops["param_differs"]]
    fields["differing_parameters"] = int(state["params_differing"].fillna(0).sum()) if len(state) else 0
    if len(state):
        listed_state = state.head(MAX_LISTED)
        fields["differing_parameter_list"] = "; ".join(
            _describe_state(row_at(listed_state, at)) for at in range(len(listed_state)))
    return fields


def _describe_state(op: pd.Series) -> str:
    """``Functional.linear.0.forward.input.1 (weight): norm 4.90 vs 3.27``."""
    if op["param_stat"] == "md5":
        values = "checksums differ"
    else:
        values = f"{op['param_stat']} {_fmt(op['param_npu'])} vs {_fmt(op['param_golden'])}"
    return f"{op['param_tensor']} ({op['param_name']}): {values}"


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


def decorate_op_fact(fact: dict[str, Any], network: dict[str, Any]) -> None:
    """The first op whose parameters differ carries the network-wide list (the rule names them all)."""
    if fact.get("param_first"):
        fact["differing_parameters"] = network.get("differing_parameters", 0)
        fact["parameters_compared"] = network.get("parameters_compared", 0)
        fact["differing_buffers"] = network.get("differing_buffers", 0)
        if fact["parameters_compared"]:
            fact["differing_parameter_share"] = fact["differing_parameters"] / fact["parameters_compared"]
        if "differing_parameter_list" in network:
            fact["differing_parameter_list"] = network["differing_parameter_list"]
    if network.get("training"):
        fact["training"] = True
