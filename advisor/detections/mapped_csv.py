"""Detections from any CSV, given a small YAML mapping of its columns::

    # yolo-csv.yaml
    format: detections          # required, always "detections"
    columns:                    # required: what each column holds -> its header in the CSV
      image_id: image           # required
      category_id: class        # required: a whole number per row
      score: confidence         # required
      x1: xmin                  # the box, in one of three layouts:
      y1: ymin                  #   x1, y1, x2, y2 (corners); x, y, w, h (top-left and size);
      x2: xmax                  #   cx, cy, w, h (centre and size)
      y2: ymax
    sep: ","                    # optional field delimiter (default ",")

Every mistake is one line naming the mapping or the CSV, the line and the field.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputFormatError, UsageError
from ..text import suggest
from ..yamlfile import load_yaml
from .model import Detections, corners, detections_frame
from .text_file import read_text

FORMAT = "detections"
LAYOUTS: dict[str, tuple[str, str, str, str]] = {"xyxy": ("x1", "y1", "x2", "y2"), "xywh": ("x", "y", "w", "h"),
                                                 "cxcywh": ("cx", "cy", "w", "h")}
IDENTITY = ("image_id", "category_id", "score")
KNOWN = (*IDENTITY, "x1", "y1", "x2", "y2", "x", "y", "cx", "cy", "w", "h")
MAPPING_KEYS = ("format", "columns", "sep")


def read_mapping(path: Path) -> tuple[dict[str, str], str, str]:
    """(column -> header, box layout, separator), checked."""
    raw = load_yaml(path, UsageError)
    if not isinstance(raw, dict):
        raise UsageError("a detections mapping is a YAML mapping with 'format: detections' and 'columns'", path=path)
    for key in raw:
        if key not in MAPPING_KEYS:
            raise UsageError(f"unknown key{suggest(str(key), list(MAPPING_KEYS))}", path=path, field=str(key))
    if raw.get("format") != FORMAT:
        raise UsageError(f"expected 'format: {FORMAT}'", path=path, field="format")
    columns = raw.get("columns")
    if not isinstance(columns, dict) or not columns:
        raise UsageError("'columns' maps image_id, category_id, score and a box to CSV headers", path=path,
                         field="columns")
    for key, header in columns.items():
        if key not in KNOWN:
            raise UsageError(f"unknown column{suggest(str(key), list(KNOWN))}", path=path, field=f"columns.{key}")
        if not isinstance(header, str) or not header:
            raise UsageError("a CSV header (text)", path=path, field=f"columns.{key}")
    for key in IDENTITY:
        if key not in columns:
            raise UsageError(f"'columns' needs {key}", path=path, field=f"columns.{key}")
    layout = next((name for name, keys in LAYOUTS.items() if all(k in columns for k in keys)), None)
    if layout is None:
        raise UsageError("'columns' needs a box: x1, y1, x2, y2 or x, y, w, h or cx, cy, w, h", path=path,
                         field="columns")
    sep = raw.get("sep", ",")
    if not isinstance(sep, str) or len(sep) != 1:
        raise UsageError("one character", path=path, field="sep")
    return {str(k): str(v) for k, v in columns.items()}, layout, sep


def read_mapped_csv(path: Path, mapping: Path) -> Detections:
    columns, layout, sep = read_mapping(mapping)
    text = read_text(path, "a CSV of detections")
    try:
        table = pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputFormatError(f"not a readable CSV: {str(exc).splitlines()[0]}", path=path) from None
    missing = [header for header in columns.values() if header not in table.columns]
    if missing:
        raise InputFormatError(f"no column '{missing[0]}' (the mapping {mapping} names it; the header has "
                               f"{', '.join(map(str, table.columns[:12]))})", path=path)
    images = table[columns["image_id"]].str.strip()
    empty = np.flatnonzero((images == "").to_numpy())
    if empty.size:
        raise InputFormatError("no image id", path=path, line=int(empty[0]) + 2, field=columns["image_id"])
    values = {key: _numbers(table[columns[key]], path, columns[key]) for key in
              ("category_id", "score", *LAYOUTS[layout])}
    category = values["category_id"]
    bad = np.flatnonzero(category != np.round(category))
    if bad.size:
        raise InputFormatError(f"a class id is a whole number, not {table[columns['category_id']].iloc[bad[0]]!r}",
                               path=path, line=int(bad[0]) + 2, field=columns["category_id"])
    boxes = corners(layout, *(values[k] for k in LAYOUTS[layout]))
    frame = detections_frame(images.tolist(), category.astype(np.int64).tolist(), boxes, values["score"].tolist(),
                             list(range(2, len(table) + 2)))
    return Detections(frame, path, "mapped-csv")


def _numbers(cells: pd.Series, path: Path, header: str) -> np.ndarray:
    """A column as finite floats; a bad cell is an error naming its line (the header is line 1)."""
    values = pd.to_numeric(cells.str.strip(), errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        cell: Any = cells.iloc[bad[0]]
        raise InputFormatError(f"expected a finite number, found {cell!r}"[:200], path=path, line=int(bad[0]) + 2,
                               field=header)
    return values
