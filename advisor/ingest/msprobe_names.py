"""msprobe / ptdbg tensor and call names, split into their parts (docs/formats.md).

A *call* is one execution of an API or a module; its tensors hang below it::

    Functional.linear.0.forward               API call: <api>.<counter>.<direction>
    Module.layer1.Linear.forward.0            module call: Module|Cell.<path>.<class>.<direction>.<counter>
    Functional_linear_0_forward               old ptdbg spelling: "_" instead of "."

    Functional.linear.0.forward.input.0       positional argument 0
    Functional.linear.0.forward.input.bias    keyword argument ``bias`` (slot NA)
    Functional.linear.0.forward.output.0      output 0 (``.output`` alone, as old files print a single
    Functional_linear_0_forward_output        output, is slot 0)
    Module.fc.Linear.forward.0.parameters.weight   a module's parameter (io ``parameter``)
    Module.fc.Linear.parameters_grad.weight   its gradient (io ``parameter_grad``, backward)

``op_type`` is the API (``Functional.linear``; old names turn their first ``_`` into ``.``:
``Torch_relu`` -> ``Torch.relu``) or ``Module.<class>`` / ``Cell.<class>`` for a module call.
Names that fit none of these shapes give NA parts, never an error.

Speed: a column is factorized first and each distinct name parsed once (a compare CSV names
every call three times or more, and usually prints the same name in NPU Name and Bench Name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from advisor.ingest.csv_cells import arrow_strings

IO_WORDS = {"input": "input", "kwargs": "input", "output": "output", "parameters": "parameter",
            "parameters_grad": "parameter_grad"}

_DIRECTION = r"(?:forward|backward)"
# Current names: the call ends with its direction (API) or direction.counter (module).
CURRENT_TENSOR = (rf"^(?P<call>.+\.{_DIRECTION}(?:\.\d+)?)\.(?P<io>input|kwargs|output|parameters)"
                  r"(?:\.(?P<arg>.+))?$")
PARAMETER_GRAD = r"^(?P<call>.+)\.(?P<io>parameters_grad)(?:\.(?P<arg>.+))?$"
# Old ptdbg names: Functional_linear_0_forward_input.0, Functional_linear_0_forward_output.
OLD_TENSOR = rf"^(?P<call>.+[._]{_DIRECTION})[._](?P<io>input|output)(?:\.(?P<arg>.+))?$"
TENSOR_PATTERNS = tuple(re.compile(p) for p in (CURRENT_TENSOR, PARAMETER_GRAD, OLD_TENSOR))

# A counter or an index is a number of at most 18 digits (an int64): a name with more is not one msprobe
# writes, and Python refuses to read a number of over 4,300 digits (ValueError, exit 3).
_NUMBER = r"\d{1,18}"
API_CALL = re.compile(rf"^(?P<api>.+?)(?P<sep>[._])(?P<counter>{_NUMBER})[._](?P<direction>{_DIRECTION})$")
MODULE_CALL = re.compile(rf"^(?P<kind>Module|Cell)\.(?:(?P<path>.+)\.)?(?P<cls>[^.]+)\.(?P<direction>"
                         rf"{_DIRECTION})\.(?P<counter>{_NUMBER})$")
LEADING_INDEX = re.compile(rf"{_NUMBER}(?=\.|$)")
MODULE_OWNER = re.compile(r"^(?P<kind>Module|Cell)\.(?:(?P<path>.+)\.)?(?P<cls>[^.]+)$")  # of parameters_grad


@dataclass(frozen=True)
class CallParts:
    kind: str          # "api" or "module"
    op_type: str       # Functional.linear, Module.Linear
    name: str          # the API as spelt, old names with "." (Torch.relu), or the module class
    path: str          # module path ("" for an API)
    direction: str
    counter: int


def parse_call(call: str) -> CallParts | None:
    if match := MODULE_CALL.match(call):
        return CallParts("module", f"{match['kind']}.{match['cls']}", match["cls"], match["path"] or "",
                         match["direction"], int(match["counter"]))
    if match := API_CALL.match(call):
        api = match["api"].replace("_", ".", 1) if match["sep"] == "_" else match["api"]
        return CallParts("api", api, api, "", match["direction"], int(match["counter"]))
    return None


def split_call_names(calls: pd.Series) -> pd.DataFrame:
    """Columns ``direction, op_type, counter, kind`` for a column of call names."""
    codes, uniques = _distinct(calls)
    parts = [parse_call(str(u)) for u in uniques]
    table = pd.DataFrame({
        "direction": [p.direction if p else None for p in parts] + [None],
        "op_type": [p.op_type if p else None for p in parts] + [None],
        "counter": [p.counter if p else None for p in parts] + [None],
        "kind": [p.kind if p else None for p in parts] + [None],
    })
    return _typed_rows(table, codes, calls.index)  # code -1 (NA) takes the last row


def split_tensor_names(names: pd.Series) -> pd.DataFrame:
    """Columns ``call, io, arg, slot, direction, op_type, counter`` for a column of tensor names."""
    codes, uniques = _distinct(names)
    rows = [_tensor_parts(str(u)) for u in uniques]
    table = pd.DataFrame(rows + [(None,) * 6], columns=["call", "io", "arg", "slot", "direction", "op_type"])
    calls = split_call_names(table["call"])
    table["counter"] = calls["counter"].to_numpy()
    # a parameters_grad tensor's call is its module: direction and op_type are already set
    table["direction"] = table["direction"].fillna(calls["direction"])
    table["op_type"] = table["op_type"].fillna(calls["op_type"])
    return _typed_rows(table, codes, names.index)


def _distinct(values: pd.Series) -> tuple[np.ndarray, list]:
    """``pd.factorize`` of a text column: per row a code (-1: NA) into the distinct texts. A column
    held in Arrow is encoded by Arrow, without a Python string per row (only per distinct text)."""
    arrow = arrow_strings(values)
    if arrow is None:
        codes, uniques = pd.factorize(values.to_numpy(dtype=object, na_value=None))
        return codes, list(uniques)
    encoded = arrow.dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return codes, encoded.dictionary.to_pylist()


def _tensor_parts(name: str) -> tuple[object, ...]:
    for pattern in TENSOR_PATTERNS:
        if match := pattern.match(name):
            call, io, arg = match["call"], match["io"], match["arg"]
            if arg is None:
                slot = 0                 # a bare .output: the single one
            elif (lead := LEADING_INDEX.match(arg)) is not None:
                slot = int(lead.group())  # 0 of 0.1: the argument, not its element
            else:
                slot = None              # a keyword argument or a parameter name
            if io == "parameters_grad" and (owner := MODULE_OWNER.match(call)):
                return call, IO_WORDS[io], arg, slot, "backward", f"{owner['kind']}.{owner['cls']}"
            return call, IO_WORDS[io], arg, slot, None, None
    return (None,) * 6


def _typed_rows(table: pd.DataFrame, codes: np.ndarray, index: pd.Index) -> pd.DataFrame:
    """Row ``codes[i]`` of ``table`` (its last row, all NA, for code -1) for each i, typed: ``slot`` and
    ``counter`` Int64, the rest strings. Typed once per distinct row, then taken by code."""
    at = np.where(codes < 0, len(table) - 1, codes)
    columns = {}
    for name in table.columns:
        if name in ("slot", "counter"):
            typed = pd.to_numeric(table[name]).astype("Int64")
        else:
            typed = table[name].astype("string")
        columns[name] = typed.array.take(at)
    return pd.DataFrame(columns, index=index, copy=False)
