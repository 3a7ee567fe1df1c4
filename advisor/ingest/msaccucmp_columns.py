"""The final columns of the fast read of an msaccucmp result (msaccucmp_arrow.py), grown block
by block: numbers in numpy arrays, text in Arrow chunks, coded columns as each block's distinct
texts and codes until the whole file is read, when they become one pandas Categorical."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from advisor.ingest.msaccucmp_fields import string_array

# Text is joined JOIN_BYTES of the file at a time, so a text column has about as many chunks as with
# the 16 MiB blocks the later stages were tuned on (~20 at 1M rows), not one per block: every later
# Arrow operation on a column (comparisons, takes, factorize) makes a call per chunk.
JOIN_BYTES = 16 << 20


class Parts:
    """The final columns, block by block. Numbers go straight into arrays sized from the first
    block (pages never written are never resident; a file longer than guessed grows them), so no
    column is ever held twice; Arrow text is kept in chunks of JOIN_BYTES of the file."""

    def __init__(self, file_bytes: int, block_bytes: int) -> None:
        self.file_bytes = file_bytes
        self.block_bytes = block_bytes
        self.capacity = 0
        self.rows = 0           # rows of the blocks given room so far
        self.arrays: dict[str, np.ndarray] = {}
        self.chunks: dict[str, list[Any]] = {}
        self.maps: dict[str, dict[str, Any]] = {}  # distinct text -> mapped value, per column

    def must_grow(self, rows: int) -> bool:
        return bool(self.capacity) and self.rows + rows > self.capacity

    def next_block(self, rows: int) -> int:
        """Make room for a block of ``rows``; its first row."""
        if not self.capacity:  # a block is block_bytes of the file; guess a quarter more rows
            self.capacity = rows + int(1.25 * rows * self.file_bytes / self.block_bytes)
        if self.rows + rows > self.capacity:
            self.capacity = max(self.rows + rows, 2 * self.capacity)
            for name, values in self.arrays.items():
                grown = np.empty(self.capacity, dtype=values.dtype)
                grown[:self.rows] = values[:self.rows]
                self.arrays[name] = grown
        start, self.rows = self.rows, self.rows + rows
        return start

    def add(self, name: str, piece: Any, start: int) -> None:
        if isinstance(piece, np.ndarray):
            if name not in self.arrays:
                self.arrays[name] = np.empty(self.capacity, dtype=piece.dtype)
            self.arrays[name][start:start + len(piece)] = piece
        elif isinstance(piece, tuple):  # a coded column's block (_coded): its distinct texts, codes into them
            texts, codes = piece
            self.chunks.setdefault(name, [[], []])[0].append((texts, start))
            self.add(name + "/codes", codes, start)   # into one array: no small array per block kept
        else:
            chunks = self.chunks.setdefault(name, [[], []])  # joined chunks, blocks not yet joined
            chunks[1].append(piece)
            if len(chunks[1]) * self.block_bytes >= JOIN_BYTES:
                chunks[0].append(_joined(chunks[1]))
                chunks[1] = []

    def __contains__(self, name: str) -> bool:
        return name in self.arrays or name in self.chunks

    def numpy(self, name: str) -> np.ndarray:
        return self.arrays.pop(name)[:self.rows]

    def strings(self, name: str) -> pd.api.extensions.ExtensionArray:
        import pyarrow as pa

        joined, blocks = self.chunks.pop(name)
        return string_array(pa.chunked_array([*joined, *blocks], type=pa.large_string()))

    def categorical(self, name: str) -> pd.Categorical:
        """A coded column from its blocks' distinct texts and codes. The blocks' texts are sorted
        by Arrow, once for the file (the order ``coded`` gives every reader's texts; pandas would sort
        and recode them through Python objects, about a second for the op names of a million rows):
        equal neighbours are one text, so sorting also finds the distinct texts, faster than hashing
        them (a text is in several blocks' texts when its rows span blocks, and a dtype can be twice
        in one block's: two names of one dtype).
        Each block's codes are then mapped through."""
        import pyarrow as pa
        import pyarrow.compute as pc

        blocks = self.chunks.pop(name)[0]   # (texts, first row) per block, in row order
        texts = pa.chunked_array([block_texts for block_texts, _ in blocks], type=pa.large_string()).combine_chunks()
        order = pc.array_sort_indices(texts).to_numpy()
        ordered = texts.take(order)
        new = np.ones(len(ordered), dtype=bool)   # a sorted position that starts another distinct text
        if len(ordered) > 1:
            new[1:] = np.asarray(pc.not_equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False), dtype=bool)
        code_type = np.int32 if len(ordered) < 2**31 - 1 else np.int64
        code_of = np.empty(len(order), dtype=code_type)   # per block text, its code in the sorted distinct texts
        code_of[order] = np.cumsum(new, dtype=code_type) - 1
        codes = self.numpy(name + "/codes").astype(code_type, copy=False)   # per row, into its block's texts
        ends = [start for _, start in blocks[1:]] + [len(codes)]
        first = 0
        for (block_texts, start), end in zip(blocks, ends, strict=True):   # one more slot for NA (code -1)
            codes[start:end] = np.append(code_of[first:first + len(block_texts)], -1)[codes[start:end]]
            first += len(block_texts)
        # Each text is in the categories once: no check of that (pandas checks it with a hash table
        # of Python strings, ~30 MiB for the op names of a million rows, kept with the categories).
        distinct = ordered.filter(pa.array(new))
        dtype = pd.CategoricalDtype._from_fastpath(pd.Index(string_array(distinct)), ordered=False)
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)

    def booleans(self, name: str) -> pd.api.extensions.ExtensionArray:
        return pd.arrays.BooleanArray(self.numpy(name), self.numpy(name + "/na"))


def _joined(blocks: list[Any]) -> Any:
    import pyarrow as pa

    return pa.chunked_array(blocks, type=pa.large_string()).combine_chunks()
