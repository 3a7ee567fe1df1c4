"""The float16 overflow flag of a target tensor, as msaccucmp's OverFlow column says it."""

from __future__ import annotations

import numpy as np

from ..dtypes import FP16_MAX
from . import kernel


def overflow_flag(npu: np.ndarray | None, npu_dtype: str | None) -> str:
    """``YES``/``NO`` for a float16 target tensor, ``NaN`` otherwise."""
    if npu is None or npu_dtype != "DT_FLOAT16":
        return "NaN"
    if npu.dtype == np.float16:
        return "YES" if fp16_overflows(np.asarray(npu)) else "NO"
    magnitude = np.abs(np.asarray(npu)).reshape(-1)
    # fmax skips NaN (an all-NaN tensor gives NaN, which is not >= the limit); float16 holds 65504 exactly.
    peak = np.fmax.reduce(magnitude) if magnitude.size else np.nan
    return "YES" if peak >= FP16_MAX else "NO"


def fp16_overflows(values: np.ndarray) -> bool:
    """A float16 array holds a value of magnitude >= 65504 (an infinity included; NaN is not),
    tested on the bits: magnitude bits 0x7BFF (65504) to 0x7C00 (inf); above are the NaNs. Large
    tensors in one compiled pass (kernel.use_for), the others in numpy."""
    if kernel.use_for(values.size):
        return kernel.fp16_overflows(values)
    magnitude = values.reshape(-1).view(np.uint16) & np.uint16(0x7FFF)
    magnitude -= np.uint16(0x7BFF)
    return bool(np.any(magnitude <= np.uint16(1)))
