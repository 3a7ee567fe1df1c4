"""Streaming metrics: chunk by chunk over a memory-mapped dump gives the whole-tensor values, in bounded memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from advisor.tensors import metrics as m
from advisor.tensors.lineage import load_dump

RNG = np.random.default_rng(7)


def relu_pair(size: int) -> tuple[np.ndarray, np.ndarray]:
    """An FP16 target against its float32 golden after a ReLU: zeros (left out of the relative
    errors), small noise, one large value."""
    golden = np.maximum(RNG.standard_normal(size).astype(np.float32) * 3, 0)
    golden[size // 3] = 900.0
    target = (golden + 1e-3 * RNG.standard_normal(size)).astype(np.float16)
    return target, golden


def assert_same(a: m.TensorComparison, b: m.TensorComparison, rel: float) -> None:
    for name in a.values:
        x, y = a.values[name], b.values[name]
        assert (np.isnan(x) and np.isnan(y)) or x == pytest.approx(y, rel=rel, abs=1e-12), name
    assert a.standard_deviation == b.standard_deviation
    assert a.fail_reasons == b.fail_reasons


@pytest.mark.parametrize("chunk", [1, 7, 1000, 4096])
def test_chunked_results_agree_with_the_whole_tensor(chunk):
    target, golden = relu_pair(20_011)
    whole = m.compare_tensors(target, golden, chunk=1 << 20)
    assert_same(m.compare_tensors(target, golden, chunk=chunk), whole, rel=1e-9)


def test_whole_tensor_values_match_the_definitions_in_float64():
    target, golden = relu_pair(50_000)
    x, y = target.astype(np.float64), golden.astype(np.float64)
    values = m.compare_tensors(target, golden).values
    keep = np.abs(y) > m.RELATIVE_EPS
    relative = np.abs(x - y)[keep] / np.abs(y)[keep]
    assert values["CosineSimilarity"] == pytest.approx(np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y), rel=1e-12)
    assert values["RelativeEuclideanDistance"] == pytest.approx(np.linalg.norm(x - y) / np.linalg.norm(y), rel=1e-9)
    assert values["MaxAbsoluteError"] == np.max(np.abs(x - y))
    assert values["MeanAbsoluteError"] == pytest.approx(np.mean(np.abs(x - y)), rel=1e-12)
    assert values["RootMeanSquareError"] == pytest.approx(np.sqrt(np.mean((x - y) ** 2)), rel=1e-9)
    assert values["AccumulatedRelativeError"] == pytest.approx(relative.sum(), rel=1e-12)
    assert values["MaxRelativeError"] == relative.max()
    assert values["MeanRelativeError"] == pytest.approx(relative.mean(), rel=1e-12)


def test_a_nan_in_a_later_chunk_gives_the_same_row_as_the_whole_tensor():
    target, golden = relu_pair(10_000)
    target = target.copy()
    target[9_500] = np.inf
    golden = golden.copy()
    golden[8_000] = np.nan
    whole, chunked = m.compare_tensors(target, golden, chunk=1 << 20), m.compare_tensors(target, golden, chunk=1024)
    assert_same(chunked, whole, rel=1e-9)
    for name in ("CosineSimilarity", "RelativeEuclideanDistance", "KullbackLeiblerDivergence"):
        assert np.isnan(whole.values[name])
    assert whole.fail_reasons == ["NPU data contains NaN or inf", "golden data contains NaN or inf"]


def test_cosine_zero_norm_rules_follow_msaccucmp():
    tiny = np.full(8, 1e-20)
    assert m.cosine_similarity(tiny, -tiny) == 1.0            # both norms below the float64 epsilon
    zero = m.compare_tensors(np.zeros(8), np.arange(8.0))
    assert np.isnan(zero.values["CosineSimilarity"])
    assert zero.fail_reasons == ["cannot compare by cosine similarity: all NPU data is zero"]
    golden_zero = m.compare_tensors(np.arange(8.0), np.zeros(8))
    assert golden_zero.fail_reasons == ["cannot compare by cosine similarity: all golden data is zero"]
    assert np.isnan(golden_zero.values["RelativeEuclideanDistance"])


def test_empty_tensors_give_nan_everywhere():
    result = m.compare_tensors(np.zeros(0, np.float16), np.zeros(0, np.float32))
    assert all(np.isnan(v) for v in result.values.values())
    assert result.standard_deviation == "(NaN;NaN),(NaN;NaN)"


def test_a_memory_mapped_pair_is_compared_in_bounded_memory(tmp_path):
    size = 6_000_000                                   # 24 MB per side in float32
    golden = np.lib.format.open_memmap(tmp_path / "g.npy", mode="w+", dtype=np.float32, shape=(size,))
    target = np.lib.format.open_memmap(tmp_path / "t.npy", mode="w+", dtype=np.float32, shape=(size,))
    for part in range(0, size, 1 << 20):
        block = RNG.standard_normal(min(1 << 20, size - part)).astype(np.float32)
        golden[part:part + block.size] = block
        target[part:part + block.size] = block * 1.001
    golden.flush()
    target.flush()
    del golden, target
    # Once per process, not per tensor: numba's first dispatch on read-only (memory-mapped) chunks,
    # when an earlier test loaded it (tensors/kernel.py).
    m.compare_tensors(load_dump(tmp_path / "t.npy")[:1 << 16], load_dump(tmp_path / "g.npy")[:1 << 16])
    tracemalloc.start()
    try:
        result = m.compare_tensors(load_dump(tmp_path / "t.npy"), load_dump(tmp_path / "g.npy"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2 ** 20                          # a few chunks of scratch, not the 48 MB pair
    assert result.values["RelativeEuclideanDistance"] == pytest.approx(0.001, rel=1e-4)
    assert result.values["CosineSimilarity"] == pytest.approx(1.0, abs=1e-9)


def test_kl_keeps_its_digits_on_a_range_far_from_zero():
    # values 1000..1001: normalising as x/range - low/range in float32 would lose 4 digits
    golden = 1000 + RNG.random(30_000)
    target = golden + 1e-4 * RNG.standard_normal(golden.size)
    shifted = m.kl_divergence(target, golden)
    assert shifted == pytest.approx(m.kl_divergence(target - 1000, golden - 1000), rel=1e-4, abs=1e-9)
