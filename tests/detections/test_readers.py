"""Reading detections, annotations and image sizes: every layout lands on the same corners, and every
mistake is one line naming the file, the item or line, and the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.detections import read_annotations, read_detections, read_images_info
from advisor.detections.images import parse_input_size
from advisor.errors import InputFormatError, UsageError
from tests.post.conftest import POST

RESULTS = [{"image_id": 7, "category_id": 3, "bbox": [10, 20, 30, 40], "score": 0.9},
           {"image_id": "a.jpg", "category_id": 1, "bbox": [0.5, 1.5, 2, 3], "score": 0.25}]


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_coco_results_become_corners_with_their_item_numbers(tmp_path):
    dets = read_detections(write(tmp_path, "d.json", json.dumps(RESULTS)))
    assert dets.format == "coco-results"
    assert dets.frame["image"].tolist() == ["7", "a.jpg"]
    np.testing.assert_allclose(dets.boxes(), [[10, 20, 40, 60], [0.5, 1.5, 2.5, 4.5]])
    assert dets.frame["item"].tolist() == [1, 2]


@pytest.mark.parametrize(("document", "message", "field"), [
    ({"x": 1}, "expected a COCO results list", None),
    ([{"image_id": 1, "category_id": 1, "score": 0.5}], "has no 'bbox'", "[0].bbox"),
    ([{"image_id": 1, "category_id": 1.5, "bbox": [0, 0, 1, 1], "score": 0.5}], "whole number", "[0].category_id"),
    ([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1], "score": 0.5}], "four finite numbers", "[0].bbox"),
    ([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": "high"}], "finite number", "[0].score"),
    ({"annotations": [], "images": []}, "annotations file", None),
])
def test_bad_results_name_the_item_and_field(tmp_path, document, message, field):
    with pytest.raises(InputFormatError) as err:
        read_detections(write(tmp_path, "d.json", json.dumps(document)))
    assert message in err.value.message
    assert err.value.field == field
    assert "d.json" in err.value.one_line() and "\n" not in err.value.one_line()


def test_invalid_json_names_line_and_column(tmp_path):
    with pytest.raises(InputFormatError) as err:
        read_detections(write(tmp_path, "d.json", '[{"image_id": 1,\n "bbox": [1, 2,]}]'))
    assert err.value.line == 2


@pytest.mark.parametrize(("columns", "rows"), [
    ({"x1": "l", "y1": "t", "x2": "r", "y2": "b"}, "l,t,r,b\n10,20,40,60"),
    ({"x": "l", "y": "t", "w": "w", "h": "h"}, "l,t,w,h\n10,20,30,40"),
    ({"cx": "cx", "cy": "cy", "w": "w", "h": "h"}, "cx,cy,w,h\n25,40,30,40"),
])
def test_a_mapped_csv_reads_every_box_layout_to_the_same_corners(tmp_path, columns, rows):
    header, values = rows.split("\n")
    csv = write(tmp_path, "d.csv", f"img,cls,conf,{header}\npage1,2,0.75,{values}\n")
    mapping = write(tmp_path, "m.yaml", "format: detections\ncolumns:\n  image_id: img\n  category_id: cls\n"
                    "  score: conf\n" + "".join(f"  {k}: {v}\n" for k, v in columns.items()))
    dets = read_detections(csv, mapping)
    np.testing.assert_allclose(dets.boxes(), [[10, 20, 40, 60]])
    assert dets.frame["category"].tolist() == [2] and dets.frame["item"].tolist() == [2]


def test_a_bad_csv_cell_names_its_line_and_column(tmp_path):
    csv = write(tmp_path, "d.csv", "img,cls,conf,l,t,r,b\np,1,0.5,1,2,3,4\np,1,oops,1,2,3,4\n")
    mapping = write(tmp_path, "m.yaml", "format: detections\ncolumns: {image_id: img, category_id: cls, score: conf, "
                    "x1: l, y1: t, x2: r, y2: b}\n")
    with pytest.raises(InputFormatError) as err:
        read_detections(csv, mapping)
    assert (err.value.line, err.value.field) == (3, "conf")


@pytest.mark.parametrize(("text", "field"), [
    ("format: generic\ncolumns: {image_id: a}", "format"),
    ("format: detections\ncolumns: {image_id: a, category_id: b, score: c, x1: d, y1: e, x2: f}", "columns"),
    ("format: detections\ncolumns: {image_id: a, category_id: b, score: c, xmin: d}", "columns.xmin"),
])
def test_mapping_mistakes_name_the_field(tmp_path, text, field):
    csv = write(tmp_path, "d.csv", "a,b,c,d,e,f\n")
    with pytest.raises(UsageError) as err:
        read_detections(csv, write(tmp_path, "m.yaml", text))
    assert err.value.field == field


def test_a_csv_without_a_mapping_says_what_to_give(tmp_path):
    with pytest.raises(InputFormatError, match="--mapping"):
        read_detections(write(tmp_path, "d.csv", "a,b\n"))


def test_annotations_give_boxes_sizes_and_names():
    truth = read_annotations(POST / "annotations.json")
    assert truth.sizes["2"] == (1100.0, 850.0)
    assert truth.categories[1] == "text" and len(truth.categories) == 10
    assert not truth.frame["crowd"].any() and len(truth.frame) > 40


def test_annotations_of_an_unlisted_image_are_refused(tmp_path):
    document = {"images": [{"id": 1, "width": 10, "height": 10}],
                "annotations": [{"image_id": 2, "category_id": 1, "bbox": [0, 0, 1, 1]}], "categories": []}
    with pytest.raises(InputFormatError, match="'2'"):
        read_annotations(write(tmp_path, "a.json", json.dumps(document)))


def test_images_info_reads_both_image_list_forms(tmp_path):
    info = read_images_info(POST / "images.json")
    assert info.input_size == (608.0, 800.0) and info.sizes["4"] == (1200.0, 800.0)
    listed = read_images_info(write(tmp_path, "i.yaml", "images:\n  - {id: 3, width: 640, height: 480}\n"))
    assert listed.input_size is None and listed.sizes == {"3": (640.0, 480.0)}
    with pytest.raises(InputFormatError) as err:
        read_images_info(write(tmp_path, "j.yaml", "input_size: [640, 0]\n"))
    assert err.value.field == "input_size"


@pytest.mark.parametrize(("text", "size"), [("640x480", (640.0, 480.0)), ("608X800", (608.0, 800.0))])
def test_input_size_option(text, size):
    assert parse_input_size(text) == size


@pytest.mark.parametrize("text", ["640", "640x", "0x480", "axb"])
def test_bad_input_size_option(text):
    with pytest.raises(UsageError, match="WIDTHxHEIGHT"):
        parse_input_size(text)
