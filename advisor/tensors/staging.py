"""Dumps that are not ``.npy`` files, extracted into ``.npy`` dumps the rest of advisor reads.

A side given to ``advisor compare`` or ``--dumps`` may hold, instead of ``.npy`` dumps:

==================  ===========================================  ==========================================
what                recognised by                                becomes (naming, dump_names.py)
==================  ===========================================  ==========================================
raw Ascend dumps    ``{op_type}.{op}.{task}.{stream}.{ts}`` and  ``npu``: ``{file}.{input|output}.{n}.npy``,
                    a DumpData header (ascend_raw.py)            what msaccucmp's ``convert`` writes
PyTorch 1.5 .h5     the HDF5 signature (torch_h5.py)             ``aten``: ``{ir}.{seq}.{io}.{arg}.npy``
tfdbg dump folder   ``_tfdbg_device_*/...{slot}_DebugIdentity_*``  ``golden``: ``{op}.{slot}.{ts}.npy``
==================  ===========================================  ==========================================

``Opdebug.Node_OpDebug.*`` overflow records are no tensors: they are left for ``advisor run``
(opdebug.py). The extracted files live in advisor's cache (``<cache>/dumps/<digest>``, the digest of
the sources' paths, sizes and modification times, so a changed dump is extracted again and an
interrupted ``compare`` resumes on the same files); with the cache off, in a temporary folder
removed when the process ends. A folder that already holds ``.npy`` dumps is read as it is.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import cachefiles
from ..errors import InputFormatError
from ..filekind import HDF5_MAGIC, looks_like_raw_dump
from ..inputfiles import listed, open_input
from .ascend_raw import parse_raw_name, read_raw_dump
from .tfdbg import is_dump_file, read_tfdbg_file
from .torch_h5 import read_h5_dump

VERSION = 1


@dataclass
class Sources:
    """The files under a side's root that are extracted, by kind."""

    raw: list[Path] = field(default_factory=list)
    h5: list[Path] = field(default_factory=list)
    tfdbg: list[Path] = field(default_factory=list)
    records: list[Path] = field(default_factory=list)     # Opdebug overflow records (not tensors)

    def __bool__(self) -> bool:
        return bool(self.raw or self.h5 or self.tfdbg)

    def all(self) -> list[Path]:
        return [*self.raw, *self.h5, *self.tfdbg]


@dataclass(frozen=True)
class Staged:
    root: Path                    # the folder of extracted .npy dumps
    notes: tuple[str, ...]        # what was extracted, and what was kept in the stored layout


def find_sources(root: Path) -> Sources:
    """What under ``root`` (a folder, or one file) advisor extracts."""
    found = Sources()
    for path in [root] if root.is_file() else [p for p in listed(root.rglob("*"), root, "dumps") if p.is_file()]:
        if path.suffix == ".npy":
            continue
        name = parse_raw_name(path.name)
        if name is not None and name.is_overflow_record:
            found.records.append(path)
        elif is_dump_file(path):
            found.tfdbg.append(path)
        else:
            head = _head(path)
            if head.startswith(HDF5_MAGIC):
                found.h5.append(path)
            elif name is not None and looks_like_raw_dump(head, path.stat().st_size):
                found.raw.append(path)
    return found


def stage(root: Path, sources: Sources) -> Staged:
    """The extracted folder of ``sources`` (found under ``root``), made now or found in the cache."""
    target = _target(root, sources)
    notes_file = target / ".advisor-staged"
    if notes_file.is_file():
        return Staged(target, tuple(notes_file.read_text(encoding="utf-8").splitlines()))
    partial = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        notes = _extract(root, sources, partial)
        (partial / ".advisor-staged").write_text("\n".join(notes), encoding="utf-8")
        try:
            os.replace(partial, target)
        except OSError:       # another process staged the same sources first: use theirs
            shutil.rmtree(partial, ignore_errors=True)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Staged(target, tuple(notes))


def _head(path: Path) -> bytes:
    try:
        with open_input(path) as handle:
            return handle.read(64)
    except (OSError, InputFormatError):
        return b""


def _target(root: Path, sources: Sources) -> Path:
    digest = hashlib.sha256(f"v{VERSION}|{root.resolve()}".encode())
    for path in sources.all():
        stat = path.stat()
        digest.update(f"|{path}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    base = cachefiles.folder("dumps")             # a cache of the user's own, or none (advisor/cachefiles.py)
    if base is not None:
        try:
            base.mkdir(parents=True, exist_ok=True)
            return base / digest.hexdigest()[:32]
        except OSError:
            pass
    temporary = Path(tempfile.mkdtemp(prefix="advisor-dumps-"))
    atexit.register(shutil.rmtree, temporary, ignore_errors=True)
    return temporary / digest.hexdigest()[:32]


def _relative_dir(path: Path, root: Path) -> Path:
    return path.parent.relative_to(root) if root.is_dir() else Path()


def _extract(root: Path, sources: Sources, out: Path) -> list[str]:
    notes: list[str] = []
    for path in sources.raw:
        folder = out / _relative_dir(path, root)
        folder.mkdir(parents=True, exist_ok=True)
        for tensor in read_raw_dump(path).tensors:
            if tensor.note:
                notes.append(f"{path.name} {tensor.io} {tensor.slot}: {tensor.note}")
            np.save(folder / f"{path.name}.{tensor.io}.{tensor.slot}.npy", tensor.values)
    for path in sources.h5:
        folder = out / _relative_dir(path, root) / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        for h5_tensor in read_h5_dump(path):
            np.save(folder / h5_tensor.file_name, h5_tensor.values)
    for path in sources.tfdbg:
        tensor = read_tfdbg_file(path)
        np.save(out / tensor.file_name, tensor.values)
    kinds = [f"{len(files)} {what}" for what, files in (("raw Ascend dumps", sources.raw), (".h5 dumps", sources.h5),
                                                         ("tfdbg dumps", sources.tfdbg)) if files]
    notes.insert(0, f"read {', '.join(kinds)} from {root}")
    if not any(out.rglob("*.npy")):
        raise InputFormatError(f"the {', '.join(kinds)} hold no tensor", path=root)
    return notes
