"""The compare workers' BLAS: one thread while pairs are compared, the user's setting back after, and
the loaded OpenBLAS found once per set of imported modules (not on every run)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from advisor.compare import tuning


def threads() -> list[int]:
    return [int(getter()) for _, getter in tuning._blas_controls() if getter is not None]


def test_one_blas_thread_inside_and_the_setting_restored_after():
    np.dot(np.ones(4), np.ones(4))                       # numpy's OpenBLAS loaded
    if not threads():
        pytest.skip("no OpenBLAS loaded in this process")
    initial = threads()
    tuning.set_blas_threads(2)
    try:
        before = threads()
        with tuning.single_threaded_blas():
            assert threads() == [1] * len(before)
        assert threads() == before
    finally:
        tuning.set_blas_threads(max(initial))


def test_the_libraries_are_looked_up_again_only_after_an_import(monkeypatch):
    calls = []
    original = tuning._openblas_libraries
    monkeypatch.setattr(tuning, "_openblas_libraries", lambda: calls.append(1) or original())
    monkeypatch.setattr(tuning, "_FOUND", None)
    tuning.set_blas_threads(1)
    tuning.set_blas_threads(1)
    assert len(calls) == 1
    monkeypatch.setitem(sys.modules, "advisor_test_brings_a_blas", types.ModuleType("advisor_test_brings_a_blas"))
    tuning.set_blas_threads(1)
    assert len(calls) == 2
