"""Golden and target detections -> the facts the ``post`` rules judge, and what the report draws.

Per image, detections are paired by identical scores (the raw outputs agree) or, failing that, by
overlap under the geometric mapping that fits best. Everything measured is published as numbers:
fits, shares, margins. No verdict is taken here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from ..detections import Annotations, Detections, ImagesInfo
from ..facts.thresholds import Thresholds, load_thresholds
from .ap import ap_facts
from .classes import class_facts
from .exhibit import PostExhibit
from .geometry import HYPOTHESES, Letterbox, affine_fit, hypothesis_ious, predict
from .matching import greedy_match, iou_matrix, pair_by_score
from .selection import decode_facts, selection_facts
from .view import exhibit_for

BOXES = ["x1", "y1", "x2", "y2"]


@dataclass
class Knobs:
    """Measurement knobs (knowledge/thresholds.yaml ``knobs.post``: the values live there only)."""

    match_iou: float                 # boxes overlapping this much (once mapped) are the same detection
    score_tolerance: float           # relative: scores this close are the same raw output
    score_pair_share: float          # pair by score when this share of the smaller run pairs so
    ap_iou: float                    # the IoU of a true positive in the per-class AP
    ap_hold_ratio: float             # a class keeps this share of its golden AP: it holds

    @classmethod
    def from_thresholds(cls, thresholds: Thresholds | None = None) -> Knobs:
        """The ``post`` knobs of ``thresholds`` (knowledge/thresholds.yaml's when None)."""
        thresholds = thresholds if thresholds is not None else load_thresholds()
        return cls(**{f.name: float(thresholds.knob("post", f.name)) for f in fields(cls)})


@dataclass
class PostMeasures:
    facts: list[dict[str, Any]]
    exhibit: PostExhibit | None
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Image:
    name: str
    g: np.ndarray                    # row positions in the golden frame
    t: np.ndarray                    # ... in the target frame
    letterbox: Letterbox | None


def _images(golden: Detections, target: Detections, sizes: dict[str, tuple[float, float]],
            input_size: tuple[float, float] | None) -> list[_Image]:
    g_rows = golden.frame.groupby("image", sort=False).indices
    t_rows = target.frame.groupby("image", sort=False).indices
    empty = np.zeros(0, dtype=np.int64)
    out = []
    for name in dict.fromkeys([*g_rows, *t_rows]):
        box = Letterbox.of(sizes[name], input_size) if input_size and name in sizes else None
        out.append(_Image(str(name), np.asarray(g_rows.get(name, empty)), np.asarray(t_rows.get(name, empty)), box))
    return out


def _score_pairs(images: list[_Image], g: pd.DataFrame, t: pd.DataFrame, tol: float) -> tuple[np.ndarray, np.ndarray]:
    pg, pt = [], []
    for im in images:
        a, b = pair_by_score(g["score"].to_numpy(float)[im.g], t["score"].to_numpy(float)[im.t], tol)
        pg.append(im.g[a])
        pt.append(im.t[b])
    return np.concatenate(pg or [np.zeros(0, np.int64)]), np.concatenate(pt or [np.zeros(0, np.int64)])


def _owner(images: list[_Image], golden_rows: int) -> np.ndarray:
    """Each golden row's image, as its position in ``images``."""
    owner = np.full(golden_rows, -1, dtype=np.int64)
    for k, im in enumerate(images):
        owner[im.g] = k
    return owner


def _by_image(pg: np.ndarray, owner: np.ndarray) -> dict[int, np.ndarray]:
    """Image position -> the positions in ``pg`` of its pairs (one grouping, not a scan per image)."""
    if not len(pg):
        return {}
    return {int(k): np.asarray(v) for k, v in pd.Series(np.arange(len(pg))).groupby(owner[pg]).indices.items()}


def _fits_on_pairs(images: list[_Image], gb: np.ndarray, tb: np.ndarray, pg: np.ndarray,
                   pt: np.ndarray, owner: np.ndarray) -> dict[str, float]:
    """Median IoU of each mapping over the score pairs (a sized mapping only where sizes are known)."""
    ious: dict[str, list[np.ndarray]] = {name: [] for name in HYPOTHESES}
    for k, sel in _by_image(pg, owner).items():
        for name, values in hypothesis_ious(gb[pg[sel]], tb[pt[sel]], images[k].letterbox).items():
            ious[name].append(values)
    return {name: float(np.median(np.concatenate(v))) for name, v in ious.items() if v}


def _fits_by_overlap(images: list[_Image], gb: np.ndarray, tb: np.ndarray, min_iou: float) -> dict[str, float]:
    """Without score pairs: each mapping's golden boxes matched to the target's by overlap; its fit is the
    median over golden boxes of the matched IoU (0 for a box left unmatched)."""
    ious: dict[str, list[np.ndarray]] = {name: [] for name in HYPOTHESES}
    for im in images:
        if not len(im.g):
            continue
        for name in HYPOTHESES:
            if HYPOTHESES[name] and im.letterbox is None:
                continue
            got = np.zeros(len(im.g))
            if len(im.t):
                matrix = iou_matrix(predict(name, gb[im.g], im.letterbox), tb[im.t])
                r, c = greedy_match(matrix, min_iou)
                got[r] = matrix[r, c]
            ious[name].append(got)
    return {name: float(np.median(np.concatenate(v))) for name, v in ious.items() if v}


def _match_rest(images: list[_Image], gb: np.ndarray, tb: np.ndarray, pg: np.ndarray, pt: np.ndarray,
                mapping: str, min_iou: float) -> tuple[np.ndarray, np.ndarray]:
    """The pairs so far plus overlap matches of the detections still unpaired, under ``mapping``."""
    pg_l, pt_l = [pg], [pt]
    paired_g = np.zeros(len(gb), dtype=bool)
    paired_t = np.zeros(len(tb), dtype=bool)
    paired_g[pg] = True
    paired_t[pt] = True
    for im in images:
        g_left = im.g[~paired_g[im.g]]
        t_left = im.t[~paired_t[im.t]]
        if not len(g_left) or not len(t_left) or (HYPOTHESES[mapping] and im.letterbox is None):
            continue
        r, c = greedy_match(iou_matrix(predict(mapping, gb[g_left], im.letterbox), tb[t_left]), min_iou)
        pg_l.append(g_left[r])
        pt_l.append(t_left[c])
    return np.concatenate(pg_l).astype(np.int64), np.concatenate(pt_l).astype(np.int64)


def _focus(images: list[_Image], pg: np.ndarray, owner: np.ndarray) -> _Image | None:
    """The image the report quotes and the free affine map is fitted on: among images with at least two
    pairs, the one its letterbox pads most (where a letterbox mistake shows most), else the one with the
    most pairs."""
    pairs = np.bincount(owner[pg], minlength=len(images)) if len(pg) else np.zeros(len(images), dtype=np.int64)
    counted = [(int(n), im) for n, im in zip(pairs, images, strict=True)]
    usable = [(n, im) for n, im in counted if n >= 2]
    if not usable:
        return None
    def pad(im: _Image) -> float:
        return max(im.letterbox.pad_x, im.letterbox.pad_y) if im.letterbox is not None else -1.0
    return max(usable, key=lambda item: (pad(item[1]), item[0]))[1]


def _affine(focus: _Image | None, gb: np.ndarray, tb: np.ndarray, pg: np.ndarray, pt: np.ndarray) -> dict[str, Any]:
    """The free per-axis affine fit on the focus image, and its fit."""
    if focus is None:
        return {}
    sel = np.isin(pg, focus.g)
    fit = affine_fit(gb[pg[sel]], tb[pt[sel]])
    if fit is None:
        return {}
    # Rounded (and -0.0 made 0.0): a least-squares offset of 1e-14 pixels is an offset of 0.
    return {"affine_image": focus.name, "ax": round(fit.ax, 6) + 0.0, "bx": round(fit.bx, 3) + 0.0,
            "ay": round(fit.ay, 6) + 0.0, "by": round(fit.by, 3) + 0.0, "affine_fit": fit.fit}


def measure(golden: Detections, target: Detections, annotations: Annotations | None = None,
            images: ImagesInfo | None = None, knobs: Knobs | None = None) -> PostMeasures:
    knobs = knobs or Knobs.from_thresholds()
    images = images or ImagesInfo()
    sizes = {**(annotations.sizes if annotations else {}), **images.sizes}
    g, t = golden.frame, target.frame
    gb, tb = golden.boxes(), target.boxes()
    per_image = _images(golden, target, sizes, images.input_size)
    pg, pt = _score_pairs(per_image, g, t, knobs.score_tolerance)
    smaller = min(len(g), len(t))
    by_score = smaller > 0 and len(pg) / smaller >= knobs.score_pair_share
    owner = _owner(per_image, len(g))
    fits = (_fits_on_pairs(per_image, gb, tb, pg, pt, owner) if by_score
            else _fits_by_overlap(per_image, gb, tb, knobs.match_iou))
    best = max(fits, key=lambda name: fits[name]) if fits else "identity"
    score_pairs = len(pg)
    if not by_score:
        pg, pt = pg[:0], pt[:0]
    mg, mt = _match_rest(per_image, gb, tb, pg, pt, best, knobs.match_iou)
    sized = any(im.letterbox is not None for im in per_image)
    focus = _focus(per_image, mg, owner)
    box_map = _box_map_fact(fits, best, sized, focus)
    box_map.update(_affine(focus, gb, tb, mg, mt))
    if "affine_fit" in box_map and box_map.get("identity_fit") is not None:
        box_map["affine_margin"] = box_map["affine_fit"] - box_map["identity_fit"]
    detections = {"fact": "detections", "id": "detections", "images": len(per_image), "score_pairs": score_pairs,
                  "score_pair_share": score_pairs / smaller if smaller else 0.0,
                  "pairing": "score" if by_score else "overlap", "sizes_known": sized,
                  **selection_facts(g, t, mg, mt)}
    if len(pg):
        predicted, usable = _predicted(best, gb, pg, per_image, owner)
        detections.update(decode_facts(predicted, tb[pt[usable]]))
    classes = class_facts(g["category"].to_numpy()[mg], t["category"].to_numpy()[mt])
    classes.pop("class_map", None)
    facts = [detections, box_map, {"fact": "class_map", "id": "class_map", **classes}]
    ap_rows: list[tuple[int, float, float]] = []
    if annotations is not None:
        ap, ap_rows = ap_facts(g, t, annotations.frame, knobs.ap_iou, knobs.ap_hold_ratio)
        facts.append({"fact": "class_ap", "id": "class_ap", **ap})
    pairs = Counter(zip(g["category"].to_numpy()[mg].tolist(), t["category"].to_numpy()[mt].tolist(), strict=True))
    letterboxes = {im.name: im.letterbox for im in per_image}
    exhibit = exhibit_for(focus.name if focus else None, golden, target, mg, mt, sizes, letterboxes, best, fits,
                          box_map, pairs, ap_rows, annotations.categories if annotations else {})
    return PostMeasures(facts=[_clean(f) for f in facts], exhibit=exhibit, summary=_summary(facts))


def _predicted(mapping: str, gb: np.ndarray, pg: np.ndarray, per_image: list[_Image],
               owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The golden boxes ``pg`` sent through ``mapping`` (each with its image's letterbox), in ``pg``'s
    order, and which of them could be (a sized mapping needs the image's size)."""
    if not HYPOTHESES[mapping]:
        return predict(mapping, gb[pg], None), np.ones(len(pg), dtype=bool)
    out = np.full((len(pg), 4), np.nan)
    usable = np.zeros(len(pg), dtype=bool)
    for k, sel in _by_image(pg, owner).items():
        if per_image[k].letterbox is not None:
            out[sel] = predict(mapping, gb[pg[sel]], per_image[k].letterbox)
            usable[sel] = True
    return out[usable], usable


def _box_map_fact(fits: dict[str, float], best: str, sized: bool, focus: _Image | None) -> dict[str, Any]:
    ranked = sorted(fits.items(), key=lambda kv: -kv[1])
    runner = next(((n, f) for n, f in ranked if n != best), (None, None))
    out: dict[str, Any] = {"fact": "box_map", "id": "box_map", "best": best, "fit": fits.get(best),
                           "identity_fit": fits.get("identity"), "sizes_known": sized,
                           "runner_up": runner[0], "runner_up_fit": runner[1]}
    if out["fit"] is not None and out["identity_fit"] is not None:
        out["margin"] = out["fit"] - out["identity_fit"]
    if out["fit"] is not None and runner[1] is not None:
        out["runner_up_margin"] = out["fit"] - runner[1]
    if focus is not None and focus.letterbox is not None:
        lb = focus.letterbox
        out.update(letterbox_image=focus.name, letterbox_scale=lb.scale, pad_x=lb.pad_x, pad_y=lb.pad_y,
                   stretch_x=lb.stretch_x, stretch_y=lb.stretch_y)
    return out


def _clean(fact: dict[str, Any]) -> dict[str, Any]:
    """Facts hold bool, number or text; a measure that could not be taken is left out."""
    out = {}
    for key, value in fact.items():
        if value is None or (isinstance(value, float) and not np.isfinite(value)):
            continue
        out[key] = value.item() if isinstance(value, np.generic) else value
    return out


def _summary(facts: list[dict[str, Any]]) -> dict[str, Any]:
    """The numbers the report's run details show (every fact stays in report.json's findings)."""
    det = facts[0]
    keys = ("images", "golden_count", "target_count", "matched", "golden_only", "target_only", "pairing",
            "score_pairs")
    out = {key: det.get(key) for key in keys}
    out["mapping"] = facts[1].get("best")
    out["mapping_fit"] = facts[1].get("fit")
    out["class_agree_share"] = facts[2].get("agree_share")
    return {k: v for k, v in out.items() if v is not None}
