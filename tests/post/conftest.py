"""The committed post-processing scenarios (tests/data/post, written by benchmarks/scenarios/post.py
from a real detector's raw outputs on real pages) and a helper that runs ``advisor post`` on one."""

from __future__ import annotations

from pathlib import Path

import yaml

from advisor.diagnosis import Diagnosis
from advisor.pipeline_post import PostOptions, analyse_post
from tests.conftest import REPO

POST = REPO / "tests" / "data" / "post"
LABELS: dict[str, dict] = yaml.safe_load((POST / "labels.yaml").read_text(encoding="utf-8"))


def golden_of(name: str) -> Path:
    """The scenario's own golden file when it has one (the COCO numbering scenario), else the shared one."""
    own = POST / name / "golden.json"
    return own if own.is_file() else POST / "golden.json"


def analyse(name: str, sizes: bool = True, annotations: bool = True, **options) -> Diagnosis:
    return analyse_post(PostOptions(golden=golden_of(name), target=POST / name / "target.json",
                                    annotations=POST / "annotations.json" if annotations else None,
                                    images_info=POST / "images.json" if sizes else None, plugins=False, **options))


def fired(diagnosis: Diagnosis, rule: str):
    return [f for f in diagnosis.findings if f.rule == rule]
