"""The role of each compared tensor: what a training comparison's rows are, not only where they sit.

msprobe lists, for every API call, its positional inputs in order: the data it computes on, but also
the layer's parameters (``Functional.conv2d.0.forward.input.1`` is the conv weight), its buffers
(BatchNorm's running mean) and its settings (``eps``, ``training``). A difference in each means
something else: different data is an input mismatch, a different weight means the two runs hold
different weights, a different argument is a different computation, a buffer counter
(``num_batches_tracked.add_(1)``) is state and never a cause. Which slot is what comes from
``knowledge/training/tensor_roles.yaml``, worked out once per distinct (API, slot) pair, never per row.

Roles: ``data`` (an input the op computes on), ``output``, ``parameter``, ``buffer``, ``argument``,
``counter`` (every row of an in-place integer counter update), ``gradient`` (backward-pass rows),
``alias`` (the tensor an in-place API updates, as its first input: ``Tensor.add_``'s ``input.0`` is the
very tensor it writes, and msprobe may take its value before or after the update - in MD5 mode two
reruns of one script differ there while the outputs agree; the output row judges the update).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from ..dtypes import UNIT_ROUNDOFF
from ..errors import KnowledgeError
from ..ingest.table import equal_texts, first_present
from ..resources import data_dir
from ..yamlfile import load_yaml

ROLES = ("data", "output", "parameter", "buffer", "argument", "counter", "gradient", "alias")
# Roles whose rows are tensors judged by the thresholds (a parameter or buffer is judged too, more
# strictly: see RoleCatalog.tolerance).
TENSOR_ROLES = frozenset({"data", "output", "parameter", "buffer", "gradient"})
STATE_ROLES = frozenset({"parameter", "buffer"})
STATISTICS = ("norm", "max", "min", "mean")


@dataclass(frozen=True)
class RoleCatalog:
    slots: dict[tuple[str, int], tuple[str, str]]    # (api, slot) -> (role, name)
    counter_apis: frozenset[str]
    counter_dtypes: frozenset[str]
    counter_shape: str
    tolerance: float                                  # relative difference that makes state "differ"
    rounding_units: float                             # ... across dtypes: unit roundoffs of the lower one
    mode_modules: dict[str, str]                      # module op type -> the mode argument it depends on


@cache
def load_roles() -> RoleCatalog:
    path = data_dir("knowledge") / "training" / "tensor_roles.yaml"
    raw = load_yaml(path, KnowledgeError)
    if not isinstance(raw, dict) or not isinstance(raw.get("apis"), dict):
        raise KnowledgeError("expected 'apis: {API: {slot: [role, name]}}'", path=path)
    slots: dict[tuple[str, int], tuple[str, str]] = {}
    for api, table in raw["apis"].items():
        if not isinstance(table, dict):
            raise KnowledgeError("expected {slot: [role, name]}", path=path, field=f"apis.{api}")
        for slot, entry in table.items():
            if (not isinstance(entry, list) or len(entry) != 2 or entry[0] not in ROLES
                    or not isinstance(slot, int)):
                raise KnowledgeError(f"expected <slot>: [role, name] with a role among {', '.join(ROLES)}",
                                     path=path, field=f"apis.{api}.{slot}")
            slots[(str(api), slot)] = (str(entry[0]), str(entry[1]))
    counters = raw.get("counters") or {}
    return RoleCatalog(slots=slots, counter_apis=frozenset(map(str, counters.get("apis", ()))),
                       counter_dtypes=frozenset(map(str, counters.get("dtypes", ()))),
                       counter_shape=str(counters.get("shape", "[]")).replace(" ", ""),
                       tolerance=float(raw.get("state_tolerance", 1e-6)),
                       rounding_units=float(raw.get("state_rounding_units", 2.0)),
                       mode_modules={str(k): str(v) for k, v in (raw.get("mode_modules") or {}).items()})


def tensor_roles(frame: pd.DataFrame, backward: np.ndarray) -> tuple[np.ndarray, pd.Categorical]:
    """Per row: its role as a code into ROLES (int8) and its role name (``weight``, ``eps``...; NaN
    when unnamed), a Categorical of the few distinct names. ``backward``: the backward-pass rows."""
    catalog = load_roles()
    n = len(frame)
    # A handful of distinct io values: compare codes, not a million strings (NA never matches).
    io_codes, io_names = pd.factorize(frame["io"])
    io_is = {str(v): io_codes == i for i, v in enumerate(io_names)}
    nowhere = np.zeros(n, dtype=bool)
    code = {r: np.int8(i) for i, r in enumerate(ROLES)}   # roles as codes into ROLES (-1: not a role)
    role = np.zeros(n, dtype=np.int8)   # data
    role[io_is.get("output", nowhere)] = code["output"]
    name = np.full(n, -1, dtype=np.int32)   # codes into names
    names: list[str] = []
    # Known slots: one dictionary look-up per distinct (API, slot) pair.
    inputs = io_is.get("input", nowhere) & frame["slot"].notna().to_numpy(dtype=bool) & frame[
        "op_type"].notna().to_numpy(dtype=bool)
    if inputs.any() and catalog.slots:
        at = np.flatnonzero(inputs)
        codes, looked_up = _slot_entries(frame, at, catalog)
        known = np.array([e is not None for e in looked_up], dtype=bool)
        if known.any():
            hit = known[codes]
            role[at[hit]] = np.array([code.get(e[0], -1) if e else 0 for e in looked_up], dtype=np.int8)[codes[hit]]
            names = list(dict.fromkeys(e[1] for e in looked_up if e))
            code_of = {text: at for at, text in enumerate(names)}
            name[at[hit]] = np.array([code_of[e[1]] if e else -1 for e in looked_up], dtype=np.int32)[codes[hit]]
    role[io_is.get("parameter", nowhere)] = code["parameter"]
    # A value that is not a tensor (msprobe prints its Python type as the dtype) is an argument.
    not_tensor = _python_type(frame["npu_dtype"]) | _python_type(frame["golden_dtype"])
    if "npu_arg" in frame:
        not_tensor |= (frame["npu_arg"].notna() | frame["golden_arg"].notna()).to_numpy(dtype=bool)
    role[not_tensor & (role != code["parameter"])] = code["argument"]
    role[_inplace_targets(frame, io_is.get("input", nowhere)) & (role == code["data"])] = code["alias"]
    role[_counter_ops(frame, catalog)] = code["counter"]
    gradient = backward | io_is.get("parameter_grad", nowhere)
    role[gradient & (role != code["argument"])] = code["gradient"]
    return role, pd.Categorical.from_codes(name, categories=names)


def _slot_entries(frame: pd.DataFrame, at: np.ndarray,
                  catalog: RoleCatalog) -> tuple[np.ndarray, list[tuple[str, str] | None]]:
    """The catalog entry of each row ``at`` (an API's positional slot): a code per row into the
    entries of the distinct (API, slot) pairs, one dictionary look-up per pair."""
    type_codes, types = pd.factorize(frame["op_type"].iloc[at])
    slot_codes, slots = pd.factorize(np.maximum(frame["slot"].to_numpy(dtype=np.int64, na_value=-1)[at], -1))
    width = len(slots)
    codes, pairs = pd.factorize(type_codes.astype(np.int64) * width + slot_codes)
    return codes, [catalog.slots.get((str(types[p // width]), int(slots[p % width]))) for p in pairs.tolist()]


def parameter_gradients(frame: pd.DataFrame, backward: np.ndarray) -> np.ndarray:
    """Per row: the gradient of a parameter, what a training step's update uses: a module's
    ``parameters_grad`` rows, and the backward outputs of an API at the slot its forward call takes
    a parameter in (``Functional.linear.0.backward.output.1`` is the weight's gradient)."""
    catalog = load_roles()
    io = frame["io"]
    found = (io == "parameter_grad").fillna(False).to_numpy(dtype=bool, copy=True)
    outputs = backward & (io == "output").fillna(False).to_numpy(dtype=bool) & frame["slot"].notna().to_numpy(
        dtype=bool) & frame["op_type"].notna().to_numpy(dtype=bool)
    if outputs.any() and catalog.slots:
        at = np.flatnonzero(outputs)
        codes, entries = _slot_entries(frame, at, catalog)
        found[at] = np.array([e is not None and e[0] == "parameter" for e in entries], dtype=bool)[codes]
    return found


def backward_rows(frame: pd.DataFrame) -> np.ndarray:
    """Per row: whether it belongs to the backward pass (``direction`` is ``backward``)."""
    codes, names = pd.factorize(frame["direction"])   # a handful of distinct values: compare codes
    return np.isin(codes, [at for at, name in enumerate(names) if name == "backward"])


def _python_type(dtypes: pd.Series) -> np.ndarray:
    codes, distinct = pd.factorize(dtypes)
    # As msprobe prints it (``<class 'float'>``) or as the reader normalises it (``python.float``).
    hits = np.array([str(d).startswith(("<class ", "python.")) for d in distinct] + [False], dtype=bool)
    return hits[codes]


def _inplace_targets(frame: pd.DataFrame, inputs: np.ndarray) -> np.ndarray:
    """The first input of an in-place API (PyTorch names them with a trailing ``_``, ``Tensor.add_``,
    or as an augmented assignment, ``Tensor.__iadd__``): the tensor the call overwrites."""
    first = inputs & (frame["slot"] == 0).fillna(False).to_numpy(dtype=bool)
    if not first.any():
        return first
    codes, types = pd.factorize(frame["op_type"])
    inplace = np.array([isinstance(t, str) and _is_inplace(t.rsplit(".", 1)[-1]) for t in types] + [False])
    return first & inplace[codes]


def _is_inplace(name: str) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return name.startswith("__i") and name not in ("__init__", "__index__", "__int__", "__invert__", "__iter__")
    return name.endswith("_") and not name.startswith("_")


def _counter_ops(frame: pd.DataFrame, catalog: RoleCatalog) -> np.ndarray:
    """Every row of an op whose first input is an integer scalar updated by a counter API."""
    if not catalog.counter_apis:
        return np.zeros(len(frame), dtype=bool)
    first_input = ((frame["io"] == "input") & (frame["slot"] == 0)).fillna(False).to_numpy(dtype=bool)
    candidate = first_input & frame["op_type"].isin(catalog.counter_apis).fillna(False).to_numpy(dtype=bool)
    if candidate.any():   # the dtypes only when some op is a counter API (none in an inference comparison)
        candidate &= _present_in(frame["npu_dtype"], frame["golden_dtype"], catalog.counter_dtypes)
    if not candidate.any():
        return np.zeros(len(frame), dtype=bool)
    codes, shapes = first_present(frame["shape"], frame["golden_shape"])
    shape = np.array([*shapes, pd.NA], dtype=object)[codes]
    candidate &= _shape_is(shape, candidate, catalog.counter_shape)
    counters = set(frame["op_index"].to_numpy()[candidate].tolist())
    return frame["op_index"].isin(counters).fillna(False).to_numpy(dtype=bool)


def _present_in(first: pd.Series, second: pd.Series, wanted: frozenset[str]) -> np.ndarray:
    """Per row: whether ``first`` (``second`` where it is NA) is one of ``wanted``."""
    codes, texts = first_present(first, second)
    return np.append(texts.isin(wanted), False)[codes]


def _shape_is(shape: np.ndarray, where: np.ndarray, wanted: str) -> np.ndarray:
    out = np.zeros(len(shape), dtype=bool)
    for position in np.flatnonzero(where):
        out[position] = str(shape[position]).replace(" ", "") == wanted
    return out


def state_difference(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the largest difference among the printed statistics (norm, max, min, mean) relative
    to the tensor's scale, and which statistic it is (a code into STATISTICS, int8; -1 and NaN where
    no statistic is printed on both sides).

    The scale of max, min and mean is the reference's largest magnitude (max |x|, from its printed
    extrema), never the statistic itself: a mean that cancels near zero (-1.3e-4 against -8.2e-5 in a
    float16 copy of float32 weights) is a large relative change of a tiny number, not of the tensor.
    A norm is its own scale. Without printed extrema (a .pkl dump's mean alone), the statistic is.
    1 when the reference is 0 and the target is not."""
    n = len(frame)
    worst = np.full(n, np.nan)
    which = np.full(n, -1, dtype=np.int8)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        extent = np.fmax(np.abs(frame["golden_max"].to_numpy(dtype=float)),
                         np.abs(frame["golden_min"].to_numpy(dtype=float)))
        for code, stat in enumerate(STATISTICS):
            golden = frame[f"golden_{stat}"].to_numpy(dtype=float)
            if np.isnan(golden).all():   # not printed (msaccucmp has means only): every rel would be NaN
                continue
            npu = frame[f"npu_{stat}"].to_numpy(dtype=float)
            diff = np.abs(npu - golden)
            scale = np.abs(golden) if stat == "norm" else np.where(np.isfinite(extent) & (extent > 0), extent,
                                                                      np.abs(golden))
            rel = np.where(scale != 0, diff / scale, np.where(diff > 0, 1.0, 0.0))
            better = np.isfinite(rel) & ~(rel <= worst)   # NaN worst: any finite value wins
            worst[better] = rel[better]
            which[better] = code
    return worst, which


def rounding_tolerance(frame: pd.DataFrame, floor: float, units: float) -> np.ndarray:
    """Per row: how far a state tensor may move when only its dtype differs between the two sides:
    ``units`` unit roundoffs of the less precise of the two dtypes (a float32 weight held in float16
    moves by up to 2^-11 of its scale), never below ``floor`` (the same dtype on both sides)."""
    tolerance = np.full(len(frame), float(floor))
    for column in ("npu_dtype", "golden_dtype"):
        codes, names = pd.factorize(frame[column])
        per_name = np.array([UNIT_ROUNDOFF.get(str(name), 0.0) * units for name in names] + [0.0])
        tolerance = np.maximum(tolerance, per_name[codes])
    return np.where(equal_texts(frame["npu_dtype"], frame["golden_dtype"]), float(floor), tolerance)


def argument_values(frame: pd.DataFrame, at: np.ndarray) -> tuple[list[Any], list[Any]]:
    """The two printed values of the argument rows ``at`` (positions): the text form when the
    reader kept one (``True``, ``mean``), else the printed maximum (a number's value)."""
    def side(prefix: str) -> list[Any]:
        numbers = frame[f"{prefix}_max"].to_numpy(dtype=float)[at]
        if f"{prefix}_arg" in frame:
            texts = frame[f"{prefix}_arg"].astype(object).to_numpy()[at]
        else:
            texts = np.full(len(at), None, dtype=object)
        return [t if isinstance(t, str) else (_number(v) if np.isfinite(v) else None)
                for t, v in zip(texts, numbers, strict=True)]
    return side("npu"), side("golden")


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() and abs(value) < 1e15 else float(value)
