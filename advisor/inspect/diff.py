"""``advisor diff``: two tensors compared element by element, with the ten msaccucmp metrics and
the channel / layout / affine probes of :mod:`advisor.evidence.probes`.

``A`` is the golden (reference) tensor and ``B`` the target, as in msaccucmp (target vs golden).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..evidence.probes import probe_pair
from ..tensors.metrics import compare_tensors
from .common import jsonable


@dataclass
class Element:
    coords: list[int]
    golden: float
    target: float
    abs_error: float
    rel_error: float


@dataclass
class DiffReport:
    golden_shape: list[int]
    target_shape: list[int]
    golden_dtype: str
    target_dtype: str
    metrics: dict[str, Any] = field(default_factory=dict)       # msaccucmp name -> value
    fail_reasons: list[str] = field(default_factory=list)
    atol: float = 1e-5
    rtol: float = 1e-3
    allclose: bool | None = None          # None: the tensors have different element counts
    beyond: int = 0                       # elements with |t - g| > atol + rtol * |g| (or not both NaN)
    beyond_share: float = float("nan")
    worst: list[Element] = field(default_factory=list)
    probes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return jsonable(asdict(self))


def diff_tensors(golden: np.ndarray, target: np.ndarray, *, atol: float = 1e-5, rtol: float = 1e-3,
                 top: int = 10, probes: bool = True) -> DiffReport:
    golden, target = np.asarray(golden), np.asarray(target)
    comparison = compare_tensors(target, golden)
    report = DiffReport(golden_shape=list(golden.shape), target_shape=list(target.shape),
                        golden_dtype=golden.dtype.name, target_dtype=target.dtype.name,
                        metrics=comparison.as_dict(), fail_reasons=list(comparison.fail_reasons),
                        atol=atol, rtol=rtol)
    if golden.size == target.size:
        g = golden.astype(np.float64).reshape(-1)
        t = target.astype(np.float64).reshape(-1)
        with np.errstate(all="ignore"):
            close = np.isclose(t, g, rtol=rtol, atol=atol, equal_nan=True)
            error = np.abs(t - g)
            relative = error / np.abs(g)
        report.allclose = bool(close.all())
        report.beyond = int((~close).sum())
        report.beyond_share = report.beyond / max(g.size, 1)
        report.worst = _worst(g, t, error, relative, target.shape if target.size else golden.shape, top)
    if probes:
        report.probes = probe_fields(target, golden)
    return report


def _worst(g: np.ndarray, t: np.ndarray, error: np.ndarray, relative: np.ndarray, shape: tuple[int, ...],
           top: int) -> list[Element]:
    """The ``top`` largest absolute errors (NaN and inf first: a non-finite mismatch is the worst)."""
    if top <= 0 or not g.size:
        return []
    rank = np.where(np.isnan(error) & ~(np.isnan(g) & np.isnan(t)), np.inf, error)
    rank = np.where(np.isnan(rank), -1.0, rank)
    top = min(top, rank.size)
    picked = np.argpartition(-rank, top - 1)[:top]
    picked = picked[np.argsort(-rank[picked], kind="stable")]
    out = []
    for flat in picked:
        coords = [int(c) for c in np.unravel_index(int(flat), shape)] if shape else []
        out.append(Element(coords, float(g[flat]), float(t[flat]), float(error[flat]), float(relative[flat])))
    return out


def probe_fields(target: np.ndarray, golden: np.ndarray) -> dict[str, Any]:
    """The probes' flat fields (layout_*, channel_*, norm_*, geometry_*...) for the pair."""
    try:
        return probe_pair(target, golden).fields()
    except (ValueError, np.linalg.LinAlgError) as exc:  # a degenerate pair: report, do not fail
        return {"probed": False, "skipped": f"probes failed: {exc}"}
