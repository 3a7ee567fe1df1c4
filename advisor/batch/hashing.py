"""Content hashes that decide whether a job must run again.

A job's hash covers everything its result depends on:

* the bytes of its input files (streamed: a comparison can be 300 MB), graph and build config;
* the dump folders as a listing of (relative path, size, modification time): tensor dumps can be
  many gigabytes and today's analysis does not read them, so their listing stands for their content
  (rewriting a dump changes its time);
* the rule packs the job loads, built-in, installed and extra: every YAML file of each pack;
* the shipped knowledge (thresholds, op catalogs, advice) and report templates, so a source checkout
  that edits them re-runs jobs without a version bump;
* its options (thresholds, params, disabled rules, language, formats, report folder...) and the
  advisor version.

The parent computes everything but the inputs once per batch (``ConfigHasher``); each worker
hashes its own inputs, so 200 large inputs are hashed in parallel, not in the parent one by one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .. import __version__
from ..engine.loading import builtin_pack_paths, installed_packs
from ..engine.packs import pack_command
from ..errors import InputFormatError
from ..inputfiles import check_input, open_input
from ..resources import data_dir
from .jobs import Job

ALGORITHM = "sha256"
SHIPPED_DATA = ("knowledge", "reports")


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read in chunks (never the whole file in memory)."""
    try:
        with open_input(path) as handle:
            return hashlib.file_digest(handle, ALGORITHM).hexdigest()
    except FileNotFoundError:
        raise InputFormatError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputFormatError("is a folder, expected a file", path=path) from None
    except OSError as exc:
        raise InputFormatError(f"cannot read: {exc.strerror or exc}", path=path) from None


def tree_digest(folder: Path, pattern: str = "*") -> str:
    """sha256 over the relative names and contents of the files under ``folder`` matching ``pattern``."""
    digest = hashlib.new(ALGORITHM)
    for path in sorted(p for p in folder.rglob(pattern) if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        digest.update(file_digest(path).encode("ascii") + b"\n")
    return digest.hexdigest()


def listing_digest(folder: Path) -> str:
    """sha256 over (relative name, size, mtime) of every file under ``folder``: cheap for huge dumps."""
    if not folder.is_dir():
        raise InputFormatError("dump folder not found" if not folder.exists() else "is a file, expected a folder",
                               path=folder)
    digest = hashlib.new(ALGORITHM)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def input_digests(job: Job) -> dict[str, dict[str, str]]:
    """role -> {"path", "digest"} for every input of the job. Runs in the worker."""
    found: dict[str, dict[str, str]] = {}
    for role, path in job.input_paths().items():
        check_input(path, InputFormatError)          # a FIFO or device fails this job, it does not hang it
        if role.startswith("dumps_"):
            value = "listing:" + listing_digest(path)
        elif role == "graph" and path.is_dir():      # GE graph dumps come as folders
            value = "tree:" + tree_digest(path)
        else:
            value = file_digest(path)
        found[role] = {"path": str(path), "digest": value}
    return found


def pack_digest(path: Path) -> str:
    """A pack folder: all its YAML files; a single-file pack: its bytes."""
    if path.is_dir():
        return tree_digest(path, "*.yaml")
    return file_digest(path)


def job_hash(config_digest: str, inputs: dict[str, dict[str, str]]) -> str:
    payload = {"config": config_digest, "inputs": {role: item["digest"] for role, item in sorted(inputs.items())}}
    return _canonical_digest(payload)


class ConfigHasher:
    """The part of a job's hash that does not depend on its inputs, with pack digests cached."""

    def __init__(self, plugins: bool = True) -> None:
        self._packs: dict[Path, str] = {}
        self._shipped = _canonical_digest({name: tree_digest(data_dir(name)) for name in SHIPPED_DATA})
        self._builtin = builtin_pack_paths("run")          # batch jobs are advisor run jobs
        self._installed = [path for _, _, path, _ in installed_packs()
                           if path is not None and pack_command(path) == "run"] if plugins else []

    def pack_sources(self, job: Job) -> list[Path]:
        """The packs ``analyse`` will load for this job, in its order."""
        return [*(self._builtin if job.builtin_rules else []), *self._installed, *job.rule_packs]

    def pack_digests(self, job: Job) -> dict[str, str]:
        """Resolved source path -> content digest, for every pack of the job."""
        return {str(path.resolve()): self._pack(path) for path in self.pack_sources(job)}

    def config_digest(self, job: Job, packs: dict[str, str]) -> str:
        return _canonical_digest({"version": __version__, "shipped": self._shipped, "options": job.options_spec(),
                                  "packs": list(packs.values())})

    def _pack(self, path: Path) -> str:
        key = path.resolve()
        if key not in self._packs:
            self._packs[key] = pack_digest(key)
        return self._packs[key]


def _canonical_digest(payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.new(ALGORITHM, text.encode("utf-8")).hexdigest()


def short(digest: str | None, length: int = 12) -> str:
    return digest[:length] if digest else "—"
