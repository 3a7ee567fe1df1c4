"""Read one run's detections: a COCO results JSON, or a CSV given its YAML column mapping."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputFormatError
from ..nesting import loads_json
from .mapped_csv import read_mapped_csv
from .model import Detections, corners, detections_frame
from .text_file import read_text

RESULT_KEYS = ("image_id", "category_id", "bbox", "score")


def read_detections(path: str | Path, mapping: str | Path | None = None) -> Detections:
    """``path`` as a COCO results JSON, or (with ``mapping``) as the CSV that mapping describes."""
    path = Path(path)
    if mapping is not None:
        return read_mapped_csv(path, Path(mapping))
    if path.suffix.lower() == ".csv":
        raise InputFormatError("a CSV of detections needs --mapping MAP.yaml naming its columns "
                               "(see docs/post.md)", path=path)
    return read_coco_results(path)


def read_coco_results(path: Path) -> Detections:
    document = loads_json(read_text(path, "a COCO results JSON"), path, InputFormatError)
    if isinstance(document, dict) and isinstance(document.get("annotations"), list):
        raise InputFormatError("this is a COCO annotations file (ground truth), not detections: give it as "
                               "--annotations, and the detectors' results as --golden/--target", path=path)
    if not isinstance(document, list):
        raise InputFormatError("expected a COCO results list: [{image_id, category_id, bbox: [x, y, w, h], "
                               f"score}}, ...], found a JSON {type(document).__name__}", path=path)
    n = len(document)
    images: list[str] = []
    categories = np.zeros(n, dtype=np.int64)
    boxes = np.zeros((n, 4))
    scores = np.zeros(n)
    for i, item in enumerate(document):
        images.append(image_id(item, path, i))
        categories[i] = _category(item, path, i)
        boxes[i] = _bbox(item, path, i)
        scores[i] = _number(item, "score", path, i)
    xyxy = corners("xywh", boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3])
    frame = detections_frame(images, categories.tolist(), xyxy, scores.tolist(), list(range(1, n + 1)))
    return Detections(frame, path, "coco-results")


def _where(i: int, key: str) -> str:
    return f"[{i}].{key}"


def _field(item: Any, key: str, path: Path, i: int) -> Any:
    if not isinstance(item, dict):
        raise InputFormatError(f"item {i + 1} is a {type(item).__name__}, expected an object with "
                               f"{', '.join(RESULT_KEYS)}", path=path, field=f"[{i}]")
    if key not in item:
        raise InputFormatError(f"item {i + 1} has no '{key}'", path=path, field=_where(i, key))
    return item[key]


def image_id(item: Any, path: Path, i: int, key: str = "image_id") -> str:
    value = _field(item, key, path, i)
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        raise InputFormatError(f"item {i + 1}: an image id is a number or a name, not {value!r}"[:200],
                               path=path, field=_where(i, key))
    return str(value)


def _category(item: Any, path: Path, i: int) -> int:
    value = _field(item, "category_id", path, i)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise InputFormatError(f"item {i + 1}: a category id is a whole number, not {value!r}"[:200],
                               path=path, field=_where(i, "category_id"))
    return int(value)


def _number(item: Any, key: str, path: Path, i: int) -> float:
    value = _field(item, key, path, i)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputFormatError(f"item {i + 1}: '{key}' must be a finite number, not {value!r}"[:200],
                               path=path, field=_where(i, key))
    return float(value)


def _bbox(item: Any, path: Path, i: int, key: str = "bbox") -> list[float]:
    value = _field(item, key, path, i)
    if not isinstance(value, list) or len(value) != 4 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        raise InputFormatError(f"item {i + 1}: a bbox is [x, y, width, height], four finite numbers, not "
                               f"{value!r}"[:200], path=path, field=_where(i, key))
    return [float(v) for v in value]


def coco_bbox(item: Any, path: Path, i: int) -> list[float]:
    """An annotation's ``bbox`` (same checks as a result's)."""
    return _bbox(item, path, i)
