"""Object detections and what they are judged against: the inputs of ``advisor post``.

Two runs' detections (the golden post-processing and the target's) are read into one canonical
frame (:class:`Detections`), whatever they were written as: a COCO results JSON (the list
``[{image_id, category_id, bbox: [x, y, w, h], score}]`` every COCO evaluation reads) or a CSV with
a small YAML column mapping (``mapped_csv.py``). Ground truth comes as a COCO instances file
(``annotations.py``); image and network input sizes from it or from an images-info file
(``images.py``).
"""

from __future__ import annotations

from .annotations import Annotations, read_annotations
from .images import ImagesInfo, read_images_info
from .model import BOX_COLUMNS, Detections
from .read import read_detections

__all__ = ["BOX_COLUMNS", "Annotations", "Detections", "ImagesInfo", "read_annotations", "read_detections",
           "read_images_info"]
