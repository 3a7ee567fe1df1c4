"""Measurement knobs in knowledge/thresholds.yaml: read, overridden like thresholds, checked."""

from __future__ import annotations

import pytest

from advisor.errors import UsageError
from advisor.facts import thresholds as module
from advisor.facts.thresholds import load_thresholds


@pytest.fixture
def knowledge(tmp_path, monkeypatch):
    folder = tmp_path / "knowledge"
    folder.mkdir()
    (folder / "thresholds.yaml").write_text(
        "default: {cosine: 0.99, relative_euclidean_distance: 0.15, scale: 0.05}\n"
        "knobs:\n  streaks: {clean_ops: 3, level: 0.9998}\n", encoding="utf-8")
    monkeypatch.setattr(module, "data_dir", lambda name: tmp_path / name)
    return folder


def test_knobs_are_read_with_their_types(knowledge):
    loaded = load_thresholds()
    assert loaded.knob("streaks", "clean_ops") == 3 and isinstance(loaded.knob("streaks", "clean_ops"), int)
    assert loaded.knob("streaks", "level") == 0.9998


def test_a_knob_is_overridden_like_a_threshold(knowledge):
    loaded = load_thresholds(["streaks.clean_ops=5", "streaks.level=0.99", "cosine=0.9"])
    assert loaded.knob("streaks", "clean_ops") == 5
    assert loaded.knob("streaks", "level") == 0.99
    assert loaded.for_dtype("float16")["cosine"] == 0.9


@pytest.mark.parametrize("text, message", [
    ("streaks.clean_op=5", "no knob 'clean_op' in 'streaks'"),
    ("streaks.clean_ops=2.5", "takes a whole number"),
    ("streaks.level=abc", "is not a number"),
    ("streaks.level=inf", "must be finite"),
])
def test_bad_knob_overrides_name_the_problem(knowledge, text, message):
    with pytest.raises(UsageError, match=message):
        load_thresholds([text])


def test_the_shipped_knobs_load():
    assert isinstance(load_thresholds().knobs, dict)
