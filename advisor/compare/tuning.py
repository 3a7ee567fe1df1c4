"""Process settings for comparing tensors: one BLAS thread, and a malloc that keeps its memory.

The parallelism is ours (a worker thread per core, or a dask worker's threads), so numpy's BLAS
stays on one thread.

The metrics use ``np.dot`` / ``np.linalg.norm``, which call BLAS. OpenBLAS starts a thread per core
for a vector of a few ten thousand elements; beside our workers those threads only
contend, and on machines with a CPU quota waking them costs milliseconds per call (measured: a
65k-element dot product took 15 ms threaded and 10 us on one thread). This module finds the loaded
OpenBLAS the way threadpoolctl does (the process's mapped libraries, Linux) and calls its
``*_set_num_threads``; elsewhere it does nothing.

Each metric makes float64 temporaries of the tensor's size. glibc serves blocks over 128 KiB with
fresh ``mmap`` pages and gives them back at ``free``: every temporary then costs page faults (a
third of the run time for 1 MiB tensors, as system time). Dask worker processes raise the mmap
and trim thresholds with ``mallopt`` so freed blocks are reused (advisor/cluster/compare.py). A
local run needs none of it: its threads keep their chunk buffers for the whole run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..memory import M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, mallopt

_SETTERS = ("openblas_set_num_threads", "openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "scipy_openblas_set_num_threads64_")
_GETTERS = tuple(name.replace("set_num", "get_num") for name in _SETTERS)


def _openblas_libraries() -> list[ctypes.CDLL]:
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        return []
    paths = {line.split()[-1] for line in maps.read_text(errors="replace").splitlines()
             if "openblas" in line.lower() and line.split()[-1].startswith("/")}
    libraries = []
    for path in sorted(paths):
        try:
            # Already mapped: dlopen returns the loaded copy (RTLD_NOLOAD, 0x4 on Linux).
            libraries.append(ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4)))
        except OSError:
            continue
    return libraries


def _function(library: ctypes.CDLL, names: tuple[str, ...]):
    for name in names:
        function = getattr(library, name, None)
        if function is not None:
            return function
    return None


#: (modules loaded when looked up, each loaded OpenBLAS's (setter, getter)): found again only once
#: another module was imported (a library that brings its own OpenBLAS is imported with one); the
#: search reads /proc/self/maps and asks the dynamic linker, a few milliseconds per compare run.
_FOUND: tuple[int, list[tuple[Any, Any]]] | None = None


def _blas_controls() -> list[tuple[Any, Any]]:
    global _FOUND
    modules = len(sys.modules)
    if _FOUND is None or _FOUND[0] != modules:
        controls = [(_function(library, _SETTERS), _function(library, _GETTERS)) for library in _openblas_libraries()]
        _FOUND = (modules, [(setter, getter) for setter, getter in controls if setter is not None])
    return _FOUND[1]


def set_blas_threads(count: int) -> list[int]:
    """Set every loaded OpenBLAS to ``count`` threads; returns the previous counts."""
    previous = []
    for setter, getter in _blas_controls():
        previous.append(int(getter()) if getter is not None else 0)
        setter(int(count))
    return previous


_KEEP_BYTES = 1 << 30


def keep_freed_memory() -> bool:
    """Let malloc reuse freed blocks up to 1 GiB instead of unmapping them (glibc only)."""
    return mallopt(M_MMAP_THRESHOLD, _KEEP_BYTES // 2) and mallopt(M_TRIM_THRESHOLD, _KEEP_BYTES)


def start_worker() -> None:
    """Settings for a worker process that only compares tensors."""
    set_blas_threads(1)
    keep_freed_memory()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """One BLAS thread inside the block, the previous setting restored after it."""
    previous = set_blas_threads(1)
    try:
        yield
    finally:
        if previous:
            set_blas_threads(max(previous))
