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

Speed: a column is dictionary-encoded and each distinct name parsed once, by Arrow's regular
expressions (RE2, in C++): an LLM's comparison holds a million distinct names, and a Python match
per name cost 6 s of a 1M-row run. The patterns are ASCII and free of look-around, so Python's re
(``parse_call``, one name at a time) and RE2 read every name alike (tests/ingest/test_msprobe_names.py).
The usual tensor name is split at its last dots by Arrow instead of captured by RE2 (``_current_tensor``
says when that gives the pattern's own groups; the same test holds it to Python's re).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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
TENSOR_PATTERNS = tuple(re.compile(p, re.ASCII) for p in (CURRENT_TENSOR, PARAMETER_GRAD, OLD_TENSOR))

# A counter or an index is a number of at most 18 digits (an int64): a name with more is not one msprobe
# writes, and Python refuses to read a number of over 4,300 digits (ValueError, exit 3).
_NUMBER = r"\d{1,18}"
API_CALL = re.compile(rf"^(?P<api>.+?)(?P<sep>[._])(?P<counter>{_NUMBER})[._](?P<direction>{_DIRECTION})$",
                      re.ASCII)
MODULE_CALL = re.compile(rf"^(?P<kind>Module|Cell)\.(?:(?P<path>.+)\.)?(?P<cls>[^.]+)\.(?P<direction>"
                         rf"{_DIRECTION})\.(?P<counter>{_NUMBER})$", re.ASCII)
LEADING_INDEX = re.compile(rf"^(?P<slot>{_NUMBER})(?:\.|$)", re.ASCII)
# the module of a parameters_grad tensor
MODULE_OWNER = re.compile(r"^(?P<kind>Module|Cell)\.(?:(?P<path>.+)\.)?(?P<cls>[^.]+)$", re.ASCII)


@dataclass(frozen=True)
class CallParts:
    kind: str          # "api" or "module"
    op_type: str       # Functional.linear, Module.Linear
    name: str          # the API as spelt, old names with "." (Torch.relu), or the module class
    path: str          # module path ("" for an API)
    direction: str
    counter: int


def parse_call(call: str) -> CallParts | None:
    """One call name's parts, as ``split_call_names`` gives them for a column (the same patterns,
    matched whole as Arrow matches them)."""
    if match := MODULE_CALL.fullmatch(call):
        return CallParts("module", f"{match['kind']}.{match['cls']}", match["cls"], match["path"] or "",
                         match["direction"], int(match["counter"]))
    if match := API_CALL.fullmatch(call):
        api = match["api"].replace("_", ".", 1) if match["sep"] == "_" else match["api"]
        return CallParts("api", api, api, "", match["direction"], int(match["counter"]))
    return None


def split_call_names(calls: pd.Series) -> pd.DataFrame:
    """Columns ``direction, op_type, counter, kind`` for a column of call names."""
    codes, distinct = _distinct(calls)
    parts = _call_parts(distinct)
    rows = codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return _typed_rows({name: parts[name] for name in ("direction", "op_type", "counter", "kind")}, rows,
                       calls.index)


def split_tensor_names(names: pd.Series) -> pd.DataFrame:
    """Columns ``call, io, arg, slot, direction, op_type, counter`` for a column of tensor names."""
    codes, distinct, parts = distinct_tensor_parts(names)
    return _typed_rows(parts, codes, names.index)


def distinct_tensor_parts(names: pd.Series, each_row: bool = False) -> tuple[np.ndarray, pa.Array, Groups]:
    """The parts ``split_tensor_names`` gives, once per distinct name: per row the position of its
    name among the distinct names (-1: NA), the distinct names (Arrow strings) and their parts
    (Arrow arrays, null where a name fits no shape). A reader that keeps the parts as codes takes
    them from here without a string per row. ``each_row``: the names are (nearly) all distinct, as
    the tensors of a comparison are: each row is its own "distinct" name, parsed without first
    hashing a million names to find the few repeated ones (half a second on a 1M-row file)."""
    if each_row:
        distinct = _strings(names)
        codes = np.where(distinct.is_null().to_numpy(zero_copy_only=False), -1, np.arange(len(distinct)))
    else:
        indices, distinct = _distinct(names)
        codes = indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    parts = _tensor_parts(distinct)
    calls = _call_parts(parts["call"])
    # a parameters_grad tensor's call is its module: direction and op_type are already set
    parts["direction"] = pc.coalesce(parts["direction"], calls["direction"])
    parts["op_type"] = pc.coalesce(parts["op_type"], calls["op_type"])
    parts["counter"] = calls["counter"]
    return codes, distinct, parts


DOT = pa.scalar(".", pa.large_string())


def _distinct(values: pd.Series) -> tuple[pa.Array, pa.Array]:
    """The column's distinct texts (Arrow strings) and per row the index of its text (null: NA),
    encoded by Arrow: names are parsed once each, in C++, never as a Python string per row."""
    encoded = _strings(values).dictionary_encode()
    return encoded.indices, encoded.dictionary


