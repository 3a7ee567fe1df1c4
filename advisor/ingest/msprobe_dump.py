"""Two msprobe dumps compared by their statistics: ``read_dump_pair(bench, target)``.

A dump is msprobe's ``dump.json`` (statistics mode: ``{"task", "level", "framework", "data": {call:
{"input_args": [...], "input_kwargs": {...}, "output": [...]}}}``, backward and module calls with
``input`` / ``output``, module ``parameters``, ``<module>.parameters_grad`` entries) or the old
ptdbg ``.pkl`` dump, which is text, one JSON array per line: ``[name, stack_id, [], dtype, shape,
[max, min, mean(, norm)]]``. It is never unpickled: a binary pickle is refused.

A tensor is an item with ``dtype`` and ``shape``; an argument is an item ``{"type": "int" | "float" |
"bool" | "str" ..., "value": ...}`` (``input_kwargs`` and positional alike): it becomes a row as msprobe's
compare CSV prints it, dtype ``<class 'int'>`` (``python.int``), a number's value as its statistics, a
bool's or a string's as ``npu_arg`` / ``golden_arg`` (``True``, ``nearest``); ``None`` is left out.
Its name follows msprobe's compare CSV: ``<call>.input.<n>`` (positional, nested ``<n>.<m>``),
``<call>.input.<keyword>``, ``<call>.output.<n>``, ``<call>.parameters.<name>``; its ``io`` and ``slot``
are where the dump puts it (``input_kwargs`` are inputs; ``<n>`` of ``<n>.<m>`` is the slot, a keyword
has none), its ``op_type`` and ``direction`` are its call's (advisor/ingest/msprobe_names.py).

Calls are paired by advisor/ingest/call_matching.py (exact name, then normalised across
frameworks), tensors of a pair by (input/output, position or keyword): advisor/ingest/msprobe_dump_rows.py.
What stays unpaired becomes ``npu_only`` (target only) or ``golden_only`` (bench only) rows. The
target is the ``npu`` side.

Only statistics are known, so only statistics are compared: ``npu_/golden_`` ``max, min, mean,
norm`` and ``max_rel_diff``... ``norm_rel_diff`` = |target - bench| / |bench| (0 where both are 0,
NaN where only the bench value is; advisor/ingest/derived_metrics.py). Cosine and every
element-wise error stay NaN: they cannot be computed from statistics. ``shape_mismatch`` compares
the two shapes; ``md5_match`` is filled when both tensors carry an ``md5`` (MD5-mode dumps).
``npu_nonfinite`` / ``golden_nonfinite``: the tensor's ``Max`` or ``Min`` is ``Infinity``, ``-Infinity``
or ``NaN`` (a value msprobe wrote, unlike an absent statistic).
``source_line`` is the line of the call's key in the dump the row comes from (the target's, or
the bench's for a bench-only row; the tensor's own line in a .pkl text dump).

Memory: a dump.json of a large model is hundreds of MB. It is read call by call
(advisor/jsonstream.py) straight into columns: per tensor a row of small integers (its call, its
io, the word of its name (``input``...), and codes into the distinct texts of its argument, dtype,
shape, md5 and value) and its four statistics; never the document, nor a Python object per tensor.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.errors import InputFormatError, UsageError
from advisor.ingest.call_matching import pair_calls
from advisor.ingest.msprobe_dump_rows import GRAD, IO_NAMES, STATS, WORDS, DumpColumns, canonical_table, paired_rows
from advisor.ingest.msprobe_names import IO_WORDS, split_tensor_names
from advisor.ingest.table import ComparisonTable
from advisor.inputfiles import open_input
from advisor.jsonstream import JsonText, text_chunks
from advisor.memory import give_back_free_heap
from advisor.nesting import loads_json

FORMAT = "msprobe-dump"
STAT_KEYS = {"Max": "max", "Min": "min", "Mean": "mean", "Norm": "norm"}
# dump.json keys of a call -> the word msprobe puts in tensor names
NAME_WORDS = {"input_args": "input", "input_kwargs": "input", "input": "input", "output": "output",
              "parameters": "parameters"}
# the same key -> (the word's code in WORDS, the io's code in IO_NAMES)
KEY_CODES = {key: (WORDS.index(word), IO_NAMES.index(IO_WORDS[word])) for key, word in NAME_WORDS.items()}
GRAD_IO = IO_NAMES.index(IO_WORDS["parameters_grad"])
NONE = -1   # the code of an absent text
_POSITIONS = tuple(str(i) for i in range(64))   # the names of a call's first positions: "0", "1"...


def read_dump_pair(bench: str | Path, target: str | Path) -> ComparisonTable:
    """Compare two dumps by statistics; the target is the NPU side of the table."""
    table = _compared(load_dump(Path(bench)), load_dump(Path(target)))
    give_back_free_heap()   # what the two dumps' columns held, freed, goes back before the analysis grows
    return table


def _compared(bench: DumpColumns, target: DumpColumns) -> ComparisonTable:
    rows = paired_rows(pair_calls(target.calls, bench.calls), target, bench)
    return canonical_table(rows, target, bench, source=target.path, format=FORMAT)


@dataclass(frozen=True)
class DumpPairEntry:
    """The registry entry for ``--format`` listings: a dump pair is not one file, so it is never
    detected from a header and ``read_comparison`` cannot read it."""

    name: str = FORMAT
    expected_header: str = "two dump.json files: advisor run --bench BENCH/dump.json --target TARGET/dump.json"

    def matches(self, header_fields: list[str]) -> bool:
        return False

    def read(self, path: Path, encoding: str) -> ComparisonTable:
        raise UsageError(f"format '{FORMAT}' compares two dump.json files: give both, "
                         "advisor run --bench BENCH/dump.json --target TARGET/dump.json")


# --- loading ---------------------------------------------------------------------------------------

def load_dump(path: Path) -> DumpColumns:
    if not path.exists():
        raise InputFormatError("file not found", path=path)
    if path.is_dir():
        raise InputFormatError("is a directory, expected an msprobe dump.json file", path=path)
    with open_input(path, what="dump.json") as handle:
        if handle.peek(1)[:1] == b"\x80":
            raise InputFormatError("a binary pickle: advisor never unpickles files; "
                                   "re-dump with msprobe to get dump.json", path=path)
        text = JsonText(text_chunks(handle, path, InputFormatError), path, InputFormatError)
        start = text.peek()
        if start == "{":
            return _load_dump_json(path, text)
        if start == "[":
            return _load_pkl_text(path, text.line_at(text.position), text.rest())
    raise InputFormatError("not an msprobe dump.json nor a ptdbg .pkl text dump "
                           "(expected '{' or '[' at the start)", path=path, line=1)


def _load_dump_json(path: Path, text: JsonText) -> DumpColumns:
    columns = _Columns(path)
    for call, entry, line in text.members("data"):
        if not isinstance(entry, dict):
            raise InputFormatError(f"expected an object, found {type(entry).__name__}", path=path, line=line,
                                   field=f"data.{call}")
        columns.add_call(call, entry, line)
    if not text.streamed:
        raise InputFormatError("no 'data' object: not an msprobe dump.json", path=path, field="data")
    framework = text.top.get("framework")
    return columns.finish(framework if isinstance(framework, str) else None)


class _Codes:
    """Distinct texts numbered as they first appear: a column of repeated texts held as codes."""

    __slots__ = ("numbers", "texts")

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.texts: list[str] = []

    def code(self, text: str | None) -> int:
        if text is None:
            return NONE
        number = self.numbers.get(text)
        if number is None:
            number = self.numbers[text] = len(self.texts)
            self.texts.append(text)
        return number


class _Columns:
    """The tensors of one dump as they are read, a row per tensor in three arrays: ``codes`` (its
    call, io and word, then the codes of its texts in CODED order), ``stats`` (max, min, mean, norm)
    and ``nonfinite``. Calls are numbered in file order."""

    CODED = ("arg", "dtype", "shape", "md5", "text")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[str] = []
        self.call_lines = array("q")
        self.texts = {name: _Codes() for name in self.CODED}
        # the codes a tensor takes, and their numbers, at hand (the per-tensor loop looks them up directly)
        self._arg_codes, self._dtype_codes, self._shape_codes, self._md5_codes = (
            self.texts[name] for name in ("arg", "dtype", "shape", "md5"))
        self._arg_numbers, self._dtype_numbers, self._shape_numbers = (
            self.texts[name].numbers for name in ("arg", "dtype", "shape"))
        self.codes = array("i")        # call, io, word, then the CODED codes: 8 per tensor
        self.stats = array("d")        # 4 per tensor
        self.nonfinite = bytearray()
        self.lines = array("q")        # per tensor, only where a tensor has its own line (.pkl)
        self.names: list[str] = []     # per tensor, only where a tensor is named whole (.pkl)

    def add_call(self, call: str, entry: dict[str, Any], line: int) -> None:
        number = len(self.calls)
        self.calls.append(call)
        self.call_lines.append(line)
        if call.endswith(GRAD):  # {"weight": {...}, "bias": {...}} of a module: <module>.parameters_grad.<name>
            self._add(number, GRAD_IO, NONE, entry, "")
            return
        for key, value in entry.items():
            codes = KEY_CODES.get(key)
            if codes is None:
                continue
            if type(value) is list:   # positional arguments, outputs: the usual shape of a call, walked here
                word, io = codes
                for i, item in enumerate(value):
                    if type(item) is dict and "dtype" in item and "shape" in item:
                        self._tensor(number, io, word, item, _POSITIONS[i] if i < len(_POSITIONS) else str(i))
                    else:
                        self._add(number, io, word, item, str(i))
            else:
                self._add(number, codes[1], codes[0], value, "")

    def _add(self, call: int, io: int, word: int, value: Any, arg: str) -> None:
        """The tensors and arguments in one argument, list or dict (nested); ``word``: of the
        tensors' names, ``<call>.<word>.<arg>`` (none: ``<call>.<arg>``)."""
        if isinstance(value, dict):
            if "dtype" in value and "shape" in value:
                self._tensor(call, io, word, value, arg)
            elif "type" in value:
                if "value" in value and value["value"] is not None:
                    self._argument(call, io, word, value, arg)
            else:   # keyword arguments, parameters
                for key, item in value.items():
                    self._add(call, io, word, item, f"{arg}.{key}" if arg else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                self._add(call, io, word, item, f"{arg}.{i}" if arg else str(i))

    def _tensor(self, call: int, io: int, word: int, tensor: dict[str, Any], arg: str) -> None:
        get = tensor.get
        high, low, mean, norm = get("Max"), get("Min"), get("Mean"), get("Norm")
        if type(high) is float and type(low) is float and type(mean) is float and type(norm) is float:
            # the usual tensor, four plain floats: what the general path below gives, without its calls
            self.stats.extend((high, low, mean, norm))
            nonfinite = not (isfinite(high) and isfinite(low))
        else:
            self.stats.extend([self._stat(call, word, arg, tensor, key) for key in STAT_KEYS])
            nonfinite = _nonfinite_extrema(high, low)
        dtype, shape, md5 = tensor["dtype"], tensor["shape"], get("md5")
        # the codes of the texts (_Codes.code), looked up here: a million tensors make four million
        dtype = dtype if type(dtype) is str else str(dtype)
        shape = _shape_text(shape)
        arg_code = self._arg_numbers.get(arg) if arg else NONE
        dtype_code = self._dtype_numbers.get(dtype)
        shape_code = self._shape_numbers.get(shape) if shape is not None else NONE
        if arg_code is None:
            arg_code = self._arg_codes.code(arg)
        if dtype_code is None:
            dtype_code = self._dtype_codes.code(dtype)
        if shape_code is None:
            shape_code = self._shape_codes.code(shape)
        self.codes.extend((call, io, word, arg_code, dtype_code, shape_code,
                           self._md5_codes.code(str(md5)) if md5 else NONE, NONE))
        self.nonfinite.append(nonfinite)

    def _stat(self, call: int, word: int, arg: str, tensor: dict[str, Any], key: str) -> float:
        value = tensor.get(key)
        if value is None:
            return math.nan
        try:
            return float(value)  # bool (Bool tensors) -> 0.0 / 1.0; "inf" / "nan" strings too
        except (TypeError, ValueError):
            name = ".".join(part for part in (self.calls[call], WORDS[word] if word != NONE else "", arg) if part)
            raise InputFormatError(f"bad number {value!r}", path=self.path, field=f"{name}.{key}") from None

    def _argument(self, call: int, io: int, word: int, item: dict[str, Any], arg: str) -> None:
        """An argument's row, as msprobe's compare CSV prints one: a number's value as every statistic; a
        bool's or a string's value as text (``True``, ``nearest``), no statistics."""
        value, texts = item["value"], self.texts
        dtype = texts["dtype"].code(f"<class '{item['type']}'>")
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = _as_float(value)
            self.stats.extend((number, number, number, abs(number)))
            self.nonfinite.append(not math.isfinite(number))
            shown = NONE
        else:
            self.stats.extend((math.nan,) * 4)
            self.nonfinite.append(False)
            shown = texts["text"].code(str(value))
        self.codes.extend((call, io, word, texts["arg"].code(arg or None), dtype, texts["shape"].code("[]"), NONE,
                           shown))

    def add_tensor(self, call: int, io: int, name: str, arg: str | None, dtype: str, shape: str | None,
                   stats: list[float], nonfinite: bool, line: int) -> None:
        """One tensor of a .pkl text dump, named whole, its parts split from its name."""
        texts = self.texts
        self.codes.extend((call, io, NONE, texts["arg"].code(arg), texts["dtype"].code(dtype),
                           texts["shape"].code(shape), NONE, NONE))
        self.stats.extend(stats)
        self.nonfinite.append(nonfinite)
        self.lines.append(line)
        self.names.append(name)

    def finish(self, framework: str | None) -> DumpColumns:
        """The columns, as views of what was read (no copy: a copy would double the dump's memory)."""
        codes = np.frombuffer(self.codes, dtype=np.intc).reshape(-1, 3 + len(self.CODED))
        lines = np.frombuffer(self.lines, dtype=np.int64) if self.lines else \
            np.frombuffer(self.call_lines, dtype=np.int64)[codes[:, 0]]
        return DumpColumns(
            path=self.path, framework=framework, calls=self.calls, call=codes[:, 0], io=codes[:, 1], word=codes[:, 2],
            codes={name: codes[:, 3 + i] for i, name in enumerate(self.CODED)},
            texts={name: self.texts[name].texts for name in self.CODED},
            stats=np.frombuffer(self.stats, dtype=np.float64).reshape(-1, len(STATS)),
            nonfinite=np.frombuffer(self.nonfinite, dtype=np.bool_), line=lines, names=self.names or None)


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:   # an integer beyond float64's range is, as a float, infinite
        return math.inf if value > 0 else -math.inf


def _nonfinite_extrema(*values: Any) -> bool:
    """Whether a printed maximum or minimum is inf or NaN (``Infinity``, ``NaN``: JSON's spellings,
    or the same as text); an absent value (None) says nothing."""
    for value in values:
        if value is None or isinstance(value, bool):
            continue
        try:
            if not math.isfinite(float(value)):
                return True
        except (TypeError, ValueError, OverflowError):
            continue
    return False


def _shape_text(shape: Any) -> str | None:
    """A shape as printed: ``[4, 16]``. ``str`` of a list prints numbers so, in C; a list holding
    text would print its quotes, so it is joined by hand."""
    if shape is None:
        return None
    text = str(shape)
    if isinstance(shape, list | tuple) and ("'" in text or '"' in text):
        return "[" + ", ".join(str(d) for d in shape) + "]"
    return text


def _load_pkl_text(path: Path, first_line: int, text: str) -> DumpColumns:
    """A ptdbg .pkl text dump (read whole: the old tool's dumps are small), a tensor per line;
    ``text`` starts on line ``first_line``."""
    records = []
    for number, line in enumerate(text.splitlines(), start=first_line):
        if not line.strip():
            continue
        try:
            item = loads_json(line, path, InputFormatError)
            name, dtype, shape, stats = item[0], item[3], item[4], list(item[5])
        except (InputFormatError, IndexError, TypeError, KeyError):
            raise InputFormatError("expected a JSON array [name, stack_id, [], dtype, shape, [max, min, mean]]",
                                   path=path, line=number) from None
        try:
            values = [float(v) if v is not None else math.nan for v in (stats + [None] * 4)[:4]]
        except (TypeError, ValueError, OverflowError):
            raise InputFormatError(f"bad statistics {stats!r}", path=path, line=number) from None
        records.append((str(name), str(dtype), _shape_text(shape), values, _nonfinite_extrema(*stats[:2]), number))
    if not records:
        raise InputFormatError("empty dump", path=path)
    parts = split_tensor_names(pd.Series([r[0] for r in records], dtype="string"))
    columns = _Columns(path)
    numbers: dict[str, int] = {}
    for (name, dtype, shape, values, nonfinite, line), call, io, arg in zip(
            records, parts["call"].array, parts["io"].array, parts["arg"].array, strict=True):
        if io is pd.NA:   # a name no pattern splits: the tensor is its own call
            call, arg = name, None
        elif io == "parameter_grad":   # a module's parameter gradient: its call, as in a dump.json
            call = f"{call}{GRAD}"
        if arg is pd.NA:   # the bare "_output" of old names is output 0, as "output.0" in a dump.json
            arg = "0"
        if call not in numbers:
            numbers[call] = len(columns.calls)
            columns.calls.append(call)
        columns.add_tensor(numbers[call], NONE if io is pd.NA else IO_NAMES.index(io), name, arg, dtype, shape,
                           values, nonfinite, line)
    return columns.finish(None)
