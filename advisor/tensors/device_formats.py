"""Ascend device layouts turned back into the framework's layout, where the shapes say how.

An NPU keeps tensors in blocked layouts (docs/formats.md, "Raw Ascend dumps"); a dump records the
stored shape and, in newer CANN versions, the original one. The conversions (facts from the
vendor's own converters, ``format_manager/builtin_format_convert`` of the mindstudio-probe wheel):

===============  ===================================  =========================================
stored format    stored shape                         original
===============  ===================================  =========================================
NC1HWC0          (N, C1, H, W, C0)                    (N, C, H, W): C = C1*C0 less the padding
FRACTAL_Z        (C1*H*W, N1, N0, C0)                 (N, C, H, W) weights: needs the original
FRACTAL_NZ       (..., W1, H1, H0, W0)                (..., H, W): H = H1*H0, W = W1*W0 less padding
NCHW, NHWC, ND   as stored                            as stored
===============  ===================================  =========================================

Anything else (C1HWNC0, FRACTAL_Z_3D, NDC1HWC0...) is kept in the stored layout with a note saying
so: its comparison is only meaningful when the other side was dumped in the same layout.
"""

from __future__ import annotations

import math

import numpy as np

PLAIN = frozenset({"NCHW", "NHWC", "ND", "NC", "CN", "NCDHW", "NDHWC", "HWCN", "CHWN", "DHWCN", "RESERVED"})


def to_original(values: np.ndarray, stored_format: str, stored: tuple[int, ...],
                original: tuple[int, ...]) -> tuple[np.ndarray, str]:
    """``values`` (flat, in stored order) as the original tensor, and a note ("" when converted or
    already plain; else why the stored layout was kept)."""
    if stored_format in PLAIN or not stored:
        return values.reshape(stored if stored else values.shape), ""
    converter = _CONVERTERS.get(stored_format)
    if converter is None:
        return values.reshape(stored), f"kept in the stored {stored_format} layout (no conversion known)"
    try:
        return converter(values, stored, original), ""
    except ValueError as exc:
        return values.reshape(stored), f"kept in the stored {stored_format} layout ({exc})"


def _crop(array: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    return array[tuple(slice(0, s) for s in sizes)]


def _nc1hwc0(values: np.ndarray, stored: tuple[int, ...], original: tuple[int, ...]) -> np.ndarray:
    if len(stored) != 5:
        raise ValueError(f"NC1HWC0 needs 5 dimensions, the dump has {len(stored)}")
    n, c1, h, w, c0 = stored
    nchw = values.reshape(stored).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
    if len(original) == 4 and original[0] == n and original[1] <= c1 * c0:
        if tuple(original[2:]) == (h, w):
            return _crop(nchw, original)
        if tuple(original[1:3]) == (h, w) and original[3] <= c1 * c0:   # the framework's tensor is NHWC
            return _crop(nchw, (n, original[3], h, w)).transpose(0, 2, 3, 1)
    if original:
        raise ValueError(f"original shape {list(original)} does not fit {list(stored)}")
    return nchw


def _fractal_z(values: np.ndarray, stored: tuple[int, ...], original: tuple[int, ...]) -> np.ndarray:
    if len(stored) != 4 or len(original) != 4:
        raise ValueError("FRACTAL_Z needs the original NCHW shape of the weight")
    rows, n1, n0, c0 = stored
    n, c, h, w = original
    if h * w == 0 or rows % (h * w) or n1 * n0 < n or (rows // (h * w)) * c0 < c:
        raise ValueError(f"original shape {list(original)} does not fit {list(stored)}")
    c1 = rows // (h * w)
    blocks = values.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2)
    return _crop(blocks.reshape(n1 * n0, c1 * c0, h, w), original)


def _fractal_nz(values: np.ndarray, stored: tuple[int, ...], original: tuple[int, ...]) -> np.ndarray:
    if len(stored) < 4:
        raise ValueError(f"FRACTAL_NZ needs at least 4 dimensions, the dump has {len(stored)}")
    w1, h1, h0, w0 = stored[-4:]
    batch = stored[:-4]
    outer = math.prod(batch)
    matrix = values.reshape(outer, w1, h1, h0, w0).transpose(0, 2, 3, 1, 4).reshape(outer, h1 * h0, w1 * w0)
    if not original:
        return matrix.reshape(*batch, h1 * h0, w1 * w0)
    rows, cols = (1, original[0]) if len(original) == 1 else original[-2:]
    if math.prod(original[:-2]) != outer or rows > h1 * h0 or cols > w1 * w0:
        raise ValueError(f"original shape {list(original)} does not fit {list(stored)}")
    return matrix[:, :rows, :cols].reshape(original)


_CONVERTERS = {"NC1HWC0": _nc1hwc0, "FRACTAL_Z": _fractal_z, "FRACTAL_NZ": _fractal_nz}
