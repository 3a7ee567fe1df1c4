"""The sizes boxes are mapped between: each original image's, and the network input's.

An images-info file (YAML or JSON)::

    input_size: [640, 640]         # the network input, width and height
    images:                        # image id -> [width, height], or a list of {id, width, height}
      "1": [1280, 720]

The images' sizes can come from the annotations instead, and the input size from ``--input-size``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFormatError, UsageError
from ..text import suggest
from ..yamlfile import load_yaml
from .annotations import image_sizes, positive_size

KEYS = ("input_size", "images")


@dataclass
class ImagesInfo:
    input_size: tuple[float, float] | None = None                     # network input (width, height)
    sizes: dict[str, tuple[float, float]] = field(default_factory=dict)   # image id -> (width, height)


def read_images_info(path: str | Path) -> ImagesInfo:
    path = Path(path)
    raw = load_yaml(path, InputFormatError)     # YAML reads JSON too
    if not isinstance(raw, dict):
        raise InputFormatError("an images-info file is a mapping with input_size and images", path=path)
    for key in raw:
        if key not in KEYS:
            raise InputFormatError(f"unknown key{suggest(str(key), list(KEYS))}", path=path, field=str(key))
    size = positive_size(raw["input_size"], path, "input_size") if raw.get("input_size") is not None else None
    return ImagesInfo(size, image_sizes(raw.get("images") or {}, path, "images"))


def parse_input_size(text: str) -> tuple[float, float]:
    """``--input-size 640x640`` (width x height)."""
    width, sep, height = text.lower().partition("x")
    try:
        size = (float(width), float(height))
    except ValueError:
        size = (0.0, 0.0)
    if not sep or min(size) <= 0:
        raise UsageError(f"--input-size '{text}': expected WIDTHxHEIGHT, e.g. 640x640")
    return size
