"""The resume journal: what an interrupted ``advisor compare`` already computed.

A JSON-lines file beside the output (``<output>.journal``). The first line identifies the run
(both folders, the graph and a signature of every dump file: name, size, modification time); a
journal whose first line does not match the current run is ignored and replaced, so a resumed run
never mixes results of other dumps. Each further line is one result, appended as soon as it exists
and flushed with the rest of its batch (one write per batch of tensors): a fingerprint (``"print"``)
or the metric cells of a pair (``"pair"``). A line cut short by the interruption is skipped. The
journal is removed once the CSV is written.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, TextIO

from ..errors import UsageError
from ..inputfiles import MAX_SETTINGS_BYTES, read_input
from ..ownfiles import open_owned
from ..tensors.inventory import DumpFolder
from ..tensors.lineage import TensorPrint
from .msaccucmp_csv import PairMetrics

WHAT = "resume journal"
_ENCODER = json.JSONEncoder(ensure_ascii=False)      # one for every line (json.dumps makes one per call)
VERSION = 2   # 2: metrics from running sums (tensors/running.py), KL always floored


def run_signature(golden: DumpFolder, target: DumpFolder, inputs: list[Path], pair_by_shape: bool = False,
                  op_map: Path | None = None) -> str:
    """A digest of everything the results depend on: the dumps, the graphs and maps (``inputs``), the
    pairing options and the op map's content."""
    digest = hashlib.sha256()
    named = "|".join(str(Path(p).resolve()) for p in inputs)
    digest.update(f"v{VERSION}|{named}|{'shape' if pair_by_shape else ''}".encode())
    if op_map is not None:
        digest.update(b"|op-map|" + read_input(op_map, UsageError, max_bytes=MAX_SETTINGS_BYTES, what="op map"))
    for folder in (golden, target):
        digest.update(str(folder.root.resolve()).encode())
        for dump in folder.files:
            size, modified = dump.stamp or _stamp(dump.path)      # the scan's (no second stat per file)
            digest.update(f"|{dump.path.name}:{size}:{modified}".encode())
    return digest.hexdigest()


def _stamp(path: Path) -> tuple[int, int]:
    found = path.stat()
    return found.st_size, found.st_mtime_ns


class Journal:
    """Load what an earlier run saved (when it matches) and append new results."""

    def __init__(self, path: Path, signature: str, resume: bool = True) -> None:
        self.path, self.signature = path, signature
        self.prints: dict[str, TensorPrint] = {}
        self.pairs: dict[str, PairMetrics] = {}
        if resume:
            self._load()
        self._handle: TextIO | None = None

    def _load(self) -> None:
        try:
            fd = open_owned(self.path, os.O_RDONLY, WHAT)
        except FileNotFoundError:
            return
        with os.fdopen(fd, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
        if not lines or _parse(lines[0]).get("signature") != self.signature:
            return
        for line in lines[1:]:
            record = _parse(line)
            try:
                if record.get("kind") == "print":
                    self.prints[record["key"]] = TensorPrint.from_list(record["value"])
                elif record.get("kind") == "pair":
                    self.pairs[record["key"]] = PairMetrics(tuple(record["cells"]), tuple(record["reasons"]))
            except (KeyError, TypeError, ValueError):
                continue                    # a damaged line: its result is computed again

    @property
    def resumed(self) -> int:
        return len(self.prints) + len(self.pairs)

    def open(self) -> None:
        """Start appending (a fresh journal when nothing was resumed)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.resumed
        fd = open_owned(self.path, os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if fresh else os.O_APPEND), WHAT)
        self._handle = os.fdopen(fd, "w", encoding="utf-8")
        if fresh:
            self._write({"signature": self.signature, "version": VERSION})
            self.flush()

    def add_print(self, key: str, value: TensorPrint) -> None:
        self.prints[key] = value
        self._write({"kind": "print", "key": key, "value": value.as_list()})

    def add_pair(self, key: str, value: PairMetrics) -> None:
        self.pairs[key] = value
        self._write({"kind": "pair", "key": key, "cells": list(value.cells), "reasons": list(value.reasons)})

    def _write(self, record: dict[str, Any]) -> None:
        assert self._handle is not None
        self._handle.write(_ENCODER.encode(record) + "\n")

    def flush(self) -> None:
        """Hand what was added to the file (the results of a batch: one write)."""
        if self._handle is not None:
            self._handle.flush()

    def close(self, *, remove: bool) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        if remove:
            self.path.unlink(missing_ok=True)


def _parse(line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):    # a line cut short, or not ours
        return {}
    return record if isinstance(record, dict) else {}
