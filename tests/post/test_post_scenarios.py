"""Each injected post-processing fault is named, with its parameters, and the clean pairs stay
silent - on a real detector's outputs (PP-PicoDet on document pages, tests/data/post)."""

from __future__ import annotations

import pytest

from tests.post.conftest import LABELS, analyse, fired

CLEAN = [name for name, label in LABELS.items() if label["rule"] is None]
FAULTS = [name for name, label in LABELS.items() if label["rule"] is not None]


@pytest.mark.parametrize("name", CLEAN)
def test_clean_pairs_are_silent_and_say_so(name):
    diagnosis = analyse(name)
    assert diagnosis.root_cause is None
    assert [f.rule for f in diagnosis.findings] == ["detections-consistent"]
    assert diagnosis.network["consistent"] is True


@pytest.mark.parametrize("name", FAULTS)
def test_each_fault_fires_its_rule(name):
    label = LABELS[name]
    diagnosis = analyse(name)
    findings = fired(diagnosis, label["rule"])
    assert findings, f"{name}: {label['rule']} did not fire; fired: {[f.rule for f in diagnosis.findings]}"
    assert not fired(diagnosis, "detections-consistent")
    assert diagnosis.root_cause is not None
    # The labelled rule leads, or it is the AP collapse a class-id finding explains.
    if label["rule"] == "class-ap-collapse":
        assert findings[0].explained_by == diagnosis.root_cause.id
        assert diagnosis.root_cause.rule == "class-id-map"
    else:
        assert diagnosis.root_cause.rule == label["rule"]


def _values(name: str, rule: str) -> dict:
    return fired(analyse(name), rule)[0].values


def test_the_offset_is_named():
    values = _values("class_offset", "class-id-offset")
    assert values["offset"] == -1 and values["offset_share"] == 1.0


def test_the_permutation_is_named_class_by_class():
    values = _values("class_permutation", "class-id-map")
    assert values["map_text"] == LABELS["class_permutation"]["map"]
    assert values["map_one_to_one"] is True


def test_a_label_list_missing_a_class_shows_as_a_collapse_after_its_id():
    diagnosis = analyse("class_list_missing")
    (collapse,) = fired(diagnosis, "class-ap-collapse")
    assert collapse.values["collapse_from"] == LABELS["class_list_missing"]["collapse_from"]
    assert collapse.values["held_before"] == 3
    assert fired(diagnosis, "class-id-map")[0].values["map_one_to_one"] is False


def test_the_coco_numbering_is_named_not_an_offset():
    diagnosis = analyse("coco_contiguous_ids")
    assert fired(diagnosis, "class-id-numbering")[0].values["numbering"] == "coco_full_to_0"
    assert not fired(diagnosis, "class-id-offset")


@pytest.mark.parametrize("name", ["letterbox_as_resize", "letterbox_unmapped", "padding_not_removed"])
def test_letterbox_faults_name_the_mapping_scale_and_padding(name):
    (finding,) = fired(analyse(name), "box-letterbox-mapping")
    values = finding.values
    assert values["best"] == LABELS[name]["best"]
    assert values["fit"] > 0.99
    # The quoted letterbox is the one of the page it names (images.json: sizes; input 608 x 800).
    width, height = {"1": (850, 1100), "2": (1100, 850), "3": (900, 1200), "4": (1200, 800), "5": (850, 1100),
                     "6": (1000, 1000)}[values["letterbox_image"]]
    scale = min(608 / width, 800 / height)
    assert values["letterbox_scale"] == pytest.approx(scale)
    assert values["pad_x"] == pytest.approx((608 - scale * width) / 2)
    assert values["pad_y"] == pytest.approx((800 - scale * height) / 2)


def test_letterbox_as_resize_fits_the_predicted_affine_map():
    values = _values("letterbox_as_resize", "box-letterbox-mapping")
    # target y = golden y * s / (input h / h) + pad_y / (input h / h) on the quoted page
    assert values["ay"] == pytest.approx(values["letterbox_scale"] / values["stretch_y"], rel=1e-3)
    assert values["by"] == pytest.approx(values["pad_y"] / values["stretch_y"], abs=0.5)


def test_without_sizes_a_letterbox_fault_is_an_affine_map_with_its_numbers():
    diagnosis = analyse("letterbox_as_resize", sizes=False)
    assert not fired(diagnosis, "box-letterbox-mapping")
    (finding,) = fired(diagnosis, "box-affine-map")
    assert finding.values["affine_fit"] > 0.99 and finding.values["sizes_known"] is False


@pytest.mark.parametrize(("name", "best"), [("xyxy_as_xywh", "xyxy_as_xywh"), ("cxcywh_as_xywh", "cxcywh_as_xywh"),
                                            ("xy_swapped", "xy_swapped")])
def test_box_layout_faults_are_named(name, best):
    diagnosis = analyse(name, sizes=False)      # needs no sizes
    assert diagnosis.root_cause.values["best"] == best


def test_a_higher_threshold_names_both_score_floors():
    values = _values("score_threshold", "score-threshold-differs")
    assert values["golden_min_score"] < 0.35 < 0.6 <= values["target_min_score"]


def test_nms_faults_name_the_overlap_each_run_let_through():
    looser = _values("nms_iou", "nms-differs")
    assert looser["target_max_overlap"] > 0.8 > 0.5 > looser["golden_max_overlap"]
    agnostic = _values("nms_class_agnostic", "nms-differs")
    assert agnostic["golden_max_overlap_any_class"] > 0.9 > 0.5 > agnostic["target_max_overlap_any_class"]


def test_a_decode_fault_keeps_the_scores_and_loses_the_boxes():
    diagnosis = analyse("decode_argmax")
    values = fired(diagnosis, "decode-mismatch")[0].values
    assert values["score_pair_share"] > 0.5 and values["paired_iou"] < 0.9
    assert not fired(diagnosis, "nms-differs") and not fired(diagnosis, "score-threshold-differs")
