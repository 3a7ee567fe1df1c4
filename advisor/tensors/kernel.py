"""The running sums of a pair in a single compiled pass per chunk (numba): what ``PairSums.add``
computes with a dozen numpy passes, for chunks of finite values.

:func:`add_chunks` reads each element of both sides once and updates every sum of
:class:`~advisor.tensors.running.PairSums` in the same loop: the float64 products and squares
(cosine, relative Euclidean distance, RMSE, mean and std), ``|x - y|`` (its sum and maximum), the
relative errors over ``|y| > eps`` (sum, maximum, count), and the float32 KL terms. The
definitions and precisions are those of running.py, unchanged:

- every product, difference and sum is float64 (the inputs are widened to float64 element by
  element, as ``np.copyto`` widens them there);
- the KL sides are ``float32((v - low) * (1 / (high - low)))`` computed in float64 and rounded
  once, raised to the float32 floor; ``a / b`` is a float32 division; the ``log`` is numpy's own
  float32 ``log`` (called on the chunk's ratios, as running.py does), and ``a * log(a / b)`` is a
  float32 product summed in float64.

Only the order of the float64 additions differs from numpy's pairwise sums (``fastmath`` allows
reassociation and nothing else, so the loop is vectorised): results agree with the numpy pass to
float64 rounding (tests/tensors/test_kernel.py holds both to 1e-12 and the KL terms bit for bit).
The chunks are what a Python loop over them would add, in the same order, but one call of
:func:`_sums` runs through a GROUP of chunks (a loop in Python cost more per chunk than the
chunk's arithmetic), one ``log`` call takes all their ratios, and :func:`_fold`, compiled without
``fastmath``, adds each chunk's sums to the totals in turn: the sums of a pair do not depend on
how many chunks a call takes.
Maxima of non-negative float64 values are taken on their bit patterns as integers, which keep
their order; an integer maximum vectorises where a float one would not.

Only finite chunks of moderate magnitude come here (``|v| < 1e100``: no product or sum can
overflow, so no inf or NaN arises); a NaN or inf anywhere in a tensor sends the whole pair to the
numpy pass, which carries the IEEE rules of metrics.py.

Compilation: numba compiles :func:`_sums` for each pair of chunk dtypes it meets (float32 or
float64 on each side; float16 chunks are widened to float32 first by :func:`_widen16`, twenty
times faster than numpy's float16 cast, other dtypes to float64 by ``np.copyto``), about
a second each, and keeps the machine code on disk (``cache=True``): in ``NUMBA_CACHE_DIR`` when
it is set, else in the package's ``__pycache__`` when that is writable, else in the user's cache
folder (numba's own order); with none writable it compiles in every process. Even with the cache filled,
numba costs a fresh process about a second (import and first dispatch; ~3 s on a loaded 2-core
machine), so it is loaded only where it pays: by a run reading RUN_BYTES of pairs or more (before
its worker threads start), or for a pair of ALONE_ELEMENTS; see :func:`use_for`.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

#: Pairs of fewer elements stay on the numpy pass (per call, numba costs about a microsecond more).
MIN_ELEMENTS = 1 << 16
#: A pair this large loads numba by itself: numba's fixed cost in a fresh process (its import and
#: first dispatch, ~1 s idle, ~3 s on a loaded 2-core machine, the compiled code coming from its
#: cache) is then a fraction of the ~20 ns per element it saves.
ALONE_ELEMENTS = 1 << 27
#: A run that reads this many bytes of pairs loads numba once, before its worker threads start
#: (advisor/compare/work.py): below it, numba's fixed cost is more than it saves.
RUN_BYTES = 512 * 1024 ** 2
#: Largest magnitude the compiled pass takes: squares summed over 10^12 elements stay finite.
MAX_MAGNITUDE = 1e100

_LOCK = threading.Lock()
_COMPILED: dict[str, Any] = {}


def _build() -> dict[str, Any]:
    """Compile (or load from numba's cache) the loops; numba is imported here, not at startup."""
    import numba

    def jit(function, reassociate: bool = True):
        options = {"nogil": True, "error_model": "numpy", "fastmath": {"reassoc"} if reassociate else False}
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:        # no writable cache directory anywhere: compile in this process
            return numba.njit(**options)(function)

    return {"sums": jit(_sums), "kl_terms": jit(_kl_terms), "fold": jit(_fold, reassociate=False),
            "widen16": jit(_widen16), "fp16_peak": jit(_fp16_peak)}


def _sums(x, y, chunk, x_low, x_scale, y_low, y_scale, eps, floor, ad, ad_bits, rel, rel_bits, a_out, ratio,
          parts, counts, tops):
    """Each ``chunk`` of ``x``, ``y`` in turn: its sums into a row of ``parts``, its relative-error count
    into ``counts``, the bits of its largest absolute and relative errors into ``tops``; ``a_out``
    and ``ratio`` (the KL sides, as long as ``x``) filled. ``ad``/``rel``: chunk-sized scratch."""
    f32_floor = np.float32(floor)
    for c in range(parts.shape[0]):
        xc, yc = x[c * chunk:c * chunk + chunk], y[c * chunk:c * chunk + chunk]
        ac, rc = a_out[c * chunk:c * chunk + chunk], ratio[c * chunk:c * chunk + chunk]
        xy = xx = yy = sx = sy = dd = asum = rsum = ka = kb = 0.0
        count = 0
        for i in range(xc.size):
            xv = np.float64(xc[i])
            yv = np.float64(yc[i])
            xy += xv * yv
            xx += xv * xv
            yy += yv * yv
            sx += xv
            sy += yv
            d = xv - yv
            dd += d * d
            e = abs(d)
            asum += e
            ad[i] = e
            ay = abs(yv)
            keep = ay > eps
            r = e / (ay if keep else 1.0)
            r = r if keep else 0.0
            rsum += r
            count += keep
            rel[i] = r
            a = np.float32((xv - x_low) * x_scale)
            b = np.float32((yv - y_low) * y_scale)
            a = a if a > f32_floor else f32_floor
            b = b if b > f32_floor else f32_floor
            ka += np.float64(a)
            kb += np.float64(b)
            ac[i] = a
            rc[i] = a / b
        top_ad = top_rel = 0
        for i in range(xc.size):
            v = ad_bits[i]
            top_ad = v if v > top_ad else top_ad
            w = rel_bits[i]
            top_rel = w if w > top_rel else top_rel
        parts[c, 0] = xy
        parts[c, 1] = xx
        parts[c, 2] = yy
        parts[c, 3] = sx
        parts[c, 4] = sy
        parts[c, 5] = dd
        parts[c, 6] = asum
        parts[c, 7] = rsum
        parts[c, 8] = ka
        parts[c, 9] = kb
        counts[c] = count
        tops[c, 0] = top_ad
        tops[c, 1] = top_rel


def _kl_terms(a, log_ratio, chunk, parts):
    """Each chunk's ``sum a log(a/b)`` into column 10 of its row of ``parts``."""
    for c in range(parts.shape[0]):
        ac, lc = a[c * chunk:c * chunk + chunk], log_ratio[c * chunk:c * chunk + chunk]
        total = 0.0
        for i in range(ac.size):
            total += np.float64(ac[i] * lc[i])
        parts[c, 10] = total


def _fold(totals, parts, counts, tops, extremes):
    """Add the chunks' sums to the running ``totals``, chunk after chunk (compiled without
    ``fastmath``: the additions happen in this order, as ``+=`` per chunk would make them), and
    their counts and largest errors to ``extremes`` (count, then the bits of the largest absolute
    error and of the largest relative error of a chunk that has one; -1: none yet)."""
    for c in range(parts.shape[0]):
        for j in range(parts.shape[1]):
            totals[j] += parts[c, j]
        extremes[0] += counts[c]
        extremes[1] = max(extremes[1], tops[c, 0])
        if counts[c] > 0:
            extremes[2] = max(extremes[2], tops[c, 1])


def _fp16_peak(bits):
    """How many float16 values (as their bits) have a magnitude from 65504 to inf (not NaN)."""
    count = 0
    for i in range(bits.size):
        magnitude = (bits[i] & 0x7FFF) - 0x7BFF
        count += (magnitude >= 0) & (magnitude <= 1)
    return count


def _widen16(bits, out):
    """float16 values (as their bits) to float32, exactly: the exponent rebiased, subnormals
    normalised by one float32 subtraction, infinities and NaN (payload kept) as they are."""
    for i in range(bits.size):
        h = np.uint32(bits[i])
        o = np.uint32((h & np.uint32(0x7FFF)) << np.uint32(13))        # exponent and mantissa in place
        exponent = np.uint32(o & np.uint32(0x0F800000))
        o = np.uint32(o + np.uint32(112 << 23))                         # rebias 15 -> 127
        if exponent == np.uint32(0x0F800000):                           # inf, NaN: exponent all ones
            o = np.uint32(o + np.uint32(112 << 23))
        normalised = np.float32(np.uint32(o + np.uint32(1 << 23)).view(np.float32) - _TWO_TO_MINUS_14)
        if exponent == np.uint32(0):                                    # zero, subnormal
            o = np.float32(normalised).view(np.uint32)
        out[i] = np.uint32(o | np.uint32(np.uint32(h & np.uint32(0x8000)) << np.uint32(16))).view(np.float32)


_TWO_TO_MINUS_14 = np.float32(2.0 ** -14)


def compiled() -> dict[str, Any]:
    """The compiled loops, loaded (numba imported, code compiled or read from its cache) on first use."""
    with _LOCK:
        if not _COMPILED:
            _COMPILED.update(_build())
        return _COMPILED


def loaded() -> bool:
    return bool(_COMPILED)


def use_for(size: int) -> bool:
    """Whether a tensor (pair) of ``size`` elements goes through the compiled pass: once numba is
    loaded in this process, from MIN_ELEMENTS on; before, only from ALONE_ELEMENTS on."""
    return size >= MIN_ELEMENTS and (loaded() or size >= ALONE_ELEMENTS)


def use_in_run(size: int, run: bool) -> bool:
    """Whether a pair of ``size`` elements goes through the compiled pass in a run that decided ``run``
    (from its size, once): the same answer in every process and every attempt of the run, whatever is
    loaded where, so a resumed run writes the bytes an uninterrupted one writes (the two passes agree
    to float64 rounding, not bit for bit)."""
    return size >= MIN_ELEMENTS and (run or size >= ALONE_ELEMENTS)


def warm_up() -> None:
    """Load numba and every loop for float32 chunks (the usual signature; the worker threads share
    them, other signatures load from numba's cache on first use)."""
    kernel = compiled()
    values = np.ones(4, np.float32)
    sums = _Sums()
    sums.x_range = sums.y_range = (0.0, 1.0)
    add_chunks(sums, values, values, 4)
    kernel["widen16"](values.astype(np.float16).view(np.uint16), values.copy())
    kernel["fp16_peak"](values.astype(np.float16).view(np.uint16))


class _Sums:
    """The running sums :func:`add_chunks` updates (a PairSums has them all; this is for warm_up)."""

    eps = kl_floor = 1e-7
    n = rel_count = 0
    x_range = y_range = (0.0, 1.0)
    xy = xx = yy = dd = sum_x = sum_y = abs_sum = rel_sum = kl_s = kl_a = kl_b = 0.0
    abs_max = rel_max = -np.inf


def fp16_overflows(values: np.ndarray) -> bool:
    """dtypes.fp16_overflows in one compiled pass over the bits."""
    return bool(compiled()["fp16_peak"](values.reshape(-1).view(np.uint16)))


def widen(piece: np.ndarray, role: str) -> np.ndarray:
    """``piece`` as float32 or float64 values, exactly: float32/float64 as they are, float16 to
    float32 (``_widen16``), integers and the rest to float64 (``np.copyto``), into this thread's
    buffer for ``role`` (valid until its next use)."""
    if piece.dtype == np.float32 or piece.dtype == np.float64:
        return piece
    if piece.dtype == np.float16:
        out = _buffer(role, piece.size, np.float32)
        compiled()["widen16"](piece.view(np.uint16), out)
        return out
    out = _buffer(role, piece.size, np.float64)
    np.copyto(out, piece, casting="unsafe")
    return out


_BUFFERS = threading.local()


def _buffer(role: str, size: int, dtype: type) -> np.ndarray:
    """This thread's buffer of ``dtype`` for ``role``, ``size`` elements long (a view of a reused one)."""
    table = getattr(_BUFFERS, "table", None)
    if table is None:
        table = _BUFFERS.table = {}
    buffer = table.get((role, dtype))
    if buffer is None or buffer.size < size:
        buffer = table[role, dtype] = np.empty(size, dtype)
    return buffer[:size]


def moderate(span: tuple[float, float] | None) -> bool:
    """A side whose (min, max) is finite and below MAX_MAGNITUDE, with a finite KL scale (a range
    narrower than 1e-308 would make ``1 / (high - low)`` inf): the compiled pass takes it."""
    if span is None:
        return False
    low, high = float(span[0]), float(span[1])
    if not (math.isfinite(low) and math.isfinite(high)) or max(abs(low), abs(high)) >= MAX_MAGNITUDE:
        return False
    return high == low or math.isfinite(1.0 / (high - low))      # Python floats: inf, not an error


def _scale(span: tuple[float, float]) -> tuple[float, float]:
    """(low, 1 / (high - low)); a constant side is kept as it is: (0, 1)."""
    low, high = span
    return (low, 1.0 / (high - low)) if high != low else (0.0, 1.0)


#: The sums of a chunk, in the order of a row of the kernel's ``parts`` (the KL terms' sum last).
_PART_NAMES = ("xy", "xx", "yy", "sum_x", "sum_y", "dd", "abs_sum", "rel_sum", "kl_a", "kl_b", "kl_s")
#: Most elements one call of the loops takes: a few chunks' KL sides (two float32 each) stay in the
#: CPU's L2 cache, and a call costs its microseconds of Python once per this many elements.
GROUP = 1 << 18


def add_chunks(sums, x: np.ndarray, y: np.ndarray, chunk: int) -> None:
    """Add ``x``, ``y`` (flat float32/float64 values of equal size, ``widen`` first), ``chunk``
    elements at a time, to ``sums`` (a PairSums whose ranges are known and :func:`moderate`): each
    chunk's sums are added to the totals in turn, as a loop over the chunks in Python would add
    them, but a few compiled calls take a whole GROUP of chunks."""
    kernel = compiled()
    x_low, x_scale = _scale(sums.x_range)
    y_low, y_scale = _scale(sums.y_range)
    totals = np.array([getattr(sums, name) for name in _PART_NAMES])
    extremes = np.array([0, -1, -1], dtype=np.int64)
    ad, rel = _buffer("absolute errors", chunk, np.float64), _buffer("relative errors", chunk, np.float64)
    step = chunk * max(1, GROUP // chunk)
    for start in range(0, x.size, step):
        xs, ys = x[start:start + step], y[start:start + step]
        a, ratio = _buffer("kl sides", xs.size, np.float32), _buffer("kl ratios", xs.size, np.float32)
        chunks = -(-xs.size // chunk)
        parts = np.empty((chunks, len(_PART_NAMES)))
        counts, tops = np.empty(chunks, np.int64), np.empty((chunks, 2), np.int64)
        kernel["sums"](xs, ys, chunk, x_low, x_scale, y_low, y_scale, sums.eps, sums.kl_floor, ad, ad.view(np.int64),
                       rel, rel.view(np.int64), a, ratio, parts, counts, tops)
        np.log(ratio, out=ratio)
        kernel["kl_terms"](a, ratio, chunk, parts)
        kernel["fold"](totals, parts, counts, tops, extremes)
    for name, value in zip(_PART_NAMES, totals.tolist(), strict=True):
        setattr(sums, name, value)
    count, top_ad, top_rel = extremes.tolist()
    sums.abs_max = max(sums.abs_max, _float(top_ad)) if top_ad >= 0 else sums.abs_max
    if top_rel >= 0:
        sums.rel_count += count
        sums.rel_max = max(sums.rel_max, _float(top_rel))


def _float(bits: int) -> float:
    """The float64 whose bit pattern is ``bits`` (a non-negative value's)."""
    return float(np.array(bits, dtype=np.int64).view(np.float64))
