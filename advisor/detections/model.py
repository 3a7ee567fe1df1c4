"""The canonical detections frame: one row per detection, boxes as corners in image pixels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

# image: the image id as text (ids are numbers in COCO files and names in others: compared as text);
# category: the class id as written; x1, y1, x2, y2: the box corners in pixels of the original image;
# score: the detection's confidence; item: where it was read (1-based item of the JSON list, or CSV line).
COLUMNS = ("image", "category", "x1", "y1", "x2", "y2", "score", "item")
BOX_COLUMNS = ("x1", "y1", "x2", "y2")


@dataclass
class Detections:
    frame: pd.DataFrame          # COLUMNS, in the order the file lists them
    source: Path
    format: str                  # coco-results | mapped-csv

    def __len__(self) -> int:
        return len(self.frame)

    def images(self) -> list[str]:
        return list(dict.fromkeys(self.frame["image"].tolist()))

    def boxes(self) -> np.ndarray:
        return self.frame[list(BOX_COLUMNS)].to_numpy(dtype=float)


def detections_frame(image: list[str], category: list[int], boxes: np.ndarray, score: list[float],
                     item: list[int]) -> pd.DataFrame:
    """The canonical frame from column lists; ``boxes`` is (n, 4) corners."""
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return pd.DataFrame({"image": pd.Series(image, dtype=object).astype(str),
                         "category": np.asarray(category, dtype=np.int64),
                         "x1": boxes[:, 0], "y1": boxes[:, 1], "x2": boxes[:, 2], "y2": boxes[:, 3],
                         "score": np.asarray(score, dtype=float), "item": np.asarray(item, dtype=np.int64)},
                        columns=list(COLUMNS))


def corners(layout: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Boxes written as ``layout`` (xyxy, xywh or cxcywh) as (n, 4) corners."""
    if layout == "xyxy":
        return np.stack([a, b, c, d], axis=1)
    if layout == "xywh":
        return np.stack([a, b, a + c, b + d], axis=1)
    return np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)   # cxcywh