def _strings(values: pd.Series) -> pa.Array:
    """The column as one Arrow string array."""
    arrow = arrow_strings(values)
    if arrow is None:  # Python strings (or anything else: as ``str`` of it)
        arrow = arrow_strings(values.astype(pd.StringDtype("pyarrow")))
    return arrow


def _matches(texts: pa.Array, pattern: re.Pattern[str], where: np.ndarray | None = None) -> tuple[np.ndarray, Groups]:
    """Which texts ``pattern`` matches (only among the rows ``where`` marks), and its named groups per
    text (null where it did not match or the group took no part). RE2 finds the matches with its fast
    DFA, then captures on those rows only; when ``where`` marks few rows, only those are matched. The
    patterns are ASCII and free of look-around, so RE2 (Arrow) and Python's re capture alike."""
    if where is None or where.all():
        hit = _match_rows(texts, pattern.pattern)
    else:
        hit = np.zeros(len(texts), dtype=bool)
        rows = np.flatnonzero(where)
        if rows.size:
            hit[rows[_match_rows(texts.take(pa.array(rows)), pattern.pattern)]] = True
    return hit, _captured(texts, pattern, hit)


def _match_rows(texts: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(texts, pattern), False).to_numpy(zero_copy_only=False)


def _captured(texts: pa.Array, pattern: re.Pattern[str], rows: np.ndarray) -> Groups:
    """The named groups of ``pattern`` on the ``rows`` it matches (null elsewhere, and where a group
    took no part)."""
    found = pc.extract_regex(texts.filter(pa.array(rows)), pattern.pattern)
    at = pa.array(np.cumsum(rows) - 1, mask=~rows)
    groups = {}
    for name in pattern.groupindex:
        value = pc.struct_field(found, name)
        groups[name] = pc.if_else(pc.equal(value, ""), pa.scalar(None, value.type), value).take(at)
    return groups


Groups = dict[str, pa.Array]


def _call_parts(calls: pa.Array) -> Groups:
    """``kind, op_type, direction, counter`` of each call name (null when it fits no shape): as
    ``parse_call``, over a whole array at once, each distinct call once."""
    encoded = calls.cast(pa.large_string()).dictionary_encode()
    distinct = encoded.dictionary
    is_module, module = _matches(distinct, MODULE_CALL)
    is_api, api = _matches(distinct, API_CALL, where=~is_module)
    spelt = pc.if_else(pc.equal(api["sep"], "_"), pc.replace_substring(api["api"], "_", ".", max_replacements=1),
                       api["api"])
    parts = {
        "kind": pc.if_else(pa.array(is_module), "module",
                           pc.if_else(pa.array(is_api), "api", pa.scalar(None, pa.string()))),
        "op_type": pc.coalesce(pc.binary_join_element_wise(module["kind"], module["cls"], DOT), spelt),
        "direction": pc.coalesce(module["direction"], api["direction"]),
        "counter": pc.coalesce(module["counter"], api["counter"]).cast(pa.int64()),
    }
    return {name: values.take(encoded.indices) for name, values in parts.items()}


# Names split at a time: the split's pieces of a million names held at once cost ~85 MiB more peak
# on a 1M-row MD5 comparison (past twice its 368 MiB file), at the same speed.
NAMES_PER_SPLIT = 1 << 17


def _tensor_parts(names: pa.Array) -> Groups:
    """``call, io, arg, slot, direction, op_type`` of each tensor name (null when it fits no shape);
    direction and op_type only for a parameters_grad tensor, whose call is its module."""
    names = names.cast(pa.large_string())
    if len(names) <= NAMES_PER_SPLIT:
        return _tensor_parts_of(names)
    parts = [_tensor_parts_of(names.slice(at, NAMES_PER_SPLIT)) for at in range(0, len(names), NAMES_PER_SPLIT)]
    return {key: pa.concat_arrays([part[key] for part in parts]) for key in parts[0]}


def _tensor_parts_of(names: pa.Array) -> Groups:
    taken, found = _current_tensor(names)
    for pattern in TENSOR_PATTERNS[1:]:  # the first pattern that matches decides
        hit, groups = _matches(names, pattern, where=~taken)
        found.append(groups)
        taken |= hit
    call, io, arg = (pc.coalesce(*(groups[name] for groups in found)) for name in ("call", "io", "arg"))
    # a bare .output is the single one (slot 0); 0 of 0.1 is the argument, not its element; a keyword
    # argument or a parameter name has no slot
    slot = pc.if_else(pc.is_null(arg), pc.if_else(pa.array(taken), 0, pa.scalar(None, pa.int64())), _slots(arg))
    is_grad = pc.fill_null(pc.equal(io, "parameters_grad"), False).to_numpy(zero_copy_only=False)
    grad, owner = _matches(pc.fill_null(call, ""), MODULE_OWNER, where=is_grad)
    words = pa.array(list(IO_WORDS), pa.large_string())
    io_word = pc.take(pa.array(list(IO_WORDS.values()), pa.large_string()), pc.index_in(io, value_set=words))
    return {
        "call": call, "io": io_word, "arg": arg, "slot": slot,
        "direction": pc.if_else(pa.array(grad), pa.scalar("backward", pa.large_string()),
                                pa.scalar(None, pa.large_string())),
        "op_type": pc.binary_join_element_wise(owner["kind"], owner["cls"], DOT),
    }


