"""Channel order and layout probes: is the target the golden tensor with its channels permuted
(RGB <-> BGR), or its buffer read in the other layout (NHWC as NCHW)? Pure numpy.

Both report measured numbers only: the fit under the best hypothesis, the fit of the tensors as
they are, and the margin between them. A rule decides what fit and margin make a finding
(rules/core/preprocessing/rgb-bgr-swap.yaml, layout-*.yaml).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from ..tensors.metrics import cosine_similarity
from .geometry import pearson


def channel_axis(shape: tuple[int, ...]) -> int | None:
    """The channel axis of an image-like tensor: 1 for NCHW, 3 for NHWC (when the last dim is small
    and dim 1 is not), 0/2 for CHW/HWC; None for tensors without channels (1-D, 2-D)."""
    if len(shape) == 4:
        return 3 if shape[3] <= 4 < shape[1] else 1
    if len(shape) == 3:
        return 2 if shape[2] <= 4 < shape[0] else 0
    return None


def planes(x: np.ndarray, axis: int) -> np.ndarray:
    """(C, M): each channel's values as a row."""
    return np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)


def image_stack(x: np.ndarray, axis: int | None) -> np.ndarray | None:
    """(N, H, W) grey planes of an image-like tensor (channels averaged), or None."""
    if axis is None or x.ndim not in (3, 4):
        return None
    moved = np.moveaxis(x, axis, 0 if x.ndim == 3 else 1).astype(np.float64)
    grey = moved.mean(axis=0 if x.ndim == 3 else 1)
    return grey[None] if x.ndim == 3 else grey


# --- channel order ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChannelOrder:
    permutation: tuple[int, ...]    # target channel i holds golden channel permutation[i]
    fit: float                      # mean per-channel correlation under the permutation
    identity_fit: float
    cosine: float                   # plain cosine after reordering the target's channels
    identity_cosine: float

    @property
    def swapped(self) -> bool:
        return self.permutation != tuple(range(len(self.permutation)))

    @property
    def reversed(self) -> bool:
        return len(self.permutation) > 1 and self.permutation == tuple(reversed(range(len(self.permutation))))

    @property
    def margin(self) -> float:
        """How much better the permutation fits than the channels as they are (0 for the identity)."""
        return self.fit - self.identity_fit if self.swapped else 0.0


def correlation_matrix(target: np.ndarray, golden: np.ndarray, axis: int) -> np.ndarray:
    """``R[i, j]``: correlation of target channel i with golden channel j (0 where undefined)."""
    def standardised(x: np.ndarray) -> np.ndarray:
        rows = planes(x, axis).astype(np.float64)
        rows = rows - rows.mean(axis=1, keepdims=True)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)

    return standardised(target) @ standardised(golden).T


def channel_order(target: np.ndarray, golden: np.ndarray, axis: int) -> ChannelOrder:
    """The best channel permutation: every permutation up to 4 channels; identity, reversal or the
    row-wise best match beyond."""
    matrix = correlation_matrix(target, golden, axis)
    channels = matrix.shape[0]
    identity = tuple(range(channels))
    if channels <= 4:
        candidates = list(itertools.permutations(identity))
    else:
        candidates = [identity, tuple(reversed(identity))]
        rowwise = tuple(int(j) for j in np.argmax(matrix, axis=1))
        if sorted(rowwise) == list(identity):
            candidates.append(rowwise)
    rows = np.arange(channels)
    scores = [float(matrix[rows, list(p)].mean()) for p in candidates]
    best = candidates[int(np.argmax(scores))]
    reordered = np.take(golden, list(best), axis=axis)
    return ChannelOrder(best, max(scores), scores[0], cosine_similarity(target, reordered),
                        cosine_similarity(target, golden))


# --- layout -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LayoutMatch:
    hypothesis: str                 # nhwc_buffer_as_nchw | nchw_buffer_as_nhwc | layouts_differ |
                                    # buffer_not_transposed | none
    fit: float
    identity_fit: float
    margin: float                   # fit - identity_fit (buffer_not_transposed: identity_fit - best reinterpretation)
    cosine: float
    golden_view: np.ndarray | None = field(default=None, repr=False)   # golden reinterpreted, target's shape


def layout_reinterpretation(target: np.ndarray, golden: np.ndarray, *, min_fit: float,
                            min_margin: float) -> LayoutMatch | None:
    """The golden tensor's buffer read in the other layout (4-D or 3-D image-like, equal sizes), or
    None. Works for NCHW and NHWC goldens alike (the channel axis says which one it is). A
    hypothesis is named only above ``min_fit`` and ``min_margin`` (the ``probes`` knobs
    ``layout_min_fit`` / ``layout_min_margin``); else it is ``none``, with its numbers."""
    axis = channel_axis(golden.shape)
    if target.size != golden.size or golden.ndim not in (3, 4) or axis is None:
        return None
    g = golden if golden.ndim == 4 else golden[None]
    axis += 4 - golden.ndim
    nchw = axis == 1
    flat_t = target.reshape(-1).astype(np.float64)
    identity_fit = pearson(flat_t, g.reshape(-1).astype(np.float64))
    # "Other" buffer read as this layout; this buffer read as the other layout, then converted.
    other_order = (0, 2, 3, 1) if nchw else (0, 3, 1, 2)
    other_shape = tuple(g.shape[i] for i in other_order)
    back = (0, 3, 1, 2) if nchw else (0, 2, 3, 1)
    candidates = {
        "nhwc_buffer_as_nchw" if nchw else "nchw_buffer_as_nhwc": g.transpose(other_order).reshape(-1),
        "nchw_buffer_as_nhwc" if nchw else "nhwc_buffer_as_nchw": g.reshape(other_shape).transpose(back).reshape(-1),
    }
    fits = {name: pearson(flat_t, view.astype(np.float64)) for name, view in candidates.items()}
    if target.shape == other_shape[4 - golden.ndim:] and target.shape != golden.shape:
        # The target's shape is the golden one in the other layout, yet its buffer is the golden
        # buffer unchanged: data in one layout declared (and read) as the other.
        margin = identity_fit - max(fits.values())
        if identity_fit > min_fit and margin > min_margin:
            return LayoutMatch("buffer_not_transposed", identity_fit, identity_fit, margin,
                               cosine_similarity(target, golden), golden.reshape(target.shape))
    name = max(fits, key=lambda k: fits[k] if np.isfinite(fits[k]) else -2.0)
    fit = fits[name]
    view_name = name
    first = next(iter(candidates))
    if name == first and target.shape != golden.shape and sorted(target.shape) == sorted(golden.shape):
        name = "layouts_differ"        # the same data, dumped NHWC on one side and NCHW on the other
    margin = fit - identity_fit
    if not (fit > min_fit and margin > min_margin):
        return LayoutMatch("none", fit, identity_fit, margin, cosine_similarity(target, golden))
    view = candidates[view_name].reshape(target.shape)
    return LayoutMatch(name, fit, identity_fit, margin, cosine_similarity(target, view), view)
