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


def test_kl_is_inf_where_the_golden_distribution_has_a_zero_the_target_has_not():
    # min-max normalisation puts each side's minimum at 0; different argmins -> inf
    assert m.kl_divergence(np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0])) == float("inf")


def test_kl_by_hand_and_with_floor():
    x, y = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
    p, q = np.array([0, 1 / 3, 1]) / (4 / 3), np.array([0, 2 / 3, 1]) / (5 / 3)
    expected = sum(pi * np.log(pi / qi) for pi, qi in zip(p, q, strict=True) if pi > 0)
    assert m.kl_divergence(x, y) == pytest.approx(expected)
    assert np.isfinite(m.kl_divergence(np.array([0.0, 1.0, 2.0]), np.array([1.0, 0.0, 2.0]),
                                       floor=float(np.finfo(np.float32).eps)))


def test_kl_with_an_all_zero_side_is_nan():
    assert np.isnan(m.kl_divergence(np.zeros(4), np.arange(4.0)))


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
