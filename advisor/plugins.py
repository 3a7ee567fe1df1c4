"""Code from installed plugins (rule packs and fact providers declared as entry points) runs guarded: a
plugin that raises, or calls ``sys.exit()``, while it is imported or asked for its pack is reported by
name and skipped, never the end of advisor (``sys.exit(0)`` at import used to make advisor exit 0 with
no report and no message). Ctrl-C still stops advisor."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def guarded(step: Callable[[], T]) -> tuple[T | None, str | None]:
    """``(step(), None)``, or ``(None, what went wrong)`` when the plugin's code raised or exited."""
    try:
        return step(), None
    except SystemExit as exc:
        return None, f"SystemExit: the plugin called sys.exit({exc.code!r})"
    except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, never fatal
        return None, f"{type(exc).__name__}: {exc}"
