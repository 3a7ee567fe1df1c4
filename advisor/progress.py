"""Progress on stderr for anything that can take more than a couple of seconds (``advisor run`` on a
large input, ``advisor compare``, ``advisor batch``): one bar, drawn by tqdm.

Drawn only when stderr is a terminal and ``CI`` is not set, so pipes, logs and CI output carry no
carriage returns; ``enabled=True`` forces it (``advisor compare --progress``). A bar with ``delay``
appears only once the work has taken that long, so quick runs print nothing extra. tqdm is imported
when a bar is made, never when the command line is parsed (``advisor --help`` stays fast).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO


def wanted(stream: TextIO | None = None) -> bool:
    """True when a bar on ``stream`` (default stderr) would be seen by a person."""
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("CI")


class ProgressBar:
    """``total`` steps (jobs, tensor pairs, pipeline stages); ``label`` says what is being done."""

    def __init__(self, label: str, total: int, *, stream: TextIO | None = None, enabled: bool | None = None,
                 done: int = 0, unit: str = "it", delay: float = 0.0, leave: bool = True) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = wanted(self.stream) if enabled is None else enabled
        self._bar: Any = None
        self._timer: threading.Timer | None = None
        self._staged = False
        if self.enabled:
            from tqdm import tqdm
            self._bar = tqdm(total=total, initial=done, desc=label, unit=unit, file=self.stream, delay=delay,
                             dynamic_ncols=True, leave=leave, mininterval=0.1)
            if delay > 0:       # a single slow step (reading a large CSV) must not hide the bar until it ends
                self._timer = threading.Timer(delay, self._draw_late)
                self._timer.daemon = True
                self._timer.start()

    def advance(self, count: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(count)

    def stage(self, name: str) -> None:
        """Name the step now running and count the previous one as done (a pipeline's stages). Each
        step is drawn once ``delay`` has passed; a timer draws the bar then if one step runs long."""
        if self._bar is not None:
            bar = self._bar
            bar.set_description_str(f"{self.label}: {name}", refresh=False)
            if self._staged:
                bar.n += 1
            if time.time() - bar.start_t >= bar.delay:     # stages are few and slow: draw each one
                bar.refresh()
        self._staged = True

    def set_total(self, total: int) -> None:
        if self._bar is not None and self._bar.total != total:
            self._bar.total = total
            self._bar.refresh()

    def write(self, line: str, stream: TextIO | None = None) -> None:
        """Print a line (to stdout by default) without tearing the bar."""
        target = stream or sys.stdout
        if self._bar is not None:
            self._bar.write(line, file=target)
        else:
            print(line, file=target, flush=True)

    def _draw_late(self) -> None:
        bar = self._bar
        if bar is not None:
            bar.refresh()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
