"""The text export of a tensor (``advisor tensor --txt``): one value per line under a header that keeps
its shape and dtype, so ``advisor tensor`` and ``advisor diff`` read it back."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import numpy as np

from ..errors import InputFormatError
from ..inputfiles import open_input

HEADER = "# advisor tensor"


def write_text(array: np.ndarray, path: Path) -> Path:
    """One value per line (C order) under a header keeping shape and dtype, so :func:`read_text`
    gives the tensor back."""
    array = np.asarray(array)
    path = Path(path)
    fmt = "%d" if array.dtype.kind in "biu" else "%.9g"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(f"{HEADER} shape={list(array.shape)} dtype={array.dtype.name}\n")
        np.savetxt(handle, array.reshape(-1), fmt=fmt)
    return path


_HEADER = re.compile(r"^# advisor tensor shape=(?P<shape>\[[0-9, ]*\]) dtype=(?P<dtype>\w+)\s*$")


def read_text(path: Path) -> np.ndarray:
    """A tensor written by :func:`write_text`."""
    path = Path(path)
    with io.TextIOWrapper(open_input(path), encoding="utf-8") as handle:
        first = handle.readline()
        match = _HEADER.match(first)
        if not match:
            raise InputFormatError("not a tensor text export: the first line must be "
                                   "'# advisor tensor shape=[...] dtype=...'", path=path, line=1)
        shape = tuple(ast.literal_eval(match["shape"]))
        dtype = np.dtype(match["dtype"])
        values = np.loadtxt(handle, dtype=np.float64, ndmin=1)
    if values.size != int(np.prod(shape, dtype=np.int64)):
        raise InputFormatError(f"holds {values.size} values, the header says shape {list(shape)}", path=path)
    return values.astype(dtype).reshape(shape)
