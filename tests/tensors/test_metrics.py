"""The ten msaccucmp metrics, including the special cases FORMATS.md §1 spells out."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from advisor.tensors import metrics as m


def test_cosine_of_two_all_zero_tensors_is_one():
    assert m.cosine_similarity(np.zeros(5), np.zeros(5)) == 1.0


@pytest.mark.parametrize("npu, golden", [(np.zeros(3), np.arange(3.0)), (np.arange(3.0), np.zeros(3))])
def test_cosine_with_one_all_zero_side_is_nan(npu, golden):
    assert np.isnan(m.cosine_similarity(npu, golden))


def test_cosine_of_scalars_is_one_whatever_their_values():
    assert m.cosine_similarity(np.array(3.0), np.array(-7.0)) == 1.0


def test_cosine_is_clipped_to_one():
    x = np.full(10_000, 0.1, dtype=np.float32)
    assert m.cosine_similarity(x, x) <= 1.0


def test_cosine_of_opposite_vectors_is_minus_one():
    assert m.cosine_similarity(np.array([1.0, 2.0]), np.array([-1.0, -2.0])) == pytest.approx(-1.0)


def test_error_metrics_by_hand():
    x, y = np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 5.0])
    assert m.max_absolute_error(x, y) == 1.0
    assert m.accumulated_relative_error(x, y) == pytest.approx(0 + 1 + 0.2)
    assert m.relative_euclidean_distance(x, y) == pytest.approx(np.sqrt(2 / 27))
    assert m.mean_absolute_error(x, y) == pytest.approx(2 / 3)
    assert m.root_mean_square_error(x, y) == pytest.approx(np.sqrt(2 / 3))
    assert m.max_relative_error(x, y) == pytest.approx(1.0)
    assert m.mean_relative_error(x, y) == pytest.approx(1.2 / 3)


def test_relative_errors_skip_golden_values_at_or_below_eps():
    x, y = np.array([5.0, 2.0]), np.array([0.0, 1.0])
    assert m.accumulated_relative_error(x, y) == pytest.approx(1.0)
    assert m.max_relative_error(x, y) == pytest.approx(1.0)


def test_kl_of_identical_tensors_is_zero():
    x = np.array([0.0, 1.0, 3.0, 2.0])
    assert m.kl_divergence(x, x) == 0.0


def _floored_distribution(v: np.ndarray) -> np.ndarray:
    """msaccucmp 26's KL input, from its definition: min-max into [0, 1] (a constant side kept as
    it is), raised to the float32 epsilon, divided by the sum."""
    span = v.max() - v.min()
    scaled = np.maximum((v - v.min()) / span if span else v, np.finfo(np.float32).eps)
    return scaled / scaled.sum()


def _reference_kl(x: np.ndarray, y: np.ndarray) -> float:
    p, q = _floored_distribution(x), _floored_distribution(y)
    return float(np.sum(p * np.log(p / q)))


@pytest.mark.parametrize("x, y", [
    ([0.0, 1.0, 3.0], [0.0, 2.0, 3.0]),
    ([0.0, 1.0, 2.0], [1.0, 0.0, 2.0]),       # different argmins: inf before the floor, now finite
    ([0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 2.0, 3.0]),   # an all-zero side: uniform after the floor
    ([5.0, 5.0, 5.0], [1.0, 2.0, 3.0]),       # a constant side is kept as it is
])
def test_kl_follows_msaccucmp_26_floored_definition(x, y):
    x, y = np.array(x), np.array(y)
    value = m.kl_divergence(x, y)
    assert np.isfinite(value) and value == pytest.approx(_reference_kl(x, y), rel=1e-6, abs=1e-9)


def test_standard_deviation_string_has_target_side_first():
    result = m.compare_tensors(np.array([1.0, 3.0]), np.array([0.0, 0.0]))
    assert result.standard_deviation == "(2.000000;1.000000),(0.000000;0.000000)"


def test_float16_inputs_are_computed_in_float64():
    big = np.full(100_000, 60000.0, dtype=np.float16)   # sum of squares overflows float16/float32
    result = m.compare_tensors(big, big.astype(np.float32))
    assert result.values["CosineSimilarity"] == pytest.approx(1.0)
    assert result.values["RelativeEuclideanDistance"] == 0.0


def test_non_finite_inputs_give_nan_or_inf_without_warnings():
    x = np.array([1.0, np.inf, 3.0], dtype=np.float16)
    y = np.array([1.0, 2.0, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = m.compare_tensors(x, y)
    assert np.isnan(result.values["CosineSimilarity"])
    assert np.isnan(result.values["KullbackLeiblerDivergence"])
    assert "NPU data contains NaN or inf" in result.fail_reasons
    inf_only = m.compare_tensors(np.array([np.inf, 1.0]), np.array([2.0, 1.0]))
    assert inf_only.values["MaxAbsoluteError"] == float("inf")


def test_mismatched_sizes_are_a_failed_comparison_not_an_exception():
    result = m.compare_tensors(np.zeros(3), np.zeros(4))
    assert all(np.isnan(v) for v in result.values.values())
    assert result.fail_reasons and "shape mismatch" in result.fail_reasons[0]


def test_as_dict_follows_msaccucmp_column_order():
    assert tuple(m.compare_tensors(np.ones(2), np.ones(2)).as_dict()) == m.METRIC_NAMES


@pytest.mark.parametrize("value, text", [(float("nan"), "NaN"), (float("inf"), "inf"),
                                         (float("-inf"), "-inf"), (0.1234567, "0.123457")])
def test_format_number(value, text):
    assert m.format_number(value) == text