# CURRENT_TENSOR's call matched whole, and its io words.
CURRENT_CALL = rf"^.+\.{_DIRECTION}(?:\.\d+)?$"
CURRENT_IO = pa.array(["input", "kwargs", "output", "parameters"], pa.large_string())


def _current_tensor(names: pa.Array) -> tuple[np.ndarray, list[Groups]]:
    """CURRENT_TENSOR's matches and groups, most of them without RE2's capture (0.9 s of a million
    names). A name ``<call>.<io>`` or ``<call>.<io>.<arg>`` whose arg has no dot, whose call matches
    CURRENT_CALL and which holds no newline is split at its last dots: the pattern's greedy call ends
    there, since a longer one would end in the io word or the arg, and neither ends in a direction or
    a counter followed by an io word. The other names (an arg ``0.1``...) are captured by RE2."""
    split = pc.split_pattern(names, ".", max_splits=2, reverse=True)
    count = np.array(pc.fill_null(pc.list_value_length(split), 0).to_numpy(zero_copy_only=False))
    count[pc.fill_null(pc.match_substring(names, "\n"), False).to_numpy(zero_copy_only=False)] = 0
    offsets = split.offsets.to_numpy()
    first = offsets[:-1] - offsets[0]   # where each row's pieces start among the flattened ones
    pieces = split.flatten()

    def piece(k: int, rows: np.ndarray) -> pa.Array:   # piece k of the rows marked, null elsewhere
        return pieces.take(pa.array(np.where(rows, first + k, 0), mask=~rows))

    def holds(values: pa.Array, pattern: str | None = None) -> np.ndarray:
        test = pc.is_in(values, value_set=CURRENT_IO) if pattern is None else \
            pc.match_substring_regex(values, pattern)
        return pc.fill_null(test, False).to_numpy(zero_copy_only=False)

    two, three = count == 2, count == 3
    last = pc.coalesce(piece(2, three), piece(1, two))
    # <call>.<io>: all but the last piece is the call
    head = pc.coalesce(pc.binary_join_element_wise(piece(0, three), piece(1, three), DOT), piece(0, two))
    bare = (two | three) & holds(last) & holds(head, CURRENT_CALL)
    # <call>.<io>.<arg>, the arg without a dot
    middle, call = piece(1, three), piece(0, three)
    with_arg = three & ~bare & holds(middle) & holds(call, CURRENT_CALL) & \
        pc.fill_null(pc.greater(pc.binary_length(last), 0), False).to_numpy(zero_copy_only=False)
    hit = bare | with_arg
    others = np.zeros(len(names), dtype=bool)
    unsure = np.flatnonzero(~hit)
    if unsure.size:
        others[unsure[_match_rows(names.take(pa.array(unsure)), CURRENT_TENSOR)]] = True
    captured = _captured(names, TENSOR_PATTERNS[0], others)
    null = pa.scalar(None, pa.large_string())
    groups = {
        "call": pc.coalesce(pc.if_else(pa.array(bare), head, pc.if_else(pa.array(with_arg), call, null)),
                            captured["call"]),
        "io": pc.coalesce(pc.if_else(pa.array(bare), last, pc.if_else(pa.array(with_arg), middle, null)),
                          captured["io"]),
        "arg": pc.coalesce(pc.if_else(pa.array(with_arg), last, null), captured["arg"]),
    }
    return hit | others, [groups]


def _slots(args: pa.Array) -> pa.Array:
    """LEADING_INDEX's slot of each argument: a plain index (``0``) read directly, the rest by RE2."""
    digits = pc.fill_null(pc.and_(pc.ascii_is_decimal(args), pc.less_equal(pc.binary_length(args), 18)), False)
    plain = pc.if_else(digits, args, pa.scalar(None, pa.large_string())).cast(pa.int64())
    rest = pc.invert(digits).to_numpy(zero_copy_only=False) & pc.is_valid(args).to_numpy(zero_copy_only=False)
    _, lead = _matches(pc.fill_null(args, ""), LEADING_INDEX, where=rest)
    return pc.coalesce(plain, lead["slot"].cast(pa.int64()))


def _typed_rows(parts: dict[str, pa.Array], codes: np.ndarray, index: pd.Index) -> pd.DataFrame:
    """Row ``codes[i]`` of the distinct parts for each i (all NA for code -1), typed: ``slot`` and
    ``counter`` Int64, the rest strings. Taken by Arrow, then wrapped without a copy."""
    columns = {}
    rows = pa.array(codes, mask=codes < 0)
    for name, values in parts.items():
        taken = values.take(rows)
        if pa.types.is_integer(taken.type):
            mask = taken.is_null().to_numpy(zero_copy_only=False)
            numbers = taken.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            columns[name] = pd.arrays.IntegerArray(numbers, mask)
        else:
            columns[name] = pd.arrays.ArrowStringArray(taken.cast(pa.large_string()))
    return pd.DataFrame(columns, index=index, copy=False)
