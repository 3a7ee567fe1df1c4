"""Is the target image a flipped, shifted, cropped or resized version of the golden one? Pure numpy.

Works on image planes ``(H, W)`` (a sample's channels averaged: geometry does not depend on colour,
and averaging makes the search robust to channel order and normalisation). Every hypothesis is
scored by the Pearson correlation of the two planes over the pixels they share, so a brightness or
contrast difference on top of the geometry does not hide it:

==========  =========================================================================================
identity    the planes as they are
hflip ...   ``hflip``, ``vflip``, ``rot180``: mirrored left-right, top-bottom, or both
shift       the same picture moved by (dy, dx) pixels (found by FFT cross-correlation)
zoom        resized around its centre by ``scale`` (> 1: the target shows a tighter crop, magnified)
            and shifted: another crop box of the same picture resized to the same size
crop        (target smaller) the target is a window of the golden image at (dy, dx)
resize      (shapes differ) the target is the golden image resized to the target size
==========  =========================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Zoom factors tried (the target's crop box is the golden box divided by the factor).
ZOOMS: tuple[float, ...] = (0.75, 0.8, 0.85, 0.9, 0.95, 1.05, 1.1, 1.15, 1.2, 1.25, 1.33)
MAX_SHIFT = 1 / 3            # largest shift searched, as a fraction of the side
MIN_OVERLAP = 0.4            # a shift must keep this fraction of the pixels in common
MIN_SIDE = 8                 # planes smaller than this have no geometry worth searching


@dataclass(frozen=True)
class GeometryMatch:
    kind: str                          # identity | hflip | vflip | rot180 | shift | zoom | crop | resize
    fit: float                         # Pearson correlation under the hypothesis
    identity_fit: float                # ... and as the planes are (NaN when shapes differ)
    shift: tuple[int, int] = (0, 0)    # (dy, dx): where the target's content sits in the golden image
    scale: float = 1.0

    def label(self) -> str:
        """A short description: ``hflip``, ``shift(2,-3)``, ``zoom(1.15,+1,-2)``."""
        if self.kind in ("shift", "crop"):
            return f"{self.kind}({self.shift[0]},{self.shift[1]})"
        if self.kind == "zoom":
            return f"zoom({self.scale:g},{self.shift[0]:+d},{self.shift[1]:+d})"
        if self.kind == "resize":
            return f"resize({self.scale:g})"
        return self.kind


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Correlation of two arrays of equal size (NaN when either is constant)."""
    a = a.reshape(-1) - a.mean()
    b = b.reshape(-1) - b.mean()
    norm = np.sqrt(np.dot(a, a) * np.dot(b, b))
    return float(np.dot(a, b) / norm) if norm > 0 else float("nan")


def match_geometry(target: np.ndarray, golden: np.ndarray, simpler_margin: float) -> GeometryMatch | None:
    """The best geometric explanation of ``target`` from ``golden`` (2-D planes), or None when the
    planes are too small to tell. A more complex hypothesis must beat a simpler one by
    ``simpler_margin`` of fit (the ``probes.geometry_simpler_margin`` knob)."""
    target, golden = np.asarray(target, np.float64), np.asarray(golden, np.float64)
    if min(*target.shape, *golden.shape) < MIN_SIDE:
        return None
    if target.shape != golden.shape:
        return _other_size(target, golden, simpler_margin)
    identity = pearson(target, golden)
    candidates = [GeometryMatch("identity", identity, identity)]
    for kind, flipped in (("hflip", golden[:, ::-1]), ("vflip", golden[::-1, :]), ("rot180", golden[::-1, ::-1])):
        candidates.append(GeometryMatch(kind, pearson(target, flipped), identity))
    dy, dx, fit = best_shift(target, golden)
    if (dy, dx) != (0, 0):
        candidates.append(GeometryMatch("shift", fit, identity, (dy, dx)))
    for zoom in ZOOMS:
        dy, dx, fit = best_shift(target, _zoom(golden, zoom))
        candidates.append(GeometryMatch("zoom", fit, identity, (dy, dx), zoom))
    return _simplest_best(candidates, simpler_margin)


def _simplest_best(candidates: list[GeometryMatch], margin: float) -> GeometryMatch:
    """The best-fitting hypothesis, preferring the earlier (simpler) one unless beaten clearly."""
    best = candidates[0]
    for candidate in candidates[1:]:
        if np.isfinite(candidate.fit) and (not np.isfinite(best.fit) or candidate.fit > best.fit + margin):
            best = candidate
    return best


