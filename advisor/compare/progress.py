"""A one-line progress bar on stderr: count done, rate and time left, redrawn at most 10 times a second.

No dependency (tqdm would be one more install for a single line). Drawn only when asked or when
the stream is a terminal, so logs and CI output stay clean.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 28


class ProgressBar:
    def __init__(self, label: str, total: int, *, stream: TextIO | None = None,
                 enabled: bool | None = None, done: int = 0) -> None:
        self.label, self.total, self.done = label, total, done
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._start = time.monotonic()
        self._resumed = done
        self._last_draw = 0.0
        self._draw(force=True)

    def advance(self, count: int = 1) -> None:
        self.done += count
        self._draw()

    def close(self) -> None:
        self._draw(force=True)
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        fraction = self.done / self.total if self.total else 1.0
        filled = int(WIDTH * fraction)
        bar = "=" * filled + (">" if filled < WIDTH else "") + " " * max(WIDTH - filled - 1, 0)
        elapsed = now - self._start
        rate = (self.done - self._resumed) / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta = f"{left:5.0f}s left" if left == left else "   ?s left"
        self.stream.write(f"\r{self.label:<16} [{bar}] {self.done}/{self.total} {rate:7.1f}/s {eta}")
        self.stream.flush()
