"""One writer per backend: a remedy step -> that tool's files (file name -> text).

Writers return only files that change something; a step a tool has nothing to say about gives no
files for it. ``parse_backends`` is the one parser of backend choices (``advisor run --backend`` and
the ``backends`` project setting).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...errors import UsageError
from ...text import suggest
from ..model import BACKEND_NAMES, BuildContext, RemedyStep, known_setting
from . import ascend, magicmind, onnxruntime, pytorch, tensorrt

Writer = Callable[[RemedyStep, BuildContext], dict[str, str]]

WRITERS: dict[str, Writer] = {
    "ascend": ascend.files,
    "magicmind": magicmind.files,
    "tensorrt": tensorrt.files,
    "onnxruntime": onnxruntime.files,
    "pytorch": pytorch.files,
}
# A quantisation setting as the backend's files write it ((key, value), or None where its files say it in code).
Spelling = Callable[[str, object], "tuple[str, str] | None"]
SPELLINGS: dict[str, Spelling] = {"ascend": ascend.spelling, "magicmind": magicmind.spelling,
                                  "onnxruntime": onnxruntime.spelling}
# The build config's tool -> the backend it builds for (advisor/ingest/build_config.py names the tools).
TOOL_BACKENDS: dict[str, str] = {"atc": "ascend", "magicmind": "magicmind", "tensorrt": "tensorrt",
                                 "trtexec": "tensorrt", "onnxruntime": "onnxruntime", "pytorch": "pytorch"}


def parse_backends(values: Iterable[str], source: str = "--backend") -> tuple[str, ...]:
    """Backend names, comma-separated or one per value, ``all`` for every one -> the chosen backends
    in the canonical order (() when none is given: then they are inferred)."""
    values = list(values)
    chosen: set[str] = set()
    for value in values:
        for part in str(value).split(","):
            name = part.strip().lower()
            if name == "all":
                chosen.update(BACKEND_NAMES)
            elif name in BACKEND_NAMES:
                chosen.add(name)
            elif name:
                raise UsageError(f"{source}: unknown backend '{name}'{suggest(name, list(BACKEND_NAMES))}; choose "
                                 f"from {', '.join(BACKEND_NAMES)} or all")
    if values and not chosen:
        raise UsageError(f"{source}: no backend given; choose from {', '.join(BACKEND_NAMES)} or all")
    return tuple(name for name in BACKEND_NAMES if name in chosen)


def resolve_backends(chosen: tuple[str, ...], tool: str | None) -> tuple[str, ...]:
    """The chosen backends; else the one the build config's tool builds for; else all of them."""
    if chosen:
        return chosen
    inferred = TOOL_BACKENDS.get((tool or "").lower())
    return (inferred,) if inferred else BACKEND_NAMES


def spelt_settings(settings: dict[str, object], backends: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """backend -> knob -> the setting as that backend's files write it ("weight_quant_granularity=per_axis"),
    for the knobs it writes as a key and a value; the remedy's summary quotes these, so it names the keys and
    values of the files beside it."""
    out: dict[str, dict[str, str]] = {}
    for backend in backends:
        spell = SPELLINGS.get(backend)
        if spell is None:
            continue
        spelt = {}
        for knob in settings:
            value = known_setting(settings, knob)
            pair = spell(knob, value) if value is not None else None
            if pair is not None:
                spelt[knob] = f"{pair[0]}={pair[1]}"
        if spelt:
            out[backend] = spelt
    return out


def step_files(step: RemedyStep, context: BuildContext, backends: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """backend -> file name -> text, for the backends that have something to say about ``step``."""
    files = {backend: WRITERS[backend](step, context) for backend in backends}
    return {backend: written for backend, written in files.items() if written}
