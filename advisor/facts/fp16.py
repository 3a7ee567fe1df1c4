"""FP16 planning: which ops are FP16-sensitive, and what to keep in FP32 where an overflow starts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..catalogs import load_catalog, op_type_of_name
from ..ingest.table import lower_isin


def mark_fp16_sensitive(ops: pd.DataFrame, examined: np.ndarray | None = None) -> None:
    """``fp16_sensitive`` (the op's type, or one of its golden ops', is FP16-sensitive) and
    ``sensitive_golden`` (those golden ops, comma-joined) for the ``examined`` ops, NA for the
    others; every op when ``examined`` is None. The rules see only the notable ops and
    ``keep_fp32_names`` reads only the ops from an overflow onset on (``examined_for_fp16``): a
    million-row comparison need not scan each of its ~300k distinct golden texts (~0.35 s)."""
    catalog = load_catalog("fp16_sensitive")
    by_type = lower_isin(ops["op_type"], catalog).to_numpy(dtype=bool)
    golden = ops["golden_ops"]
    if examined is None or examined.all():
        examined = np.ones(len(ops), dtype=bool)
        by_golden = _sensitive_golden_of(golden, catalog)
    else:
        at = np.flatnonzero(examined)
        found = _sensitive_golden_of(golden.iloc[at].astype("string"), catalog)
        by_golden = pd.Series(pd.NA, index=ops.index, dtype=found.dtype)
        by_golden.iloc[at] = found.to_numpy(dtype=object, na_value=pd.NA)
    ops["sensitive_golden"] = by_golden
    ops["fp16_sensitive"] = pd.arrays.BooleanArray(by_type | by_golden.notna().to_numpy(dtype=bool), ~examined)


def examined_for_fp16(notable: np.ndarray, overflow_enters: np.ndarray, span: int) -> np.ndarray:
    """The ops whose FP16 sensitivity is read: the notable ops (their facts carry it) and the
    ``span`` ops from each overflow onset on (``keep_fp32_names``)."""
    starts = np.flatnonzero(overflow_enters)
    edges = np.zeros(len(notable) + 1, dtype=np.int64)
    np.add.at(edges, starts, 1)
    np.add.at(edges, np.minimum(starts + span, len(notable)), -1)
    return notable | (np.cumsum(edges[:-1]) > 0)


def _sensitive_golden_of(golden: pd.Series, catalog: dict[str, str]) -> pd.Series:
    """Per op (``golden``'s index), its FP16-sensitive golden names, comma-joined (NA: none). A coded
    column's distinct texts are scanned once each and the answers spread by its codes."""
    coded = isinstance(golden.dtype, pd.CategoricalDtype)
    texts = pd.Series(golden.cat.categories, dtype=golden.cat.categories.dtype) if coded else golden
    found = _sensitive_golden_ascii(texts, catalog)
    if found is None:
        found = _sensitive_golden_exact(texts.dropna(), catalog)
    if not found.index.equals(texts.index):
        found = found.reindex(texts.index)
    if coded:
        return pd.Series(found.array.take(golden.cat.codes.to_numpy(), allow_fill=True), index=golden.index)
    return found


def _sensitive_golden_exact(golden: pd.Series, catalog: dict[str, str]) -> pd.Series:
    """Per op (``golden``'s index), its golden names whose type is in ``catalog``, comma-joined.

    The reference version, for names that are not plain ASCII: one Python call per name. (Joining
    with ``groupby(...).agg(",".join)`` costs a Python call *per op*: 3 s for 300k ops.)"""
    names = golden.str.split(",").explode().str.strip()
    sensitive = names[names.map(op_type_of_name).str.lower().isin(catalog)]
    joined: dict[Any, str] = {}
    for label, name in zip(sensitive.index, sensitive, strict=True):
        joined[label] = f"{joined[label]},{name}" if label in joined else name
    return pd.Series(joined) if joined else sensitive.groupby(level=0).agg(",".join)


# Byte classes for _sensitive_golden_ascii. SPACE: what str.strip() removes, in ASCII.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0"):ord("9") + 1] = True
_ALPHA = np.zeros(256, dtype=bool)
_ALPHA[ord("a"):ord("z") + 1] = _ALPHA[ord("A"):ord("Z") + 1] = True
_ALNUM = _ALPHA | _DIGIT
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"):ord("Z") + 1] += 32
_CELLS_PER_BLOCK = 65536  # bounds the byte arrays' memory


def _sensitive_golden_ascii(column: pd.Series, catalog: dict[str, str]) -> pd.Series | None:
    """``_sensitive_golden_exact`` of ``column.dropna()`` with array operations, on the cells joined
    into byte strings (a million-row comparison holds ~300k ops: a Python call per golden name costs
    seconds). The cells become Python strings one block at a time, never all at once.

    None when a cell is not plain ASCII (``str.strip`` and the type regex then follow Unicode
    rules) or holds a newline or NUL: use the exact version.
    """
    keys = [key.encode("ascii") for key in catalog if key.isascii()]
    width = max(map(len, keys), default=0)
    if not width:
        return None
    keys_array = np.array(keys, dtype=f"S{width}")
    present = np.flatnonzero(column.notna().to_numpy(dtype=bool))
    cells: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    for start in range(0, len(present), _CELLS_PER_BLOCK):
        at = present[start:start + _CELLS_PER_BLOCK]
        block = column.iloc[at].tolist()
        blob = "\n".join(block) + "\n"
        if not blob.isascii() or blob.count("\n") != len(block) or "\0" in blob:
            return None
        joined, owner = _sensitive_names(np.frombuffer(blob.encode("ascii"), dtype=np.uint8), keys_array)
        cells.append(joined)
        owners.append(at[owner])
    owned = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
    if not len(owned):  # the exact version's empty result, from a cell known to hold none
        return _sensitive_golden_exact(column.iloc[present[:1]], catalog)
    return _lines_at(np.concatenate(cells), owned, column.index)


def _lines_at(lines: np.ndarray, at: np.ndarray, index: pd.Index) -> pd.Series:
    """The "\n"-terminated ASCII lines in ``lines`` (bytes) at positions ``at`` (ascending) of a
    Series on ``index``, NA elsewhere: an Arrow string column built from the bytes, in the dtype
    pandas gives a Series of strings, with no Python string per line."""
    ends = np.flatnonzero(lines == ord("\n"))
    offsets = np.concatenate(([0], ends - np.arange(len(ends)))).astype(np.int64)   # without the "\n"s
    texts = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets),
                                             pa.py_buffer(lines[lines != ord("\n")].tobytes()))
    where = np.full(len(index), -1, dtype=np.int64)
    where[at] = np.arange(len(at))
    taken = texts.take(pa.array(where, mask=where < 0))
    return pd.Series(pd.array(taken, dtype=pd.StringDtype("pyarrow", na_value=np.nan)), index=index)


