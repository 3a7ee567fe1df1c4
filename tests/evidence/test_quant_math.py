"""int8 quantisation in numpy (advisor/evidence/quant.py): the arithmetic the quantisation evidence rests on."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.evidence.quant import (
    Scheme,
    activation_stats,
    calibrated_range,
    cosine,
    fake_quantize,
    relative_distance,
    sqnr_db,
    weight_quant_stats,
)

RNG = np.random.default_rng(7)


def test_symmetric_per_tensor_rounds_within_half_a_step():
    x = RNG.normal(size=(64, 32))
    q = fake_quantize(x, Scheme())
    step = np.abs(x).max() / 127
    assert np.abs(q - x).max() <= step / 2 + 1e-12
    assert len(np.unique(np.round(q / step))) <= 255


def test_per_channel_keeps_small_channels_that_one_scale_crushes():
    w = RNG.normal(size=(16, 64))            # [in, out] as MatMul's B
    w[:, 0] *= 60                            # one "super weight" column
    per_tensor = fake_quantize(w, Scheme(), channel_axis=1)
    per_channel = fake_quantize(w, Scheme(per_channel=True), channel_axis=1)
    small = slice(1, None)
    assert relative_distance(w[:, small], per_tensor[:, small]) > 10 * relative_distance(w[:, small],
                                                                                        per_channel[:, small])
    stats = weight_quant_stats(w, channel_axis=1, outlier_percentile=99.9)
    assert stats.channels == 64 and stats.channel_ratio > 30


def test_asymmetric_uses_all_codes_on_one_sided_data():
    x = RNG.uniform(0, 1, size=10_000)
    sym, asym = fake_quantize(x, Scheme()), fake_quantize(x, Scheme(symmetric=False))
    assert len(np.unique(sym)) <= 128 < len(np.unique(asym))
    assert sqnr_db(x, asym) > sqnr_db(x, sym) + 5     # half the step: ~6 dB


def test_a_calibrated_range_clips_and_a_wide_one_wastes_codes():
    x = RNG.uniform(0, 0.1, size=1000)
    wide = fake_quantize(x, Scheme(calibration="range", low=-1.0, high=1.0))
    assert len(np.unique(wide)) <= 14                 # 0.1 / (1/127): about 13 steps
    narrow = fake_quantize(x, Scheme(calibration="range", low=-0.05, high=0.05))
    assert narrow.max() == pytest.approx(0.05, rel=0.02)
    stats = activation_stats(x, 99.99, calibrated=(-0.05, 0.05))
    assert stats.one_sided and 0.4 < stats.saturation < 0.6


def test_percentile_calibration_ignores_outliers():
    x = RNG.normal(size=100_000)
    x[:5] = 400.0
    low, high = calibrated_range(x, Scheme(calibration="percentile", percentile=99.99))
    assert high < 10 and low == -high
    assert activation_stats(x, 99.99).outlier_ratio > 50
    bulk = slice(5, None)
    by_max, by_pct = fake_quantize(x, Scheme()), fake_quantize(x, Scheme(calibration="percentile", percentile=99.99))
    assert sqnr_db(x[bulk], by_pct[bulk]) > sqnr_db(x[bulk], by_max[bulk]) + 20


def test_metrics_of_identical_and_opposite_tensors():
    x = RNG.normal(size=100)
    assert cosine(x, x) == pytest.approx(1.0) and sqnr_db(x, x) == float("inf")
    assert cosine(x, -x) == pytest.approx(-1.0) and relative_distance(x, -x) == pytest.approx(2.0)
    assert cosine(np.zeros(3), np.zeros(3)) == 1.0
