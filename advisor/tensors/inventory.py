"""What a dump folder holds, read from file names and ``.npy`` headers only (no tensor data).

A side of a comparison (golden or target) is one folder, searched recursively: Ascend tools nest
dumps under time/device/model/step folders. Each ``.npy`` file's header gives its shape and dtype
in microseconds, so a folder of a million dumps is inventoried without reading a tensor.
"""

from __future__ import annotations

import io
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputFormatError
from ..filekind import sniff
from ..inputfiles import listed, open_input_fd, read_input
from ..nesting import loads_json
from .dump_names import NAMINGS, DumpName, parse_dump_name
from .npyfile import dtype_name
from .npyfile import read_header_at as read_npy_header

MAX_ORDER_BYTES = 1 << 30     # an msprobe dump.json read for the call order


@dataclass(frozen=True)
class DumpFile:
    """One dumped tensor: where it is, what its name says, and its header."""

    path: Path
    name: DumpName
    shape: tuple[int, ...]
    dtype: str                      # numpy dtype name: float32, float16, int64...
    nbytes: int
    stamp: tuple[int, int] | None = field(default=None, compare=False)  # (file size, mtime in ns) as scanned

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass
class DumpFolder:
    """The dump files of one side, in dump order, with what could not be used."""

    root: Path
    naming: str                                       # the scheme most files follow
    files: list[DumpFile]
    skipped: list[str] = field(default_factory=list)  # why files were left out (one line each)
    notes: list[str] = field(default_factory=list)    # what was extracted from non-.npy dumps (staging.py)

    def by_key(self) -> dict[tuple[str, str, str], DumpFile]:
        """(op, io, slot) -> file; the first dump wins when an op was dumped several times."""
        table: dict[tuple[str, str, str], DumpFile] = {}
        for dump in self.files:
            table.setdefault(dump.name.tensor_key, dump)
        return table


def read_header(path: Path) -> tuple[tuple[int, ...], str, int]:
    """Shape, dtype name and data size of an ``.npy`` file, from its header alone."""
    return _scanned(path)[:3]


def _scanned(path: Path) -> tuple[tuple[int, ...], str, int, tuple[int, int]]:
    """:func:`read_header` and the file's (size, modification time in ns), from the descriptor read
    (the resume journal's signature: compare/journal.py)."""
    try:
        with io.FileIO(open_input_fd(path), "rb") as file:
            found = os.fstat(file.fileno())
            shape, _, dtype, _ = read_npy_header(file)
    except (OSError, ValueError, EOFError) as exc:
        kind = sniff(path, comparison_format) if path.is_file() else None
        if kind is not None and not kind.is_a("npy"):
            raise InputFormatError(f"is {kind.description}, not an .npy dump", path=path) from None
        raise InputFormatError(f"not a readable .npy file ({exc})", path=path) from None
    if dtype.hasobject:
        raise InputFormatError("holds Python objects, not a tensor", path=path)
    return shape, dtype_name(dtype), math.prod(shape) * dtype.itemsize, (found.st_size, found.st_mtime_ns)


def scan_folder(root: Path, side: str) -> DumpFolder:
    """Every ``.npy`` dump under ``root`` that follows a known naming, in dump order.

    ``side`` ("golden" or "target") only names the folder in errors. Files of a minority naming
    are skipped with a note (a stray golden file in a target folder must not become a row). A
    folder without ``.npy`` dumps, or a file, holding raw Ascend dumps, PyTorch 1.5 ``.h5`` dumps or
    a tfdbg dump is read through its extracted ``.npy`` files (staging.py).
    """
    root = Path(root)
    if not root.exists():
        raise InputFormatError(f"{side} dump folder not found", path=root)
    parsed: list[tuple[Path, DumpName]] = []
    skipped: list[str] = []
    for path in listed(root.rglob("*.npy"), root, "dumps") if root.is_dir() else []:
        name = parse_dump_name(path.name)
        if name is None:
            skipped.append(f"{path.name}: name follows no known dump naming")
        else:
            parsed.append((path, name))
    if not parsed:
        return _staged(root, side)
    naming = Counter(name.naming for _, name in parsed).most_common(1)[0][0]
    files = []
    for path, name in parsed:
        if name.naming != naming:
            skipped.append(f"{path.name}: {name.naming} naming in a folder of {naming} dumps")
            continue
        files.append(DumpFile(path, name, *_scanned(path)))
    files = _dump_order(files, root)
    return DumpFolder(root, naming, files, skipped)


def _staged(root: Path, side: str) -> DumpFolder:
    """The dumps of a folder without .npy dumps (or of one file), extracted by staging.py."""
    from .staging import find_sources, stage

    sources = find_sources(root)
    if sources:
        staged = stage(root, sources)
        folder = scan_folder(staged.root, side)
        folder.notes.extend(staged.notes)
        return folder
    if root.is_file():
        kind = sniff(root, comparison_format)
        raise InputFormatError(f"is {kind.description}, not a {side} dump folder or dump file", path=root)
    if sources.records:
        raise InputFormatError(f"holds {len(sources.records)} hardware overflow records (Opdebug) and no tensor "
                               "dumps: give them beside a comparison with advisor run RESULT.csv --overflow "
                               f"{root}", path=root)
    raise InputFormatError(f"no {side} dumps found: expected .npy files named like "
                           "Conv2D.conv1.5.0.1714987410000641.output.0.npy (NPU), "
                           "conv1.0.1714987110000066.npy (TF golden) or "
                           "Functional.conv2d.0.forward.output.0.npy (msprobe), raw Ascend dumps "
                           "(Conv2D.conv1.5.0.1714987410000641), PyTorch 1.5 .h5 dumps or a tfdbg dump folder",
                           path=root)


def _dump_order(files: list[DumpFile], root: Path) -> list[DumpFile]:
    """Execution order: timestamps (then task ids) where names carry them; for msprobe, the order
    of ``dump.json`` when one is found, else file modification times."""
    if files and files[0].name.naming != "msprobe":
        return sorted(files, key=lambda f: (f.name.timestamp or 0, f.name.task_id or 0,
                                            f.name.io != "input", _slot_order(f.name.slot)))
    order = _msprobe_order(root)
    if order:
        rank = {name: i for i, name in enumerate(order)}
        return sorted(files, key=lambda f: (rank.get(f.name.op, len(rank)), f.name.io != "input",
                                            _slot_order(f.name.slot)))
    first_seen: dict[str, int] = {}
    for f in sorted(files, key=lambda f: (f.path.stat().st_mtime_ns, f.path.name)):
        first_seen.setdefault(f.name.op, len(first_seen))
    return sorted(files, key=lambda f: (first_seen[f.name.op], f.name.io != "input", _slot_order(f.name.slot)))


def _slot_order(slot: str) -> tuple:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in slot.split("."))


def _msprobe_order(root: Path) -> list[str]:
    """API names in call order from msprobe's ``dump.json`` (``data`` keys), if there is one."""
    for candidate in (root / "dump.json", root.parent / "dump.json"):
        if candidate.is_file():
            try:
                text = read_input(candidate, max_bytes=MAX_ORDER_BYTES).decode("utf-8")
                data = loads_json(text, candidate, InputFormatError).get("data", {})
            except (OSError, ValueError, AttributeError, InputFormatError):
                return []
            return list(data) if isinstance(data, dict) else []
    return []


__all__ = ["NAMINGS", "DumpFile", "DumpFolder", "read_header", "scan_folder"]


def comparison_format(header: list[str]) -> str | None:
    """The comparison format of a CSV header (the readers load only when a CSV must be named)."""
    from ..ingest import detect_format
    return detect_format(header)
