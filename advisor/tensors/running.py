"""Running sums over chunks: every msaccucmp metric of a tensor pair without holding the pair in memory.

:class:`PairSums` takes the two flattened tensors a chunk at a time (a few ten thousand elements,
so every temporary stays in the CPU cache) and keeps only sums, maxima and counts; ``metrics.py``
turns them into the metric values. Chunks of a memory-mapped ``.npy`` are read straight from the
file, so a tensor larger than memory is compared in a few megabytes.

Precision (why each sum is kept as it is):

- Products, squares and differences (cosine, relative Euclidean distance, RMSE, the absolute and
  relative errors, mean and standard deviation) are computed in float64 and added with BLAS
  ``ddot`` or numpy's pairwise sum. Cosine near 1 and the standard deviation of a tensor whose mean
  dwarfs its spread are differences of nearly equal sums: float32 sums (7 digits) would move the
  6th printed decimal of the cosine and the 3rd of the deviation. The float64 chunk copies cost two
  conversions per chunk and are what makes the streaming exact to float64 rounding.
- The KL divergence is computed in float32, as msaccucmp computes every metric (it casts both
  tensors to float32): its ``log`` was ~40% of the time in float64. With ``a``, ``b`` the floored
  normalised sides and ``A``, ``B`` their totals, KL = S/A + log(B/A) where S = sum a log(a/b):
  no division by the totals element by element, one ``log`` per element, and the chunk sums of S,
  A and B accumulated in float64, so the float32 rounding of the terms averages out to about
  eps/sqrt(n) of A (below 1e-9 for the 6 printed decimals).
- KL normalises each side by its global minimum and maximum, so it needs them before its first
  term: a pair of more than one chunk is scanned twice (a min/max pass, then everything else).
  Dump files of up to WHOLE elements are read once, whole, into reused buffers and scanned there
  (:func:`file_sums`); larger ones are scanned twice in pieces, through maps of a window at a time
  (npyfile.py), the second time from the page cache when they fit in memory.

Two implementations of the same sums: the numpy pass of :meth:`PairSums.add` (below; the
reference, and the one for tensors holding NaN or inf) and the compiled pass of :mod:`kernel`
(one loop per chunk, numba), taken when :func:`kernel.use_for` says it pays;
tests/tensors/test_kernel.py holds the two together.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator

import numpy as np

from . import kernel
from .npyfile import NpyFile

#: Elements per chunk: three float64 and two float32 buffers of this size stay within a typical L2 cache.
CHUNK = 1 << 15
#: Dumps of at most this many elements are read whole, once (file_sums), into this thread's buffers:
#: up to 32 MB per side widened (float64 for integers, float32 for float16: kernel.widen) plus the read
#: buffer itself.
WHOLE = 1 << 22

#: Golden values at or below this magnitude are left out of the relative errors (metrics.py).
RELATIVE_EPS: float = float(np.finfo(np.float32).eps)
#: msaccucmp raises both min-max-normalised distributions to at least the float32 epsilon before its
#: KL divergence, so a golden zero gives a large finite value, not ``inf``.
KL_FLOOR: float = float(np.finfo(np.float32).eps)


def flat(values: np.ndarray) -> np.ndarray:
    """A 1-D view of any array (a copy only when it is not contiguous); memory maps stay maps."""
    array = np.asarray(values)
    return array.reshape(-1) if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(-1)


def spans(size: int, chunk: int) -> Iterator[slice]:
    for start in range(0, size, chunk):
        yield slice(start, min(start + chunk, size))


def value_range(v: np.ndarray, chunk: int = CHUNK, compiled: bool = False) -> tuple[float, float]:
    """(min, max) of a flat array, chunk by chunk; NaN when it holds a NaN."""
    span = Range(compiled)
    for part in spans(v.size, _piece(chunk)):
        span.add(v[part])
    return span.low, span.high


class Range:
    """(min, max) over chunks; NaN once a NaN is seen. Narrow float types are widened first
    (numpy's float16 min/max is twenty times slower than float32's; ``compiled``: through
    ``kernel.widen``, twenty times faster than numpy's float16 cast)."""

    def __init__(self, compiled: bool = False) -> None:
        self.low, self.high = np.inf, -np.inf
        self.compiled = compiled

    def add(self, piece: np.ndarray) -> None:
        if np.isnan(self.low) or piece.size == 0:
            return
        if piece.dtype.kind == "f" and piece.itemsize < 4:
            if self.compiled and piece.dtype == np.float16:
                piece = kernel.widen(piece, "range")
            else:
                piece = piece.astype(np.float32)
        low, high = float(piece.min()), float(piece.max())
        if np.isnan(low) or np.isnan(high):
            self.low = self.high = np.nan
        else:
            self.low, self.high = min(self.low, low), max(self.high, high)


class PairSums:
    """Sums over a target tensor ``x`` and a golden tensor ``y`` of equal size, added chunk by chunk.

    ``x_range`` / ``y_range``: each side's (min, max) over the whole tensor, needed by the KL terms
    (None: the first chunk must then be the whole tensor, whose range is taken from it).
    """

    def __init__(self, x_range: tuple[float, float] | None = None, y_range: tuple[float, float] | None = None,
                 eps: float = RELATIVE_EPS, kl_floor: float = KL_FLOOR, compiled: bool = False) -> None:
        self.eps, self.kl_floor = eps, kl_floor
        self.compiled = compiled        # finite chunks go through the compiled pass (kernel.py)
        self._moderate: bool | None = None   # ... when both ranges are moderate (known once they are)
        self.x_range, self.y_range = x_range, y_range
        self.n = 0
        self.xy = self.xx = self.yy = self.dd = 0.0     # float64 sums of products
        self.sum_x = self.sum_y = 0.0
        self.abs_sum, self.abs_max = 0.0, -np.inf
        self.rel_sum, self.rel_max, self.rel_count = 0.0, -np.inf, 0
        self.kl_s = self.kl_a = self.kl_b = 0.0         # KL: sum a log(a/b), and both totals

    def _scratch(self, size: int) -> tuple[np.ndarray, ...]:
        return tuple(b[:size] for b in _scratch(size))

    def add(self, x: np.ndarray, y: np.ndarray, chunk: int = CHUNK) -> None:
        """Add ``x``, ``y`` (flat arrays of equal size, any numeric dtype), ``chunk`` elements at a
        time: through the compiled pass (a few calls for many chunks) or the numpy pass."""
        if x.size == 0:
            return
        if self.compiled:
            x, y = kernel.widen(x, "x"), kernel.widen(y, "y")
            if self.x_range is None or self.y_range is None:
                self.x_range = (float(x.min()), float(x.max()))
                self.y_range = (float(y.min()), float(y.max()))
            if self._moderate is None:
                self._moderate = kernel.moderate(self.x_range) and kernel.moderate(self.y_range)
            if self._moderate:
                self.n += x.size
                kernel.add_chunks(self, x, y, chunk)
                return
        for part in spans(x.size, chunk):
            self._add_chunk(x[part], y[part])

    def _add_chunk(self, x: np.ndarray, y: np.ndarray) -> None:
        """The numpy pass over one chunk."""
        size = x.size
        x64, y64, d64, ones, a32, b32 = self._scratch(size)
        np.copyto(x64, x, casting="unsafe")
        np.copyto(y64, y, casting="unsafe")
        if self.x_range is None or self.y_range is None:
            self.x_range = (float(x64.min()), float(x64.max()))
            self.y_range = (float(y64.min()), float(y64.max()))
        self.n += size
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            if self.finite:
                self._kl(x64, y64, d64, a32, b32)
            self.xy += float(np.dot(x64, y64))
            self.xx += float(np.dot(x64, x64))
            self.yy += float(np.dot(y64, y64))
            self.sum_x += float(np.dot(x64, ones))     # BLAS: twice as fast as np.sum
            self.sum_y += float(np.dot(y64, ones))
            np.subtract(x64, y64, out=d64)
            self.dd += float(np.dot(d64, d64))
            np.abs(d64, out=d64)
            self.abs_sum += float(np.dot(d64, ones))
            self.abs_max = _max(self.abs_max, float(d64.max()))
            self._relative(d64, y64)

    @property
    def finite(self) -> bool:
        """Both sides hold only finite values (known from their ranges: a NaN or inf shows there)."""
        return self.x_range is not None and self.y_range is not None and all(
            math.isfinite(v) for v in (*self.x_range, *self.y_range))

    def _kl(self, x64: np.ndarray, y64: np.ndarray, scratch: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """The KL sums of this chunk, in float32 terms: ``a``, ``b`` the floored min-max-normalised
        sides; ``sum a log(a/b)`` and both totals (KL = S/A + log(B/A), metrics.py)."""
        assert self.x_range is not None and self.y_range is not None
        for side, values, (low, high) in ((a, x64, self.x_range), (b, y64, self.y_range)):
            if high != low:      # subtract in float64: a range far from 0 keeps its digits
                np.subtract(values, low, out=scratch)
                np.multiply(scratch, 1.0 / (high - low), out=side, casting="same_kind")
            else:
                np.copyto(side, values, casting="same_kind")
            np.maximum(side, np.float32(self.kl_floor), out=side)
        self.kl_a += float(np.sum(a, dtype=np.float64))
        self.kl_b += float(np.sum(b, dtype=np.float64))
        terms = np.divide(a, b)
        np.log(terms, out=terms)
        terms *= a
        self.kl_s += float(np.sum(terms, dtype=np.float64))

    def _relative(self, ad: np.ndarray, y64: np.ndarray) -> None:
        """``|x - y| / |y|`` where ``|y| > eps``; ``ad`` holds ``|x - y|``; both are overwritten."""
        np.abs(y64, out=y64)
        if self.finite:
            # the elements left out divide by inf and add 0 (errors are >= 0, so the max holds too)
            small = y64 <= self.eps
            count = small.size - int(np.count_nonzero(small))
            if count == 0:
                return
            np.copyto(y64, np.inf, where=small)
            errors = np.divide(ad, y64, out=ad)
        else:
            keep = y64 > self.eps           # a NaN golden value is left out, an inf one is not
            count = int(np.count_nonzero(keep))
            if count == 0:
                return
            errors = ad[keep] / y64[keep]
        self.rel_count += count
        self.rel_sum += float(np.sum(errors))
        self.rel_max = _max(self.rel_max, float(errors.max()))


_SCRATCH = threading.local()


def _scratch(size: int) -> tuple[np.ndarray, ...]:
    """This thread's chunk buffers for the numpy pass, allocated once (fresh pages for every pair
    cost page faults; per thread, as a dask worker runs several): three float64, a float64 of ones
    (sums by BLAS), two float32."""
    buffers = getattr(_SCRATCH, "buffers", None)
    if buffers is None or buffers[0].size < size:
        buffers = _SCRATCH.buffers = (np.empty(size), np.empty(size), np.empty(size), np.ones(size),
                                      np.empty(size, np.float32), np.empty(size, np.float32))
    return buffers


def pair_sums(npu: np.ndarray, golden: np.ndarray, chunk: int = CHUNK, compiled: bool | None = None) -> PairSums:
    """The running sums of a whole pair (flat arrays of equal size; memory maps are read chunk by
    chunk). A pair of more than one chunk is read twice: the ranges first (module docstring).
    ``compiled``: through the compiled pass (None: :func:`kernel.use_for` the pair's size)."""
    x, y = flat(npu), flat(golden)
    if x.size != y.size:
        raise ValueError(f"cannot compare tensors of {x.size} and {y.size} elements")
    compiled = kernel.use_for(x.size) if compiled is None else compiled
    if compiled and chunk < x.size <= WHOLE:    # in memory: widened once, ranges from numpy's SIMD min/max
        x, y = kernel.widen(x, "x"), kernel.widen(y, "y")
        sums = PairSums(_span(x), _span(y), compiled=True)
    elif x.size <= chunk:
        sums = PairSums(compiled=compiled)
    else:
        sums = PairSums(value_range(x, chunk, compiled), value_range(y, chunk, compiled), compiled=compiled)
    for part in spans(x.size, _piece(chunk)):
        sums.add(x[part], y[part], chunk)
    return sums


def file_sums(target: NpyFile, golden: NpyFile, chunk: int = CHUNK,
              on_target: Callable[[np.ndarray], object] | None = None, compiled: bool | None = None) -> PairSums:
    """:func:`pair_sums` of two ``.npy`` files of equal size; ``on_target`` sees every chunk of the
    target's data once, in order (its fingerprint). A pair of at most WHOLE elements is read once,
    whole, into reused buffers (npyfile.py); a larger one in mapped pieces, twice (the ranges first)."""
    compiled = kernel.use_for(target.size) if compiled is None else compiled
    if target.size <= max(chunk, WHOLE):
        x, y = target.read("target"), golden.read("golden")
        if on_target is not None:
            on_target(x)
        return pair_sums(x, y, chunk, compiled)
    x_range, y_range = Range(compiled), Range(compiled)
    piece_size = _piece(chunk)
    for piece in target.chunks(piece_size):
        if on_target is not None:
            on_target(piece)
        x_range.add(piece)
    for piece in golden.chunks(piece_size):
        y_range.add(piece)
    sums = PairSums((x_range.low, x_range.high), (y_range.low, y_range.high), compiled=compiled)
    for x, y in zip(target.chunks(piece_size), golden.chunks(piece_size), strict=True):
        sums.add(x, y, chunk)
    return sums


def _piece(chunk: int) -> int:
    """Elements handed to :meth:`PairSums.add` at a time: whole chunks, about kernel.GROUP of them."""
    return chunk * max(1, kernel.GROUP // chunk)


def _span(values: np.ndarray) -> tuple[float, float]:
    """(min, max) of float32/float64 values; (NaN, NaN) when one is NaN, as :class:`Range`."""
    low, high = float(values.min()), float(values.max())
    return (np.nan, np.nan) if np.isnan(low) or np.isnan(high) else (low, high)


def _max(current: float, value: float) -> float:
    """max() in which a NaN wins, as np.max lets it."""
    return value if np.isnan(value) or value > current else current
