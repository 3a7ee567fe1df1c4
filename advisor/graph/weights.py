"""Weight statistics for ONNX initializers: range, mean, std and the per-output-channel abs-max that
per-channel quantisation and BatchNorm folding problems show up in.

The output-channel axis depends on the consumer: Conv weights are [out, in, kh, kw] (axis 0),
ConvTranspose [in, out, kh, kw] (axis 1), MatMul's B is [..., in, out] (the last axis, -1), Gemm's B
is [in, out] unless transB (then [out, in]). Negative axes count from the end.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from advisor.graph.model import InitializerStats, Node


def channel_axes(nodes: Iterable[Node]) -> dict[str, int]:
    """Tensor name -> output-channel axis, for tensors used as a weight by Conv/Gemm/MatMul."""
    axes: dict[str, int] = {}
    for node in nodes:
        if len(node.inputs) < 2:
            continue
        weight = node.inputs[1].tensor
        if node.op_type == "Conv":
            axes.setdefault(weight, 0)
        elif node.op_type == "ConvTranspose":
            axes.setdefault(weight, 1)
        elif node.op_type == "MatMul":
            axes.setdefault(weight, -1)
        elif node.op_type == "Gemm":
            axes.setdefault(weight, 0 if node.attributes.get("transB") else 1)
    return axes


def weight_stats(name: str, array: np.ndarray, channel_axis: int | None = None) -> InitializerStats:
    """Statistics of one weight; per-channel abs-max for 2-D and 4-D weights (and any Conv weight)."""
    shape = tuple(int(d) for d in array.shape)
    dtype = str(array.dtype)
    if array.size == 0 or array.dtype.kind not in "biuf":
        return InitializerStats(name=name, shape=shape, dtype=dtype)
    values = array.astype(np.float64, copy=False)
    axis = None
    channel_abs_max = None
    if array.ndim in (2, 4) or (channel_axis is not None and array.ndim >= 2):
        axis = channel_axis % array.ndim if channel_axis is not None and -array.ndim <= channel_axis < array.ndim else 0
        other = tuple(a for a in range(array.ndim) if a != axis)
        channel_abs_max = tuple(float(v) for v in np.abs(values).max(axis=other))
    return InitializerStats(name=name, shape=shape, dtype=dtype, min=float(values.min()), max=float(values.max()),
                            mean=float(values.mean()), std=float(values.std()), channel_axis=axis,
                            channel_abs_max=channel_abs_max)
