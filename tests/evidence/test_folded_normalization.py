"""The build's own normalisation constants checked on real inputs (the committed photo and speech frames),
nothing fitted: normalised once more, or the raw input the normalising model expects."""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.evidence.config import config_fact
from advisor.evidence.probe_knobs import ProbeKnobs
from advisor.evidence.probes import exact_fit, layout_reinterpretation, normalization_fits
from tests.evidence.conftest import path_of, scenario_input

MEAN, STD = np.array([127.5] * 3), np.array([128.0] * 3)
IMAGENET = (np.array([123.675, 116.28, 103.53]), np.array([58.395, 57.12, 57.375]))

_KNOBS = ProbeKnobs.from_thresholds()
LAYOUT = {"min_fit": _KNOBS.layout_min_fit, "min_margin": _KNOBS.layout_min_margin}


def test_a_second_normalisation_with_the_knobs_constants_fits_exactly(photo):
    again, expected = normalization_fits((photo - 127.5) / 128, photo, MEAN, STD)
    assert again > 0.999999 and expected < 0


def test_the_raw_input_a_normalising_model_expects_fits_the_other_way(pixels, photo):
    again, expected = normalization_fits(pixels, photo, MEAN, STD)
    assert expected > 0.999999 and again < 0


def test_other_constants_do_not_fit(pixels, photo):
    """ImageNet's mean/std against an image normalised with (127.5, 128): a near-affine map, but not the one."""
    _, expected = normalization_fits(pixels, photo, *IMAGENET)
    assert expected < 0.99


def test_per_utterance_cmvn_on_speech_frames():
    target, golden = scenario_input("duplicate_normalization__crepe_tiny__cmvn_twice__s0")
    config = config_fact(json.loads((path_of("duplicate_normalization__crepe_tiny__cmvn_twice__s0")
                                     / "build.json").read_text()))
    mean, std = float(config["norm_mean"]), float(config["norm_std"])
    again, _ = normalization_fits(target, golden, np.array([mean]), np.array([std]))
    assert again > 0.9999 and abs(np.std(target) / np.std(golden) - 1 / std) < 0.05 / std


@pytest.mark.parametrize("layout", ["NFT", "NTF"])
def test_per_feature_cmvn_folded_into_the_model_is_checked_on_its_feature_axis(layout):
    """Speech features [1, F, T] (a Conv1d front end) or [1, T, F] with one mean and var per feature
    folded into the model (insert_bn_before_firstnode's lists): normalised once more in the front end."""
    _, golden = scenario_input("duplicate_normalization__crepe_tiny__cmvn_twice__s0")
    features = golden.reshape(1, 8, 1024).astype(np.float64)        # 8 features over 1024 steps
    mean, std = features.mean(axis=2).reshape(-1), features.std(axis=2).reshape(-1) * 3 + 0.1
    twice = (features - mean[None, :, None]) / std[None, :, None]
    if layout == "NTF":
        features, twice = features.transpose(0, 2, 1), twice.transpose(0, 2, 1)
    again, expected = normalization_fits(twice, features, mean, std)
    assert again > 0.999999 and expected < 0.99


def test_constants_for_another_channel_count_are_not_checked(photo):
    assert normalization_fits(photo, photo, np.zeros(4), np.ones(4)) is None


def test_exact_fit_is_not_a_fitted_r2():
    x = np.linspace(-1, 1, 100)
    assert exact_fit(x, x) == 1.0 and exact_fit(2 * x, x) < 1.0 and np.isnan(exact_fit(np.ones(3), np.ones(3)))


def test_an_untransposed_buffer_in_the_other_layouts_shape(photo):
    match = layout_reinterpretation(np.ascontiguousarray(photo).reshape(1, 96, 96, 3), photo, **LAYOUT)
    assert match.hypothesis == "buffer_not_transposed" and match.fit > 0.9999 and match.margin > 0.5
    assert layout_reinterpretation(np.ascontiguousarray(photo.transpose(0, 2, 3, 1)), photo, **LAYOUT).hypothesis \
        != "buffer_not_transposed"
