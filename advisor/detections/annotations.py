"""Ground truth as a COCO instances file (``images``, ``annotations``, ``categories``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputFormatError
from ..nesting import loads_json
from .model import corners, detections_frame
from .read import coco_bbox, image_id
from .text_file import read_text


@dataclass
class Annotations:
    frame: pd.DataFrame                  # detections columns (score 1.0) plus ``crowd``
    sizes: dict[str, tuple[float, float]]   # image id -> (width, height)
    categories: dict[int, str] = field(default_factory=dict)   # id -> name
    source: Path | None = None


def read_annotations(path: str | Path) -> Annotations:
    path = Path(path)
    document = loads_json(read_text(path, "a COCO annotations JSON"), path, InputFormatError)
    if not isinstance(document, dict) or not isinstance(document.get("annotations"), list):
        raise InputFormatError("expected a COCO instances file: an object with 'images', 'annotations' and "
                               "'categories'", path=path)
    sizes = image_sizes(document.get("images", []), path, "images")
    categories: dict[int, str] = {}
    for i, item in enumerate(document.get("categories") or []):
        if not isinstance(item, dict) or isinstance(item.get("id"), bool) or not isinstance(item.get("id"), int):
            raise InputFormatError("a category is {id, name}", path=path, field=f"categories[{i}]")
        categories[item["id"]] = str(item.get("name", item["id"]))
    rows = document["annotations"]
    boxes = np.array([coco_bbox(item, path, i) for i, item in enumerate(rows)], dtype=float).reshape(-1, 4)
    images = [image_id(item, path, i) for i, item in enumerate(rows)]
    classes = []
    for i, item in enumerate(rows):
        value = item.get("category_id")
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputFormatError(f"annotation {i + 1}: a category id is a whole number", path=path,
                                   field=f"annotations[{i}].category_id")
        classes.append(value)
    frame = detections_frame(images, classes, corners("xywh", *boxes.T), [1.0] * len(rows),
                             list(range(1, len(rows) + 1)))
    frame["crowd"] = np.array([bool(item.get("iscrowd", 0)) for item in rows], dtype=bool)
    unknown = sorted(set(images) - set(sizes))
    if sizes and unknown:
        raise InputFormatError(f"annotations of image {unknown[0]!r}, which 'images' does not list", path=path,
                               field="annotations")
    return Annotations(frame, sizes, categories, path)


def image_sizes(items: Any, path: Path, where: str) -> dict[str, tuple[float, float]]:
    """``[{id, width, height}, ...]`` (as COCO writes them) or ``{id: [width, height]}`` -> id -> (w, h)."""
    pairs: list[tuple[Any, Any, str]] = []
    if isinstance(items, dict):
        pairs = [(key, value, f"{where}.{key}") for key, value in items.items()]
    elif isinstance(items, list):
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "id" not in item:
                raise InputFormatError("an image is {id, width, height}", path=path, field=f"{where}[{i}]")
            pairs.append((item["id"], [item.get("width"), item.get("height")], f"{where}[{i}]"))
    else:
        raise InputFormatError("a list of {id, width, height} or a mapping id -> [width, height]", path=path,
                               field=where)
    sizes = {}
    for key, size, at in pairs:
        sizes[str(key)] = positive_size(size, path, at)
    return sizes


def positive_size(value: Any, path: Path, where: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value):
        raise InputFormatError(f"a size is [width, height], two positive numbers, not {value!r}"[:200], path=path,
                               field=where)
    return float(value[0]), float(value[1])