def best_shift(target: np.ndarray, golden: np.ndarray) -> tuple[int, int, float]:
    """(dy, dx, fit): the integer shift that best aligns the planes, by FFT cross-correlation,
    scored by the correlation over the overlap. ``target[y, x] ~ golden[y + dy, x + dx]``."""
    height, width = target.shape
    t = target - target.mean()
    g = golden - golden.mean()
    shape = (2 * height, 2 * width)     # zero-padded: linear, not circular, correlation
    spectrum = np.fft.rfft2(g, shape) * np.conj(np.fft.rfft2(t, shape))
    correlation = np.fft.irfft2(spectrum, shape)
    # Normalise by the overlap area so that large shifts are not favoured or penalised by size.
    dys = np.fft.fftfreq(shape[0], 1 / shape[0]).astype(int)
    dxs = np.fft.fftfreq(shape[1], 1 / shape[1]).astype(int)
    overlap = np.outer(height - np.abs(dys), width - np.abs(dxs)).clip(min=1)
    allowed = ((np.abs(dys)[:, None] <= height * MAX_SHIFT) & (np.abs(dxs)[None, :] <= width * MAX_SHIFT)
               & (overlap >= MIN_OVERLAP * height * width))
    score = np.where(allowed, correlation / overlap, -np.inf)
    flat = int(np.argmax(score))
    dy, dx = int(dys[flat // shape[1]]), int(dxs[flat % shape[1]])
    return dy, dx, pearson(*_overlap(target, golden, dy, dx))


def _overlap(target: np.ndarray, golden: np.ndarray, dy: int, dx: int) -> tuple[np.ndarray, np.ndarray]:
    height, width = target.shape
    ty, gy = (slice(0, height - dy), slice(dy, height)) if dy >= 0 else (slice(-dy, height), slice(0, height + dy))
    tx, gx = (slice(0, width - dx), slice(dx, width)) if dx >= 0 else (slice(-dx, width), slice(0, width + dx))
    return target[ty, tx], golden[gy, gx]


def _zoom(plane: np.ndarray, zoom: float) -> np.ndarray:
    """``plane`` magnified by ``zoom`` around its centre, same size (bilinear; edges clamped)."""
    height, width = plane.shape
    ys = (np.arange(height) - (height - 1) / 2) / zoom + (height - 1) / 2
    xs = (np.arange(width) - (width - 1) / 2) / zoom + (width - 1) / 2
    return bilinear(plane, ys, xs)


def bilinear(plane: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Sample ``plane`` at the grid ``ys`` x ``xs`` (pixel coordinates), clamping at the edges."""
    height, width = plane.shape
    ys = np.clip(ys, 0, height - 1)
    xs = np.clip(xs, 0, width - 1)
    y0 = np.minimum(np.floor(ys).astype(int), height - 2) if height > 1 else np.zeros(len(ys), int)
    x0 = np.minimum(np.floor(xs).astype(int), width - 2) if width > 1 else np.zeros(len(xs), int)
    wy = (ys - y0)[:, None]
    wx = (xs - x0)[None, :]
    y1, x1 = np.minimum(y0 + 1, height - 1), np.minimum(x0 + 1, width - 1)
    top = plane[y0][:, x0] * (1 - wx) + plane[y0][:, x1] * wx
    bottom = plane[y1][:, x0] * (1 - wx) + plane[y1][:, x1] * wx
    return top * (1 - wy) + bottom * wy


def _other_size(target: np.ndarray, golden: np.ndarray, margin: float) -> GeometryMatch:
    """Shapes differ: a window of the golden image (crop), or the golden image resized."""
    th, tw = target.shape
    gh, gw = golden.shape
    ys = np.arange(th) * (gh - 1) / max(th - 1, 1)
    xs = np.arange(tw) * (gw - 1) / max(tw - 1, 1)
    resized = GeometryMatch("resize", pearson(target, bilinear(golden, ys, xs)), float("nan"),
                            scale=round(th / gh, 3))
    if th > gh or tw > gw:
        return resized
    dy, dx, fit = _best_window(target, golden)
    crop = GeometryMatch("crop", fit, float("nan"), (dy, dx))
    return crop if crop.fit > resized.fit + margin else resized


def _best_window(target: np.ndarray, golden: np.ndarray) -> tuple[int, int, float]:
    """Top-left corner of the golden window that best correlates with the (smaller) target."""
    th, tw = target.shape
    gh, gw = golden.shape
    t = target - target.mean()
    spectrum = np.fft.rfft2(golden - golden.mean(), (gh, gw)) * np.conj(np.fft.rfft2(t, (gh, gw)))
    correlation = np.fft.irfft2(spectrum, (gh, gw))[: gh - th + 1, : gw - tw + 1]
    # Local energy of each window, so that bright windows do not win by brightness alone.
    sq = np.pad(np.cumsum(np.cumsum((golden - golden.mean()) ** 2, 0), 1), ((1, 0), (1, 0)))
    energy = sq[th:, tw:] - sq[:-th, tw:] - sq[th:, :-tw] + sq[:-th, :-tw]
    score = correlation / np.sqrt(np.maximum(energy, 1e-12))
    dy, dx = np.unravel_index(int(np.argmax(score)), score.shape)
    return int(dy), int(dx), pearson(target, golden[dy:dy + th, dx:dx + tw])
