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
The usual tensor name is cut at its dots by numpy, read from the column's buffers, instead of captured
by RE2 (``_current_tensor`` says when that gives the pattern's own groups; the same test holds it to
Python's re).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from advisor.ingest.arrow_text import cell_buffers, filled_cells, newlines_per_cell, spans
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


def distinct_tensor_parts(names: pd.Series) -> tuple[np.ndarray, pa.Array, Groups]:
    """The parts ``split_tensor_names`` gives, once per distinct name: per row the position of its
    name among the distinct names (-1: NA), the distinct names (Arrow strings) and their parts
    (Arrow arrays, null where a name fits no shape)."""
    indices, distinct = _distinct(names)
    codes = indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    parts = tensor_parts(distinct)
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
    encoded = name_strings(values).dictionary_encode()
    return encoded.indices, encoded.dictionary


def name_strings(values: pd.Series) -> pa.Array:
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
    if not rows.any():   # no row to capture from (the usual case of the rarer patterns)
        return {name: pa.nulls(len(texts), texts.type) for name in pattern.groupindex}
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
    return {name: values.take(encoded.indices) for name, values in distinct_call_parts(encoded.dictionary).items()}


def distinct_call_parts(distinct: pa.Array) -> Groups:
    """``_call_parts`` of distinct call names (Arrow large strings)."""
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
    return parts


# Names split at a time: bounds the work arrays of numbers kept per name and per dot.
NAMES_PER_SPLIT = 1 << 17


def tensor_parts(names: pa.Array) -> Groups:
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
        if hit.any():
            found.append(groups)
            taken |= hit
    call, io, arg = (pc.coalesce(*(groups[name] for groups in found)) if len(found) > 1 else found[0][name]
                     for name in ("call", "io", "arg"))
    # a bare .output is the single one (slot 0); 0 of 0.1 is the argument, not its element; a keyword
    # argument or a parameter name has no slot
    slot = pc.if_else(pc.is_null(arg), pc.if_else(pa.array(taken), 0, pa.scalar(None, pa.int64())), _slots(arg))
    is_grad = pc.fill_null(pc.equal(io, "parameters_grad"), False).to_numpy(zero_copy_only=False)
    if is_grad.any():
        grad, owner = _matches(pc.fill_null(call, ""), MODULE_OWNER, where=is_grad)
    else:   # no parameter gradient: no owner to read (a copy of every call name spared)
        grad, owner = is_grad, {name: pa.nulls(len(names), pa.large_string()) for name in ("kind", "cls")}
    words = pa.array(list(IO_WORDS), pa.large_string())
    io_word = pc.take(pa.array(list(IO_WORDS.values()), pa.large_string()), pc.index_in(io, value_set=words))
    return {
        "call": call, "io": io_word, "arg": arg, "slot": slot,
        "direction": pc.if_else(pa.array(grad), pa.scalar("backward", pa.large_string()),
                                pa.scalar(None, pa.large_string())),
        "op_type": pc.binary_join_element_wise(owner["kind"], owner["cls"], DOT),
    }


# CURRENT_TENSOR's io words and its call's direction words, as bytes.
CURRENT_IO_BYTES = (b"input", b"kwargs", b"output", b"parameters")
DIRECTION_BYTES = (b"forward", b"backward")
# Digits of a call's counter, and dots in an argument (``input.3.0``: element 0 of argument 3), read
# from the buffer; a name with more is left to RE2.
COUNTER_DIGITS = 18
ARG_DOTS = 3


def _current_tensor(names: pa.Array) -> tuple[np.ndarray, list[Groups]]:
    """CURRENT_TENSOR's matches and groups, most of them read by numpy from the names' buffers (Arrow's
    split and RE2's capture cost about a second per million names). The pattern's call is greedy: it
    ends at the last dot after which the rest fits, the io word alone or the io word, a dot and an arg.
    So the dots are tried from the last: the io word after the dot compared byte by byte, the text
    before it tested as CURRENT_CALL (``.<direction>`` or ``.<direction>.<counter>`` after at least
    one character). A name with a newline, a counter of over COUNTER_DIGITS digits or an arg of over
    ARG_DOTS dots is left to RE2, as is any name this reading does not split."""
    n = len(names)
    hit = np.zeros(n, dtype=bool)
    if (buffers := cell_buffers(names)) is not None:
        offsets, text = buffers
        first, end = offsets[:-1], offsets[1:]
        usable = filled_cells(names, offsets) & (newlines_per_cell(names) == 0)
        dots = np.flatnonzero(text[int(first[0]):int(end[-1])] == ord(".")) + int(first[0])
        last = np.searchsorted(dots, end) - 1      # each name's last dot, counted among all the dots

        found_dots: dict[int, np.ndarray] = {}

        def dot(j: int) -> np.ndarray:   # the position of each name's j-th dot from its end (0: the last), or -1
            if j not in found_dots:
                k = last - j
                at = dots[np.clip(k, 0, None)] if dots.size else np.full(n, -1)
                found_dots[j] = np.where((k >= 0) & (at >= first), at, -1)
            return found_dots[j]

        def word(after: np.ndarray, before: np.ndarray, words: tuple[bytes, ...], where: np.ndarray) -> np.ndarray:
            """Where the bytes between the dot ``after`` and ``before`` are one of ``words``."""
            found = np.zeros(n, dtype=bool)
            rows = np.flatnonzero(where)
            length = before[rows] - after[rows] - 1
            for spelt in words:
                these = rows[length == len(spelt)]
                if these.size:
                    got = text[(after[these] + 1)[:, None] + np.arange(len(spelt))]
                    found[these[(got == np.frombuffer(spelt, dtype=np.uint8)).all(axis=1)]] = True
            return found

        def counter(after: np.ndarray, before: np.ndarray, where: np.ndarray) -> np.ndarray:
            """Where the bytes between the dots are 1 to COUNTER_DIGITS ASCII digits; a longer piece
            leaves its name to RE2."""
            length = before - after - 1
            usable[where & (length > COUNTER_DIGITS)] = False
            rows = np.flatnonzero(where & (length >= 1) & (length <= COUNTER_DIGITS))
            found = np.zeros(n, dtype=bool)
            if rows.size:
                at = np.minimum((after[rows] + 1)[:, None] + np.arange(COUNTER_DIGITS), len(text) - 1)
                digit = (text[at] >= ord("0")) & (text[at] <= ord("9"))
                found[rows[(digit | (np.arange(COUNTER_DIGITS) >= length[rows, None])).all(axis=1)]] = True
            return found

        def call_ends(j: int, where: np.ndarray) -> np.ndarray:
            """Where the text before the j-th dot from the end matches CURRENT_CALL whole."""
            ends, before, earlier = dot(j), dot(j + 1), dot(j + 2)
            direct = word(before, ends, DIRECTION_BYTES, where & (before > first))
            counted = counter(before, ends, where & ~direct & (earlier > first))
            return (direct | word(earlier, before, DIRECTION_BYTES, counted)) & usable

        # the greedy call ends at the last dot where the rest fits: the io word alone (j = 0), else the io
        # word and an arg of no dot, one dot... (j = 1, 2...; the rows still open at each step)
        cut, io_end = np.zeros(n, dtype=np.int64), end.copy()
        with_arg = np.zeros(n, dtype=bool)
        for j in range(ARG_DOTS + 2):
            after, before = dot(j), (dot(j - 1) if j else end)
            fits = usable & ~hit & (after >= 0) & (end > before + 1 if j else True)
            fits = word(after, before, CURRENT_IO_BYTES, fits)
            fits &= call_ends(j, fits)
            cut[fits], io_end[fits] = after[fits], before[fits]
            hit |= fits
            if j:
                with_arg |= fits
        groups = {"call": spans(names, first, cut, hit),
                  "io": spans(names, cut + 1, io_end, hit),
                  "arg": spans(names, io_end + 1, end, with_arg)}
    else:
        groups = {name: pa.nulls(n, pa.large_string()) for name in ("call", "io", "arg")}
    others = np.zeros(n, dtype=bool)
    unsure = np.flatnonzero(~hit)
    if unsure.size:
        others[unsure[_match_rows(names.take(pa.array(unsure)), CURRENT_TENSOR)]] = True
    if others.any():
        captured = _captured(names, TENSOR_PATTERNS[0], others)
        groups = {name: pc.coalesce(groups[name], captured[name]) for name in groups}
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
