"""An ONNX model's external weights (``location`` / ``offset`` / ``length`` beside the model), read through
advisor's one file-opening path instead of onnx's loader.

onnx refuses a location that is absolute, climbs out with ``..`` or is a symbolic link by raising its own
error (which advisor did not expect: exit 3), and opens whatever else the location names, a FIFO
included (which blocks forever). Here a location must be a relative path inside the model's folder,
reach a regular file there without a link, and lie within that file; anything else is refused with one
line naming the model, the initializer and the location (exit 2). A location that names no file is only
a warning, as before: the weights then have no statistics.

Tensors left external are never handed to ``numpy_helper.to_array``, which would look for the file
relative to the current folder.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from advisor.errors import InputFormatError
from advisor.inputfiles import open_input


def is_external(tensor: Any) -> bool:
    """Whether the tensor's values live in an external file (onnx's EXTERNAL data location)."""
    return getattr(tensor, "data_location", 0) == 1 and any(e.key == "location" for e in tensor.external_data)


def load_external(tensors: list[Any], model: Path) -> list[str]:
    """Fill the external tensors' ``raw_data`` from their files; returns warnings for files that are
    missing or cut short (those tensors stay external). A location outside the model's folder, a link
    or a special file is an InputFormatError."""
    missing: list[str] = []
    for tensor in tensors:
        if not is_external(tensor):
            continue
        info = {entry.key: entry.value for entry in tensor.external_data}
        file = _inside(model, tensor.name, info.get("location", ""))
        if not os.path.lexists(file):
            missing.append(tensor.name)
            continue
        with open_input(file, what="weight file") as handle:
            size = os.fstat(handle.fileno()).st_size
            offset, length = _span(info, size)
            if offset is None:
                missing.append(tensor.name)
                continue
            handle.seek(offset)
            data = handle.read(length)
        tensor.raw_data = data
        del tensor.external_data[:]
        tensor.data_location = 0
    if not missing:
        return []
    return [f"external weight data not loaded for {len(missing)} initializer(s), e.g. '{missing[0]}' (file missing "
            "or shorter than the model says): those weights have no statistics"]


def _inside(model: Path, name: str, location: str) -> Path:
    """The file ``location`` names, if it is a relative path to a file inside the model's folder
    reached without a link; else an InputFormatError naming what was refused."""
    relative = PurePosixPath(location.replace("\\", "/"))
    folder = model.parent
    refused = None
    if not location or relative.is_absolute() or Path(location).is_absolute() or ":" in relative.parts[0]:
        refused = "an absolute path"
    elif ".." in relative.parts:
        refused = "a path out of the model's folder"
    else:
        file = folder.joinpath(*relative.parts)
        for step in [folder.joinpath(*relative.parts[:i]) for i in range(1, len(relative.parts) + 1)]:
            if step.is_symlink():
                refused = "a symbolic link"
                break
        else:
            return file
    raise InputFormatError(f"ONNX external data refused: initializer '{name[:100]}' keeps its values at "
                           f"'{location[:200]}', {refused}; external data must be a file inside the model's "
                           "folder (as onnx requires)", path=model)


def _span(info: dict[str, str], size: int) -> tuple[int | None, int]:
    """(offset, length) of the tensor's bytes in a file of ``size`` bytes; (None, 0) when they do not fit."""
    try:
        offset = int(info.get("offset", 0))
        length = int(info["length"]) if "length" in info else size - offset
    except ValueError:
        return None, 0
    if offset < 0 or length < 0 or offset + length > size:
        return None, 0
    return offset, length
