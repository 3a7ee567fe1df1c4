"""The running sums of one chunk in a single compiled pass (numba): what ``PairSums.add`` computes
with a dozen numpy passes, for chunks of finite values.

:func:`add_chunk` reads each element of both sides once and updates every sum of
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
Maxima of non-negative float64 values are taken on their bit patterns as integers, which keep
their order; an integer maximum vectorises where a float one would not.

Only finite chunks of moderate magnitude come here (``|v| < 1e100``: no product or sum can
overflow, so no inf or NaN arises); a NaN or inf anywhere in a tensor sends the whole pair to the
numpy pass, which carries the IEEE rules of metrics.py.

Compilation: numba compiles :func:`_sums` for each pair of chunk dtypes it meets (float32 or
float64 on each side; float16 chunks are widened to float32 through a 65536-entry table first,
numpy's float16 cast being several times slower, other dtypes to float64 by ``np.copyto``), about
a second each, and keeps the machine code on disk (``cache=True``): in ``NUMBA_CACHE_DIR`` when
it is set, else in the package's ``__pycache__`` when that is writable, else in the user's cache
folder (numba's own order); with none writable it compiles in every process. Even with the cache filled,
numba costs a fresh process about a second (import and first dispatch; ~3 s on a loaded 2-core
machine), so it is loaded only where it pays: by a run reading RUN_BYTES of pairs or more (before
its workers fork), or for a pair of ALONE_ELEMENTS; see :func:`use_for`.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

#: Pairs of fewer elements stay on the numpy pass (per call, numba costs about a microsecond more).
MIN_ELEMENTS = 1 << 16
#: A pair this large loads numba by itself: numba's fixed cost in a fresh process (its import and
#: first dispatch, ~1 s idle, ~3 s on a loaded 2-core machine, the compiled code coming from its
#: cache) is then a fraction of the ~20 ns per element it saves.
ALONE_ELEMENTS = 1 << 27
#: A run that reads this many bytes of pairs loads numba once, before its worker processes fork
#: (advisor/compare/work.py): below it, numba's fixed cost is more than it saves.
RUN_BYTES = 512 * 1024 ** 2
#: Largest magnitude the compiled pass takes: squares summed over 10^12 elements stay finite.
MAX_MAGNITUDE = 1e100

_LOCK = threading.Lock()
_COMPILED: dict[str, Any] = {}


def _build() -> dict[str, Any]:
    """Compile (or load from numba's cache) the three loops; numba is imported here, not at startup."""
    import numba

    def jit(function):
        options = {"nogil": True, "error_model": "numpy", "fastmath": {"reassoc"}}
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:        # no writable cache directory anywhere: compile in this process
            return numba.njit(**options)(function)

    table = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    return {"sums": jit(_sums), "kl_terms": jit(_kl_terms), "widen16": jit(_widen16), "fp16_peak": jit(_fp16_peak),
            "table": table}


def _sums(x, y, x_low, x_scale, y_low, y_scale, eps, floor, ad, ad_bits, rel, rel_bits, a_out, ratio, acc):
    xy = xx = yy = sx = sy = dd = asum = rsum = ka = kb = 0.0
    count = 0
    f32_floor = np.float32(floor)
    for i in range(x.size):
        xv = np.float64(x[i])
        yv = np.float64(y[i])
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
        a_out[i] = a
        ratio[i] = a / b
    top_ad = top_rel = 0
    for i in range(x.size):
        v = ad_bits[i]
        top_ad = v if v > top_ad else top_ad
        w = rel_bits[i]
        top_rel = w if w > top_rel else top_rel
    acc[0] += xy
    acc[1] += xx
    acc[2] += yy
    acc[3] += sx
    acc[4] += sy
    acc[5] += dd
    acc[6] += asum
    acc[7] += rsum
    acc[8] += ka
    acc[9] += kb
    return count, top_ad, top_rel

def _kl_terms(a, log_ratio):
    total = 0.0
    for i in range(a.size):
        total += np.float64(a[i] * log_ratio[i])
    return total

def _fp16_peak(bits):
    """How many float16 values (as their bits) have a magnitude from 65504 to inf (not NaN)."""
    count = 0
    for i in range(bits.size):
        magnitude = (bits[i] & 0x7FFF) - 0x7BFF
        count += (magnitude >= 0) & (magnitude <= 1)
    return count


def _widen16(bits, table, out):
    for i in range(bits.size):
        out[i] = table[bits[i]]


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
    """Load numba and every loop for float32 chunks (the usual signature; a forked worker inherits
    them, other signatures load from numba's cache on first use)."""
    kernel = compiled()
    values = np.ones(4, np.float32)
    ad, rel, ratio = np.empty(4), np.empty(4), np.empty(4, np.float32)
    kernel["sums"](values, values, 0.0, 1.0, 0.0, 1.0, 1e-7, 1e-7, ad, ad.view(np.int64), rel, rel.view(np.int64),
                   ratio, ratio.copy(), np.zeros(10))
    kernel["kl_terms"](values, values)
    kernel["widen16"](values.astype(np.float16).view(np.uint16), kernel["table"], ratio)
    kernel["fp16_peak"](values.astype(np.float16).view(np.uint16))


def fp16_overflows(values: np.ndarray) -> bool:
    """dtypes.fp16_overflows in one compiled pass over the bits."""
    return bool(compiled()["fp16_peak"](values.reshape(-1).view(np.uint16)))


def widen(piece: np.ndarray, out32: np.ndarray, out64: np.ndarray) -> np.ndarray:
    """``piece`` as float32 or float64 values, exactly (float16 through the table into ``out32``,
    integers and the rest by ``np.copyto`` into ``out64``, float32/float64 as they are)."""
    if piece.dtype == np.float32 or piece.dtype == np.float64:
        return piece
    if piece.dtype == np.float16:
        kernel = compiled()
        out = out32[:piece.size]
        kernel["widen16"](piece.view(np.uint16), kernel["table"], out)
        return out
    out = out64[:piece.size]
    np.copyto(out, piece, casting="unsafe")
    return out


_WHOLE = threading.local()


def whole_buffers(role: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's float32 and float64 buffers of at least ``size`` elements for one side
    (``role``) of a pair widened whole (running.pair_sums)."""
    table = getattr(_WHOLE, "table", None)
    if table is None:
        table = _WHOLE.table = {}
    buffers = table.get(role)
    if buffers is None or buffers[0].size < size:
        buffers = table[role] = (np.empty(size, np.float32), np.empty(size))
    return buffers


def moderate(span: tuple[float, float] | None) -> bool:
    """A side whose (min, max) is finite and below MAX_MAGNITUDE, with a finite KL scale (a range
    narrower than 1e-308 would make ``1 / (high - low)`` inf): the compiled pass takes it."""
    if span is None or not np.isfinite(span).all() or max(abs(span[0]), abs(span[1])) >= MAX_MAGNITUDE:
        return False
    low, high = span
    with np.errstate(over="ignore", divide="ignore"):
        return bool(high == low or np.isfinite(1.0 / (high - low)))


def _scale(span: tuple[float, float]) -> tuple[float, float]:
    """(low, 1 / (high - low)); a constant side is kept as it is: (0, 1)."""
    low, high = span
    return (low, 1.0 / (high - low)) if high != low else (0.0, 1.0)


def add_chunk(sums, x: np.ndarray, y: np.ndarray, scratch: tuple[np.ndarray, ...]) -> None:
    """Add one chunk of float32/float64 values (``widen`` first) to ``sums`` (a PairSums whose
    ranges are known and :func:`moderate`); ``scratch``: two float64 and two float32 buffers of the
    chunk's size."""
    kernel = compiled()
    ad, rel, a, ratio = scratch
    acc = np.zeros(10)
    x_low, x_scale = _scale(sums.x_range)
    y_low, y_scale = _scale(sums.y_range)
    count, top_ad, top_rel = kernel["sums"](x, y, x_low, x_scale, y_low, y_scale, sums.eps, sums.kl_floor,
                                            ad, ad.view(np.int64), rel, rel.view(np.int64), a, ratio, acc)
    np.log(ratio, out=ratio)
    sums.kl_s += float(kernel["kl_terms"](a, ratio))
    xy, xx, yy, sum_x, sum_y, dd, abs_sum, rel_sum, kl_a, kl_b = acc.tolist()
    sums.xy += xy
    sums.xx += xx
    sums.yy += yy
    sums.sum_x += sum_x
    sums.sum_y += sum_y
    sums.dd += dd
    sums.abs_sum += abs_sum
    sums.kl_a += kl_a
    sums.kl_b += kl_b
    sums.abs_max = max(sums.abs_max, _float(top_ad))
    if count:
        sums.rel_count += int(count)
        sums.rel_sum += rel_sum
        sums.rel_max = max(sums.rel_max, _float(top_rel))


def _float(bits: int) -> float:
    """The float64 whose bit pattern is ``bits`` (a non-negative value's)."""
    return float(np.array(bits, dtype=np.int64).view(np.float64))
