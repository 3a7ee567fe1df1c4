"""What the report draws for ``advisor post``: one image's boxes, the mapping fitted between the
runs and the class map, as plain data (the report layer renders it, escaped)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Box:
    x1: float
    y1: float
    x2: float
    y2: float
    category: int
    score: float


@dataclass(frozen=True)
class PostExhibit:
    image: str                                   # the image drawn
    width: float                                 # its size (known, or the boxes' extent)
    height: float
    size_known: bool
    golden: tuple[Box, ...]
    target: tuple[Box, ...]
    pairs: tuple[tuple[int, int], ...]           # (golden index, target index) drawn as links
    mapping: str                                 # the best named mapping
    mapped: tuple[Box, ...]                      # the golden boxes sent through it
    fits: tuple[tuple[str, float], ...]          # every mapping tried, with its fit (median IoU)
    affine: tuple[float, float, float, float] | None = None   # ax, bx, ay, by of the free fit
    affine_fit: float | None = None
    class_pairs: tuple[tuple[int, int, int], ...] = ()       # (golden id, target id, pairs), most first
    class_ap: tuple[tuple[int, float, float], ...] = ()      # (class id, golden AP, target AP)
    categories: dict[int, str] = field(default_factory=dict)  # id -> name, from the annotations
