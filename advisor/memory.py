"""glibc's allocator, told how a column-sized workload uses memory: the one place advisor calls
``mallopt`` and ``malloc_trim`` (Linux with glibc; elsewhere every call here does nothing).

* The command line fixes the mmap threshold (``release_freed_memory``): column arrays go back to
  the system when freed, while a comparison is read (``reading_phase``); once it is read, the
  analysis keeps them for the next ones (``analysis_phase``).
* The Arrow read of a comparison gives back, once its blocks are read, what they left free inside
  the heaps (``give_back_free_heap``).
* The text read of an msprobe CSV parses in a pool that keeps what it frees (``scratch_pool``):
  the parser's buffers of one block serve the next.
* A compare worker does the opposite (``compare/tuning.py``): it keeps what it frees, for the next
  tensor of the same size.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

# mallopt parameters (glibc malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3

# glibc's mallopt(M_MMAP_THRESHOLD): blocks from this size up are mapped on their own and unmapped
# when freed. By default glibc raises the threshold each time such a block is freed (up to 32 MiB),
# so the many short-lived column arrays of a million-row analysis (8 MiB for 1M numbers) then come
# from the heap and stay resident after they are freed: ~70 MiB more peak on 1M rows
# (benchmarks/stages_1m.py). Smaller blocks stay on the heap, where reusing them costs no page faults.
MMAP_THRESHOLD_BYTES = 4 * 2**20
# Once the comparison is read, the analysis runs on one thread and makes and frees column arrays by
# the hundred. Taken from the heap (up to this size: 8M numbers), a freed one serves the next without
# the kernel faulting in and zeroing its pages again: a 1M-row msaccucmp run went 0.86x, its system
# time 1.9 -> 1.3 s (5M rows: 0.73x, 8.4 -> 4.5 s; 25M: 18.8M -> 14.3M page faults), at 7-13 MiB more
# peak. Not while reading: the readers' threads each take their own heap, and the threshold raised
# there lifted the peak of a 1M-row msprobe summary CSV by ~290 MiB.
ANALYSIS_MMAP_THRESHOLD_BYTES = 64 * 2**20
_fixed = False    # the threshold is the command line's (release_freed_memory): the phases move it


@cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt, libc.malloc_trim   # noqa: B018 - both or neither: another C library has neither
    except (OSError, AttributeError):
        return None
    return libc


def mallopt(parameter: int, value: int) -> bool:
    """glibc's ``mallopt``; False where there is no glibc (or it refuses the value)."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(parameter, value))


def give_back_free_heap() -> None:
    """glibc's ``malloc_trim(0)``: the free pages inside its heaps (not only at their tops) go back
    to the system. A pass over the heaps' free lists: ~15 ms after a million-row read."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def release_freed_memory() -> None:
    """Fix glibc's threshold so that freed column arrays go back to the system, and let Arrow's
    buffers come from the same allocator: Arrow's default pool (mimalloc in pyarrow's wheels) keeps
    what it frees, ~70 MiB more peak on 1M rows than the system pool at the same speed
    (benchmarks/run_1m.py, measured with ARROW_DEFAULT_MEMORY_POOL=mimalloc|system|jemalloc:
    873-889 / 801-808 / 793-829 MiB). numpy's huge pages are turned off the same way
    (NUMPY_MADVISE_HUGEPAGE=0, read when numpy is imported): with the kernel's transparent huge pages
    on request, a column array is then resident in 2 MiB steps, ~12 MiB more peak on 1M rows
    (611-619 against 622-630 MiB in five pairs of runs, at the same speed). Set before numpy and
    pyarrow are imported (the command's module imports pandas); a user's own setting wins."""
    global _fixed
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    _fixed = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def reading_phase() -> None:
    """Before a comparison is read: arrays from MMAP_THRESHOLD_BYTES up are mapped on their own and
    unmapped when freed (where release_freed_memory fixed the threshold; elsewhere nothing)."""
    if _fixed:
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def analysis_phase() -> None:
    """Once it is read: arrays up to ANALYSIS_MMAP_THRESHOLD_BYTES come from the heap, where a freed
    one serves the next (where release_freed_memory fixed the threshold; elsewhere nothing)."""
    if _fixed and not mallopt(M_MMAP_THRESHOLD, ANALYSIS_MMAP_THRESHOLD_BYTES):
        mallopt(M_MMAP_THRESHOLD, 32 * 2**20)    # the most mallopt(3) promises on a 64-bit system


def scratch_pool() -> Any:
    """An Arrow pool for a reader's short-lived buffers: mimalloc, which keeps what it frees for the
    next block, where the process' default pool (the system's, see above) maps and unmaps every buffer
    of 4 MiB or more. On a 1M-row msprobe summary CSV the default pool's page faults cost 2.4 s of
    system time in the read; what a reader keeps is copied into the default pool block by block, so
    the scratch pool's heap holds no long-lived array between freed ones. The default pool where the
    build has no mimalloc."""
    import pyarrow as pa

    try:
        return pa.mimalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()