def _sensitive_names(buf: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For cells joined by "\n" into ``buf``: the comma-joined sensitive names of each cell that
    has any (as bytes, one "\n"-terminated line per such cell), and the cell numbers. Each name
    is a span of ``buf``; stripping, its leaf (after the last "/") and its type
    (``op_type_of_name``: a leaf ``<letter><letters/digits>_<digits>`` without the ``_<digits>``,
    else the whole leaf) are span arithmetic."""
    size = len(buf)
    ends = np.flatnonzero((buf == ord(",")) | (buf == ord("\n")))  # every name ends at one
    closes_cell = buf[ends] == ord("\n")
    cell = np.cumsum(closes_cell) - closes_cell
    first = np.concatenate(([0], ends[:-1] + 1))
    stop = ends.copy()
    # str.strip(): [first, stop) is the name without surrounding spaces (the loops run once per
    # space of the most padded name: none in real files).
    while (move := (first < stop) & _SPACE[buf[np.minimum(first, size - 1)]]).any():
        first += move
    while (move := (stop > first) & _SPACE[buf[stop - 1]]).any():
        stop -= move
    slashes = np.concatenate(([-1], np.flatnonzero(buf == ord("/"))))
    leaf = np.maximum(slashes[np.searchsorted(slashes, stop) - 1] + 1, first)
    digits_from = stop.copy()
    while (move := (digits_from > leaf) & _DIGIT[buf[digits_from - 1]]).any():
        digits_from -= move
    underscore = digits_from - 1
    suffixed = (digits_from < stop) & (underscore > leaf) & (buf[np.maximum(underscore, 0)] == ord("_"))
    # The part before "_<digits>" must start with a letter and hold letters and digits only.
    odd = np.concatenate((np.flatnonzero(~_ALNUM[buf]), [size]))
    plain = odd[np.searchsorted(odd, leaf)] >= underscore
    typed = suffixed & plain & _ALPHA[buf[np.minimum(leaf, size - 1)]]
    length = np.where(typed, underscore, stop) - leaf
    # The lower-cased type as fixed-width bytes; a type longer than every key cannot match.
    width = keys.dtype.itemsize
    fits = np.flatnonzero(length <= width)
    chars = np.zeros((len(fits), width), dtype=np.uint8)
    for k in range(width):
        chars[:, k] = np.where(k < length[fits], _LOWER[buf[np.minimum(leaf[fits] + k, size - 1)]], 0)
    sensitive = fits[np.isin(chars.view(f"S{width}").ravel(), keys)]
    if not len(sensitive):
        return np.zeros(0, dtype=np.uint8), sensitive
    # Keep each sensitive name and the byte after it, rewritten to "," when the next kept name is
    # of the same cell, else to "\n": the kept bytes then read as one joined cell per line.
    owner = cell[sensitive]
    more = np.concatenate((owner[1:] == owner[:-1], [False]))
    out = buf.copy()
    out[stop[sensitive]] = np.where(more, ord(","), ord("\n"))
    edges = np.zeros(size + 1, dtype=np.int8)  # +1 where a kept span starts, -1 after it ends
    edges[first[sensitive]] = 1
    edges[stop[sensitive] + 1] -= 1
    return out[np.cumsum(edges[:size], dtype=np.int8) > 0], owner[np.concatenate(([True], owner[1:] != owner[:-1]))]


FP32_WINDOW = ("op", "sensitive_golden", "out_overflow", "in_overflow", "fp16_sensitive")


def fp32_window(ops: pd.DataFrame) -> list[np.ndarray]:
    """The columns keep_fp32_names reads, as plain values, taken once for every onset it is asked
    about: a slice of the frame per onset copies every column (9 ms an onset on 100k ops), and a
    row of it (iterrows) makes every coded column's distinct texts into Python objects."""
    return [ops[column].to_numpy(dtype=object) for column in FP32_WINDOW]


def keep_fp32_names(ops: pd.DataFrame, position: int, span: int, window: list[np.ndarray] | None = None) -> list[str]:
    """What to keep in FP32 for an overflow starting at ``position``: the op itself and the
    FP16-sensitive ops after it whose outputs are still out of range (a LayerNorm's Pow overflows,
    then its ReduceMean, Sqrt and Div see inf), and the sensitive op that then reads the
    out-of-range values back in (a Softmax after logits past 65504: kept in FP16, its input would
    be cast back and saturate again). Golden op names where known, since keep-dtype lists name the
    original model's ops. Only what the comparison shows overflowing, smallest set first.
    ``window``: ``fp32_window(ops)``, when the caller asks about many onsets."""
    def keep(op: dict[str, Any]) -> None:
        golden = op["sensitive_golden"]
        names.extend(golden.split(",") if isinstance(golden, str) else [op["op"]])

    columns = window if window is not None else [ops[c].iloc[position: position + span].to_numpy(dtype=object)
                                                 for c in FP32_WINDOW]
    start = position if window is not None else 0
    names: list[str] = []
    for offset, values in enumerate(zip(*(c[start: start + span] for c in columns), strict=True)):
        op = dict(zip(FP32_WINDOW, values, strict=True))
        if offset and not op["out_overflow"]:
            if op["in_overflow"] and op["fp16_sensitive"]:
                keep(op)
            break
        if not offset or op["fp16_sensitive"]:
            keep(op)
    return list(dict.fromkeys(names))


def summarise_overflow(network: dict[str, Any], ops: pd.DataFrame, *, span: int, most: int) -> None:
    """Ops where an overflow starts on agreeing inputs (not fed by an earlier overflow's garbage),
    and the union of what to keep in FP32 for all of them (at most ``most`` names): a user who fixes
    only the first overflow would otherwise meet the next one in the following run. Read from every
    op, not only those handed to the rules, so the count does not depend on --max-op-facts."""
    independent = np.flatnonzero((ops["overflow_enters"] & ops["inputs_agree"]).to_numpy(dtype=bool))
    network["overflow_entries"] = len(independent)
    keep: dict[str, None] = {}
    window = fp32_window(ops) if len(independent) > 1 else None
    for position in independent:
        if len(keep) >= most:
            break
        keep.update(dict.fromkeys(keep_fp32_names(ops, int(position), span, window)))
    if keep:
        network["keep_fp32_all"] = ",".join(list(keep)[:most])
