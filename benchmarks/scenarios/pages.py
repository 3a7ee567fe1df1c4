"""Document pages with their ground truth, for the layout detector of the post-processing scenarios.

Each page is drawn with Pillow from real material: paragraphs and headings of the Python language
reference that CPython ships (``pydoc_data.topics``: fixed for a Python release, so the pages do not
change as this repository's docs do), photos scikit-image ships (its wheel carries them in skimage/data),
tables of real numbers, an equation, a running header and a page number. Every block drawn is
recorded with its tight box and its class, in the order of the CDLA layout classes the detector
was trained on, so the annotations are exact by construction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from benchmarks.scenarios.networks import package_file

CLASSES = ("text", "title", "figure", "figure_caption", "table", "table_caption", "header", "footer",
           "reference", "equation")
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
PHOTOS = ("astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg")


@dataclass(frozen=True)
class Block:
    category: str
    box: tuple[float, float, float, float]       # x1, y1, x2, y2 in page pixels


@dataclass
class Page:
    name: str
    image: np.ndarray                             # H x W x 3 uint8, RGB
    blocks: list[Block]


@cache
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    path = FONT_DIR / ("DejaVuSerif-Bold.ttf" if bold else "DejaVuSerif.ttf")
    return ImageFont.truetype(str(path), size) if path.is_file() else ImageFont.load_default(size)


@cache
def prose() -> tuple[list[str], list[str]]:
    """(headings, paragraphs) of the Python language reference's topics, reST marks dropped."""
    from pydoc_data.topics import topics

    headings, paragraphs = [], []
    for name in sorted(topics):
        title, _, body = topics[name].partition("\n")
        headings.append(title.strip())
        for block in body.split("\n\n"):
            if block.startswith((" ", "*", "-", "=")) or len(block) < 200:
                continue
            paragraphs.append(re.sub(r"[`*]", "", " ".join(line.strip() for line in block.splitlines())))
    return headings, paragraphs


def _wrap(draw: ImageDraw.ImageDraw, text: str, face: ImageFont.ImageFont, width: float) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if line and draw.textlength(trial, font=face) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return lines + ([line] if line else [])


class _Writer:
    """Lays blocks out from the top of the page down, recording each block's box."""

    def __init__(self, width: int, height: int, margin: int) -> None:
        self.image = Image.new("RGB", (width, height), "white")
        self.draw = ImageDraw.Draw(self.image)
        self.margin, self.width, self.height = margin, width, height
        self.y = margin + 40
        self.blocks: list[Block] = []

    def room(self, need: float) -> bool:
        return self.y + need < self.height - self.margin - 40

    def text(self, category: str, text: str, size: int, bold: bool = False, centre: bool = False,
             max_lines: int = 12) -> None:
        face = font(size, bold)
        lines = _wrap(self.draw, text, face, self.width - 2 * self.margin)[:max_lines]
        step = size * 1.35
        if not lines or not self.room(step * len(lines)):
            return
        boxes = []
        for k, line in enumerate(lines):
            x = (self.width - self.draw.textlength(line, font=face)) / 2 if centre else self.margin
            self.draw.text((x, self.y + k * step), line, fill="black", font=face)
            boxes.append(self.draw.textbbox((x, self.y + k * step), line, font=face))
        box = np.array(boxes, dtype=float)
        self.blocks.append(Block(category, (box[:, 0].min(), box[:, 1].min(), box[:, 2].max(), box[:, 3].max())))
        self.y += step * len(lines) + size

    def figure(self, photo: np.ndarray, caption: str, scale: float) -> None:
        h, w = photo.shape[:2]
        fw = int(min(self.width - 2 * self.margin, w * scale))
        fh = int(h * fw / w)
        if not self.room(fh + 60):
            return
        x = (self.width - fw) // 2
        self.image.paste(Image.fromarray(photo).resize((fw, fh)), (x, int(self.y)))
        self.blocks.append(Block("figure", (x, self.y, x + fw, self.y + fh)))
        self.y += fh + 12
        self.text("figure_caption", caption, 15, centre=True, max_lines=2)

    def table(self, caption: str, rows: list[list[str]]) -> None:
        face = font(15)
        cell_h, cols = 26, len(rows[0])
        width = self.width - 2 * self.margin
        if not self.room(cell_h * len(rows) + 60):
            return
        self.text("table_caption", caption, 15, centre=True, max_lines=1)
        top = self.y
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                x0 = self.margin + c * width / cols
                self.draw.rectangle((x0, top + r * cell_h, x0 + width / cols, top + (r + 1) * cell_h), outline="black")
                self.draw.text((x0 + 6, top + r * cell_h + 4), cell, fill="black", font=face)
        self.blocks.append(Block("table", (self.margin, top, self.margin + width, top + cell_h * len(rows))))
        self.y = top + cell_h * len(rows) + 20

    def margins(self, header: str, page_number: int) -> None:
        face = font(13)
        self.draw.text((self.margin, self.margin), header, fill="black", font=face)
        self.blocks.append(Block("header", self.draw.textbbox((self.margin, self.margin), header, font=face)))
        text = str(page_number)
        x = (self.width - self.draw.textlength(text, font=face)) / 2
        y = self.height - self.margin
        self.draw.text((x, y), text, fill="black", font=face)
        self.blocks.append(Block("footer", self.draw.textbbox((x, y), text, font=face)))


def photo(name: str) -> np.ndarray:
    with Image.open(package_file("skimage", "data", name)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def page(number: int, size: tuple[int, int]) -> Page:
    """Page ``number`` (its content chosen by the number) at ``size`` (width, height)."""
    headings, paragraphs = prose()
    rng = np.random.default_rng(number)
    writer = _Writer(size[0], size[1], margin=max(40, size[0] // 14))
    writer.margins(f"The Python Language Reference · {headings[number % len(headings)]}"[:80], number)
    writer.text("title", headings[(number * 7) % len(headings)], 28, bold=True, centre=True, max_lines=2)
    order = rng.permutation(4)
    for k, part in enumerate(order):
        writer.text("text", paragraphs[(number * 5 + k) % len(paragraphs)], 16, max_lines=6)
        if part == 0:
            writer.figure(photo(PHOTOS[(number + k) % len(PHOTOS)]), f"Figure {number}.{k + 1}: "
                          f"{headings[(number + k) % len(headings)]}", scale=0.55)
        elif part == 1:
            values = rng.normal(0.99, 0.01, size=(4, 3))
            rows = [["dtype", "cosine", "distance"]] + [[d, f"{a:.4f}", f"{abs(b - 0.99):.4f}"] for d, (a, b, _)
                                                         in zip(("float16", "bfloat16", "int8", "float32"), values,
                                                                strict=True)]
            writer.table(f"Table {number}.{k + 1}: thresholds per dtype", rows)
        elif part == 2:
            writer.text("equation", f"cos(x, y) = Σ xᵢyᵢ / (‖x‖ ‖y‖)      ({number}.{k + 1})", 20, centre=True,
                        max_lines=1)
        else:
            writer.text("title", headings[(number * 3 + k) % len(headings)], 22, bold=True, max_lines=1)
    return Page(f"page-{number:03d}", np.asarray(writer.image, dtype=np.uint8).copy(), writer.blocks)
