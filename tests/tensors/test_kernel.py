"""The compiled pass (advisor/tensors/kernel.py) gives the numbers of the numpy pass it replaces.

Every case runs the same pair twice, ``compiled=True`` and ``compiled=False`` (the numpy pass of
running.py, the reference), and compares every running sum, every metric value and the CSV cells
msaccucmp users read.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from advisor.compare.msaccucmp_csv import cells_of
from advisor.tensors import kernel
from advisor.tensors import metrics as m
from advisor.tensors.npyfile import NpyFile
from advisor.tensors.running import KL_FLOOR, PairSums, file_sums, pair_sums

RNG = np.random.default_rng(11)
SIZE = 100_003          # more than kernel.MIN_ELEMENTS and three chunks, with a ragged last one

SUMS = ("n", "xy", "xx", "yy", "sum_x", "sum_y", "dd", "abs_sum", "abs_max", "rel_sum", "rel_max", "rel_count",
        "kl_s", "kl_a", "kl_b")


def relu_fp16(size: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    """An FP16 target against its float32 golden after a ReLU (a third zeros), one large value."""
    golden = np.maximum(RNG.standard_normal(size).astype(np.float32) * 3, 0)
    golden[size // 3] = 900.0
    return (golden + 1e-3 * RNG.standard_normal(size)).astype(np.float16), golden


def cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    normal = RNG.standard_normal(SIZE)
    far = 1000 + RNG.random(SIZE)
    constant = np.full(SIZE, 2.5, np.float32)
    return {
        "fp16 target, fp32 golden after ReLU": relu_fp16(),
        "fp32 both, drifted": (normal.astype(np.float32) * 1.01, normal.astype(np.float32)),
        "float64 golden": (normal.astype(np.float32), normal),
        "int32 both": (RNG.integers(-50, 50, SIZE, dtype=np.int32), RNG.integers(-50, 50, SIZE, dtype=np.int32)),
        "uint8 target, fp32 golden": (RNG.integers(0, 255, SIZE, dtype=np.uint8),
                                      RNG.uniform(0, 255, SIZE).astype(np.float32)),
        "range far from zero": (far + 1e-4 * RNG.standard_normal(SIZE), far),
        "all-zero target": (np.zeros(SIZE, np.float16), normal.astype(np.float32)),
        "all-zero golden": (normal.astype(np.float32), np.zeros(SIZE, np.float32)),
        "both all zero": (np.zeros(SIZE, np.float16), np.zeros(SIZE, np.float32)),
        "constant sides": (constant, constant * 2),
        "tiny values, below the relative eps": (normal * 1e-9, normal * 1e-9 + 1e-12),
        "inf in the fp16 target": (np.where(np.arange(SIZE) == 9, np.inf, normal).astype(np.float16), normal),
        "fp16 subnormals and extremes": (np.array([6e-8, -6e-8, 65504, -65504, 0, 1e-5] * (SIZE // 6),
                                                  np.float16), RNG.standard_normal(SIZE // 6 * 6)),
    }


def assert_same_sums(compiled: PairSums, reference: PairSums) -> None:
    for name in SUMS:
        got, want = getattr(compiled, name), getattr(reference, name)
        if np.isnan(want):
            assert np.isnan(got), name
        else:
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12 * max(1.0, abs(reference.kl_a))), name


@pytest.mark.parametrize("name", list(cases()))
@pytest.mark.parametrize("chunk", [1 << 15, 1000])
def test_compiled_pass_gives_the_numbers_of_the_numpy_pass(name, chunk):
    target, golden = cases()[name]
    compiled = pair_sums(target, golden, chunk, compiled=True)
    reference = pair_sums(target, golden, chunk, compiled=False)
    assert_same_sums(compiled, reference)
    assert_same_cells(cells_of(m.comparison_of(compiled)).cells, cells_of(m.comparison_of(reference)).cells)


def assert_same_cells(got: tuple[str, ...], want: tuple[str, ...]) -> None:
    """The same text, but for the digits of a number printed beyond float64 precision (an
    AccumulatedRelativeError of 1e10 has 16 digits: the order of its additions shows in the last)."""
    for a, b in zip(got, want, strict=True):
        if a != b:
            assert float(a) == pytest.approx(float(b), rel=1e-14), (a, b)


def test_nan_and_inf_pairs_take_the_numpy_rules_whatever_the_size():
    target, golden = relu_fp16()
    target[5] = np.inf
    golden[70_000] = np.nan
    compiled, reference = pair_sums(target, golden, compiled=True), pair_sums(target, golden, compiled=False)
    assert_same_sums(compiled, reference)
    result = m.comparison_of(compiled)
    assert np.isnan(result.values["MaxAbsoluteError"])             # a NaN wins, as np.max lets it
    assert np.isnan(result.values["CosineSimilarity"])
    assert result.fail_reasons == ["NPU data contains NaN or inf", "golden data contains NaN or inf"]


def test_huge_float64_values_are_left_to_the_numpy_pass():
    golden = RNG.standard_normal(SIZE) * 1e200          # their squares overflow: IEEE rules apply
    compiled, reference = pair_sums(golden * 1.5, golden, compiled=True), pair_sums(golden * 1.5, golden,
                                                                                    compiled=False)
    assert_same_sums(compiled, reference)
    assert np.isinf(compiled.xx)


def test_a_range_narrower_than_float64_can_scale_stays_on_the_numpy_pass():
    tiny = np.where(np.arange(SIZE) % 2 == 0, 0.0, 5e-324)      # 1 / (high - low) is inf
    assert not kernel.moderate((0.0, 5e-324))
    assert_same_sums(pair_sums(tiny, tiny[::-1].copy(), compiled=True), pair_sums(tiny, tiny[::-1].copy(),
                                                                                  compiled=False))


def test_empty_and_mismatched_pairs():
    empty = m.comparison_of(pair_sums(np.zeros(0, np.float16), np.zeros(0, np.float32), compiled=True))
    assert all(np.isnan(v) for v in empty.values.values())
    mismatch = m.compare_tensors(np.zeros(SIZE, np.float16), np.zeros(SIZE + 1, np.float32))
    assert mismatch.fail_reasons == [f"shape mismatch: {SIZE} vs {SIZE + 1} elements"]


def test_kl_terms_are_the_numpy_float32_terms_bit_for_bit():
    """The normalised sides and their ratio, element by element, as running.py's numpy pass makes them."""
    target, golden = relu_fp16(4096)
    x, y = target.astype(np.float64), golden.astype(np.float64)
    (x_low, x_high), (y_low, y_high) = (x.min(), x.max()), (y.min(), y.max())
    a = np.maximum(((x - x_low) * (1.0 / (x_high - x_low))).astype(np.float32), np.float32(KL_FLOOR))
    b = np.maximum(((y - y_low) * (1.0 / (y_high - y_low))).astype(np.float32), np.float32(KL_FLOOR))
    chunk = 1000                    # several chunks, a ragged last one: each filled in its place
    ad, rel = np.empty(chunk), np.empty(chunk)
    a_out, ratio = np.empty(x.size, np.float32), np.empty(x.size, np.float32)
    chunks = -(-x.size // chunk)
    kernel.compiled()["sums"](x, y, chunk, x_low, 1.0 / (x_high - x_low), y_low, 1.0 / (y_high - y_low),
                              m.RELATIVE_EPS, KL_FLOOR, ad, ad.view(np.int64), rel, rel.view(np.int64), a_out, ratio,
                              np.empty((chunks, 11)), np.empty(chunks, np.int64), np.empty((chunks, 2), np.int64))
    assert np.array_equal(a_out, a)
    assert np.array_equal(ratio, a / b)
    assert np.array_equal(ad[:x.size - (chunks - 1) * chunk], np.abs(x - y)[(chunks - 1) * chunk:])


def test_float16_is_widened_exactly():
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    widened = kernel.widen(every, "x")
    assert np.array_equal(widened.view(np.uint32), every.astype(np.float32).view(np.uint32))    # NaN payloads too


def test_dump_files_give_the_numbers_of_the_arrays(tmp_path):
    target, golden = relu_fp16()
    np.save(tmp_path / "t.npy", target)
    np.save(tmp_path / "g.npy", golden)
    with NpyFile.open(tmp_path / "t.npy") as target_file, NpyFile.open(tmp_path / "g.npy") as golden_file:
        from_files = file_sums(target_file, golden_file, chunk=4096)
    assert_same_sums(from_files, pair_sums(target, golden, compiled=False))


def test_the_compiled_code_is_cached_where_numba_cache_dir_says(tmp_path):
    """With the package folder read-only a user points NUMBA_CACHE_DIR at a writable one: the first
    process writes the machine code there, the next one loads it (and writes nothing)."""
    script = ("import numpy as np; from advisor.tensors.running import pair_sums; x = np.ones(70000, 'f2'); "
              "print(pair_sums(x, x.astype('f4'), compiled=True).xy)")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}

    def run() -> str:
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True).stdout

    assert float(run()) == 70000.0
    written = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*.nb*")}
    assert any(path.suffix == ".nbc" for path in written), "no machine code cached"
    assert float(run()) == 70000.0
    assert {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*.nb*")} == written


@pytest.mark.parametrize("value, flag", [(65504.0, True), (-np.inf, True), (65472.0, False), (np.nan, False)])
def test_fp16_overflow_flag_of_a_large_tensor(value, flag):
    values = RNG.standard_normal(SIZE).astype(np.float16)
    values[SIZE - 2] = value
    assert kernel.fp16_overflows(values) is flag
    magnitude = values.view(np.uint16) & np.uint16(0x7FFF)        # the numpy test of dtypes.py
    assert bool(np.any((magnitude >= 0x7BFF) & (magnitude <= 0x7C00))) is flag
