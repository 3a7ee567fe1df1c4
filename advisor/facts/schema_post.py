"""Fact kinds of ``advisor post`` (advisor/post/measure.py): the detections two post-processings kept,
how their boxes map onto each other, what happened to class ids, and per-class AP."""

from __future__ import annotations

from .schema_types import BOOL, NUMBER, STRING


def _kind(name: str, fields: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {"id": (STRING, f"always '{name}'"), "fact": (STRING, f"always '{name}'"), **fields}


POST_FIELDS: dict[str, dict[str, dict[str, tuple[str, str]]]] = {
    "detections": _kind("detections", {
        "images": (NUMBER, "images with a detection in either run"),
        "golden_count": (NUMBER, "detections the golden post-processing kept"),
        "target_count": (NUMBER, "detections the target post-processing kept"),
        "matched": (NUMBER, "golden-target pairs (same score, or overlapping once mapped)"),
        "golden_only": (NUMBER, "golden detections with no target partner"),
        "target_only": (NUMBER, "target detections with no golden partner"),
        "matched_share_golden": (NUMBER, "matched / golden_count"),
        "matched_share_target": (NUMBER, "matched / target_count"),
        "score_pairs": (NUMBER, "detections paired by an identical score (the raw outputs agree)"),
        "score_pair_share": (NUMBER, "score_pairs / the smaller run's count"),
        "pairing": (STRING, "score (pairs found by identical scores) or overlap"),
        "sizes_known": (BOOL, "image and network input sizes are known (letterbox mappings tried)"),
        "golden_min_score": (NUMBER, "lowest score the golden run kept"),
        "target_min_score": (NUMBER, "lowest score the target run kept"),
        "golden_only_max_score": (NUMBER, "highest score of an unmatched golden detection"),
        "target_only_max_score": (NUMBER, "highest score of an unmatched target detection"),
        "golden_only_below_target_min": (NUMBER, "share of unmatched golden detections scoring below target_min_score"),
        "target_only_below_golden_min": (NUMBER, "share of unmatched target detections scoring below golden_min_score"),
        "golden_max_overlap": (NUMBER, "largest IoU of two golden detections of one class and image (NMS let it "
                                       "through)"),
        "target_max_overlap": (NUMBER, "the same on the target"),
        "golden_max_overlap_any_class": (NUMBER, "largest IoU of two golden detections of one image, any classes"),
        "target_max_overlap_any_class": (NUMBER, "the same on the target"),
        "target_overlap_gap": (NUMBER, "target_max_overlap - golden_max_overlap"),
        "golden_overlap_gap": (NUMBER, "golden_max_overlap - target_max_overlap"),
        "target_overlap_gap_any_class": (NUMBER, "target_max_overlap_any_class - golden_max_overlap_any_class"),
        "golden_overlap_gap_any_class": (NUMBER, "golden_max_overlap_any_class - target_max_overlap_any_class"),
        "target_score_floor_gap": (NUMBER, "target_min_score - golden_min_score (the target's threshold is higher)"),
        "golden_score_floor_gap": (NUMBER, "golden_min_score - target_min_score"),
        "golden_only_overlapping": (NUMBER, "unmatched golden detections overlapping a matched one of their class "
                                            "beyond target_max_overlap, scoring above target_min_score (the target's "
                                            "NMS removed them)"),
        "target_only_overlapping": (NUMBER, "unmatched target detections overlapping a matched one of their class "
                                            "beyond golden_max_overlap (the golden NMS would have removed them)"),
        "golden_only_overlapping_any_class": (NUMBER, "unmatched golden detections overlapping a matched one of any "
                                                      "class beyond target_max_overlap_any_class (a class-agnostic "
                                                      "NMS on the target removed them)"),
        "target_only_overlapping_any_class": (NUMBER, "the same the other way round"),
        "paired_iou": (NUMBER, "median IoU of score-paired target boxes with the golden boxes sent through the best "
                               "mapping"),
        "paired_iou_low": (NUMBER, "its 10th percentile"),
        "size_ratio": (NUMBER, "median sqrt(target area / mapped golden area) of score pairs"),
        "centre_shift": (NUMBER, "median centre distance of score pairs, in mapped golden box diagonals"),
    }),
    "box_map": _kind("box_map", {
        "best": (STRING, "the named mapping that predicts target boxes from golden ones best: identity, "
                         "letterbox_as_resize, resize_as_letterbox, letterbox_unmapped, resize_unmapped, "
                         "padding_not_removed, xy_swapped, xyxy_as_xywh, xywh_as_xyxy, cxcywh_as_xywh"),
        "fit": (NUMBER, "its fit: median IoU of its predictions with the paired target boxes"),
        "identity_fit": (NUMBER, "the fit of the boxes as they are"),
        "margin": (NUMBER, "fit - identity_fit"),
        "runner_up": (STRING, "the second-best mapping"),
        "runner_up_fit": (NUMBER, "its fit"),
        "runner_up_margin": (NUMBER, "fit - runner_up_fit"),
        "sizes_known": (BOOL, "image and input sizes were known: the letterbox family was tried"),
        "letterbox_image": (STRING, "the image whose letterbox is quoted"),
        "letterbox_scale": (NUMBER, "its letterbox scale min(input w / w, input h / h)"),
        "pad_x": (NUMBER, "its letterbox padding on the left, input pixels"),
        "pad_y": (NUMBER, "its letterbox padding on the top, input pixels"),
        "stretch_x": (NUMBER, "a plain resize's x scale: input w / w"),
        "stretch_y": (NUMBER, "a plain resize's y scale: input h / h"),
        "affine_image": (STRING, "the image the free affine map was fitted on (the one with most pairs)"),
        "ax": (NUMBER, "free fit: target x = ax * golden x + bx"),
        "bx": (NUMBER, "free fit: x offset, pixels"),
        "ay": (NUMBER, "free fit: target y = ay * golden y + by"),
        "by": (NUMBER, "free fit: y offset, pixels"),
        "affine_fit": (NUMBER, "median IoU of the free fit's predictions with the target boxes"),
        "affine_margin": (NUMBER, "affine_fit - identity_fit"),
    }),
    "class_map": _kind("class_map", {
        "pairs": (NUMBER, "matched detections whose class ids are compared"),
        "golden_classes": (NUMBER, "distinct golden class ids among them"),
        "agree_share": (NUMBER, "share of pairs with the same class id"),
        "offset": (NUMBER, "the most common non-zero target id - golden id (0: no pair's ids differ)"),
        "offset_share": (NUMBER, "share of pairs that offset explains"),
        "numbering": (STRING, "the known numbering (knowledge/post/class_id_maps.yaml) explaining most pairs, e.g. "
                              "coco_0_to_full: 0-based contiguous ids sent to COCO's 91 ids"),
        "numbering_share": (NUMBER, "share of pairs it explains"),
        "numbering_margin": (NUMBER, "numbering_share - offset_share"),
        "map_share": (NUMBER, "share of pairs explained by each golden class's most common target class"),
        "moved_classes": (NUMBER, "golden classes that map maps to another id"),
        "map_one_to_one": (BOOL, "no two golden classes map to the same target id"),
        "map_text": (STRING, "the moved part of that map, 'golden->target' comma-joined"),
        "map_margin": (NUMBER, "map_share - the larger of offset_share and numbering_share"),
    }),
    "class_ap": _kind("class_ap", {
        "classes": (NUMBER, "annotated classes evaluated"),
        "min_iou": (NUMBER, "IoU of a true positive"),
        "golden_map": (NUMBER, "mean AP of the golden detections over those classes"),
        "target_map": (NUMBER, "mean AP of the target detections"),
        "collapse_from": (NUMBER, "the smallest class id from which every class the golden run detects loses its "
                                  "AP on the target (absent when the last class holds)"),
        "collapsed_classes": (NUMBER, "classes from collapse_from on"),
        "classes_before": (NUMBER, "detected classes before collapse_from"),
        "held_before": (NUMBER, "of those, classes that keep their AP on the target"),
        "collapse_golden_ap": (NUMBER, "mean golden AP of the collapsed classes"),
        "collapse_target_ap": (NUMBER, "mean target AP of the collapsed classes"),
    }),
}
