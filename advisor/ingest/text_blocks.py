"""The Arrow read of a text CSV, every cell as a string, block by block (advisor/ingest/csv_cells.py
reads msprobe and generic comparison files through it): Arrow parses each block without the GIL
while a second thread counts the newlines and filled cells of the one before."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.ingest.arrow_text import newlines_per_cell
from advisor.memory import give_back_free_heap, scratch_pool

# Bytes of the file per Arrow block. The blocks are parsed in a scratch pool and what is kept is copied
# out (advisor/memory.py): on the 1M-row summary CSV, 2 MiB blocks read in 7.1 CPU s at a peak of
# 1,182 MiB, 16 MiB blocks in 7.7 s at 1,308 MiB (parsed in the default pool: 9.0 s, 1,136 MiB).
BLOCK_BYTES = 2 << 20
# Blocks parsed but not yet counted: the parse waits for the counts beyond this.
MAX_PENDING_BLOCKS = 4


def arrow_text_cells(path: Path, encoding: str, sep: str, names: list[str],
                     unused: frozenset[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray] | None:
    """The cells as ``pd.read_csv(..., dtype=str, na_values=[""])`` gives them (Arrow strings, NA where
    empty), parsed by pyarrow block by block (pandas' C parser makes every cell a string object
    first, four times the time of its numeric read on a million msprobe rows); the ``unused``
    columns of each block are dropped once its newlines and empty cells are counted, so their text
    (msprobe's stack column: 40 % of a summary CSV) is never held whole. Also per row: the newlines
    in its cells, whether any cell is filled. None when pyarrow refuses the file (a row of the
    wrong length, a blank line, bytes that are not UTF-8...): pandas then reads it and says what is
    wrong, as before."""
    if encoding not in ("utf-8", "utf-8-sig"):
        return None
    import pyarrow as pa
    import pyarrow.csv as pcsv

    kept = [name for name in names if name not in unused]
    chunks: dict[str, list[Any]] = {name: [] for name in kept}
    newlines, filled = [], []
    scratch, keep = scratch_pool(), pa.default_memory_pool()

    def take(counts: tuple[np.ndarray, np.ndarray]) -> None:
        newlines.append(counts[0])
        filled.append(counts[1])

    # A second thread counts a block's newlines and filled cells while Arrow parses the next one (without
    # the GIL). The columns kept are copied out here: copies made on the second thread land in another
    # glibc arena and left ~90 MiB more resident after the read of a 1M-row summary CSV.
    pending: deque[Future[tuple[np.ndarray, np.ndarray]]] = deque()
    try:
        reader = pcsv.open_csv(
            path, read_options=pcsv.ReadOptions(column_names=names, skip_rows=1, block_size=BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types={name: pa.large_string() for name in names},
                                                null_values=[""], strings_can_be_null=True,
                                                quoted_strings_can_be_null=True),
            memory_pool=scratch)
        with ThreadPoolExecutor(max_workers=1) as worker:
            for batch in reader:
                pending.append(worker.submit(_block_counts, batch))
                for name in kept:
                    chunks[name].append(pa.concat_arrays([batch.column(name)], memory_pool=keep))
                del batch
                if len(pending) > MAX_PENDING_BLOCKS:
                    take(pending.popleft().result())
            while pending:
                take(pending.popleft().result())
    except (pa.ArrowException, OSError):
        return None
    dtype = pd.StringDtype("pyarrow", na_value=np.nan)    # what read_csv's dtype=str gives
    columns = {}
    for name in kept:  # one contiguous array per column (later steps take it whole, without a copy)
        pieces = chunks.pop(name)
        combined = pa.concat_arrays(pieces) if pieces else pa.array([], type=pa.large_string())
        del pieces     # this column's blocks are freed before the next column is joined
        columns[name] = pd.arrays.ArrowStringArray(combined, dtype=dtype)
    frame = pd.DataFrame(columns, copy=False)
    scratch.release_unused()
    give_back_free_heap()   # what the blocks and the chunks left free inside the heaps
    empty = np.zeros(0, dtype=np.int64)
    return frame, np.concatenate(newlines) if newlines else empty, \
        np.concatenate(filled) if filled else empty.astype(bool)


def _block_counts(batch: Any) -> tuple[np.ndarray, np.ndarray]:
    """Of one block of cells: per row the newlines in its cells and whether any cell is filled."""
    count = np.zeros(batch.num_rows, dtype=np.int64)
    any_cell = np.zeros(batch.num_rows, dtype=bool)
    for column in batch.columns:
        any_cell |= column.is_valid().to_numpy(zero_copy_only=False)
        count += newlines_per_cell(column)
    return count, any_cell
