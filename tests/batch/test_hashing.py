"""What a job's content hash covers (and what it does not)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from advisor.batch.hashing import ConfigHasher, file_digest, input_digests, job_hash, listing_digest
from advisor.batch.jobs import Job
from advisor.errors import InputFormatError
from tests.conftest import REPO

from .conftest import CLEAN, PROBLEM


def _hash(job: Job, hasher: ConfigHasher) -> str:
    return job_hash(hasher.config_digest(job, hasher.pack_digests(job)), input_digests(job))


@pytest.fixture
def job(tmp_path: Path) -> Job:
    shutil.copyfile(CLEAN, tmp_path / "result.csv")
    return Job(name="resnet", input=tmp_path / "result.csv", outdir=tmp_path / "out")


def test_file_digest_streams_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    data = os.urandom(3 * 2**20 + 17)
    path.write_bytes(data)
    assert file_digest(path) == hashlib.sha256(data).hexdigest()
    with pytest.raises(InputFormatError, match="file not found"):
        file_digest(tmp_path / "nowhere")


def test_input_bytes_change_the_hash_a_touch_does_not(job: Job) -> None:
    hasher = ConfigHasher()
    first = _hash(job, hasher)
    os.utime(job.input, (1, 1))
    assert _hash(job, hasher) == first
    shutil.copyfile(PROBLEM, job.input)
    assert _hash(job, hasher) != first


def test_options_and_report_settings_change_the_hash(job: Job) -> None:
    hasher = ConfigHasher()
    first = _hash(job, hasher)
    for change in ({"thresholds": ("cosine=0.9",)}, {"params": ("problem-node.min_confidence=0.5",)},
                   {"disable": ("problem-node",)}, {"lang": "zh"}, {"formats": ("json",)},
                   {"outdir": job.outdir / "elsewhere"}, {"builtin_rules": False}):
        assert _hash(dataclasses.replace(job, **change), hasher) != first, change
    assert _hash(dataclasses.replace(job, line=99), hasher) == first


def test_every_yaml_file_of_a_rule_pack_is_hashed(job: Job, tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(REPO / "rules" / "core", pack)
    job = dataclasses.replace(job, rule_packs=(pack,), builtin_rules=False)
    first = _hash(job, ConfigHasher())
    rule = next(pack.rglob("problem-node.yaml"))
    rule.write_text(rule.read_text(encoding="utf-8") + "\n# reviewed\n", encoding="utf-8")
    assert _hash(job, ConfigHasher()) != first


def test_dump_folders_are_fingerprinted_by_listing(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.npy").write_bytes(b"1")
    first = listing_digest(tmp_path / "d")
    (tmp_path / "d" / "b.npy").write_bytes(b"2")
    assert listing_digest(tmp_path / "d") != first
    with pytest.raises(InputFormatError, match="dump folder not found"):
        listing_digest(tmp_path / "missing")
