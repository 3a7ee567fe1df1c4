"""The probes on real network inputs: the committed scenarios' dumps and mistakes made from them."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.evidence import probes
from advisor.evidence.geometry import bilinear, match_geometry
from advisor.evidence.probe_knobs import ProbeKnobs
from tests.evidence.conftest import scenario_input

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)

KNOBS = ProbeKnobs.from_thresholds()


def fields(target, golden) -> dict:
    return probes.probe_pair(target, golden).fields()


@pytest.mark.parametrize("name", ["clean_bf16__mtcnn_pnet__mixed_bf16__s0",
                                  "clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0",
                                  "problem_node__mtcnn_pnet__prelu_layout__s0"])
def test_identical_inputs_explain_nothing(name):
    f = fields(*scenario_input(name))
    assert f["cosine"] == 1.0 and f["norm_relation"] == "identity"
    assert f["channel_margin"] == 0 and f["layout_match"] == "none" and "geometry" not in f


def test_the_aipp_swap_scenario_is_a_channel_reversal():
    f = fields(*scenario_input("rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0"))
    assert f["channel_order"] == "2,1,0" and f["channel_reversed"] and f["channel_margin"] > 0.15
    assert f["channel_cosine"] > 0.9999 and f["channel_identity_fit"] < 0.85
    assert f["norm_relation"] == "identity"       # nothing else once the channels are put back


def test_the_bn_inserted_scenario_is_a_second_normalisation_with_mtcnn_constants():
    f = fields(*scenario_input("duplicate_normalization__mtcnn_rnet__bn_inserted__s0"))
    assert f["norm_relation"] == "extra_normalization" and f["norm_applied_to"] == "target"
    assert (f["norm_mean"], f["norm_std"]) == ("127.5", "128")
    assert f["norm_known"] == "[-1, 1] from 0-255 (127.5/128)" and f["norm_fit"] > 0.9999
    assert not f["channel_swapped"] and f["layout_match"] == "none"


def test_the_nhwc_buffer_scenario_is_a_layout_reinterpretation():
    f = fields(*scenario_input("layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0"))
    assert f["layout_match"] == "nhwc_buffer_as_nchw" and f["layout_margin"] > 0.5
    assert f["layout_cosine"] > 0.9999 and f["cosine"] < 0.2
    assert not f["channel_swapped"] and f["norm_relation"] == "identity"


def test_the_shifted_crop_is_no_preprocessing_slip():
    f = fields(*scenario_input("input_mismatch__mtcnn_rnet__shifted_crop__s1"))
    assert f["channel_margin"] < 0.002 and f["layout_match"] == "none" and f["norm_relation"] == "none"
    assert f["geometry"] == "zoom" and f["geometry_fit"] < 0.98   # another, larger box: no exact geometry


def test_the_reverse_layout_mistake_is_found_too(photo):
    n, c, h, w = photo.shape
    target = photo.reshape(n, h, w, c).transpose(0, 3, 1, 2)
    assert fields(target, photo)["layout_match"] == "nchw_buffer_as_nhwc"


def test_dumps_in_different_layouts_are_told_apart_from_a_scrambled_buffer(photo):
    f = fields(np.ascontiguousarray(photo.transpose(0, 2, 3, 1)), photo)
    assert f["layout_match"] == "layouts_differ" and f["layout_cosine"] > 0.9999


def test_a_0_255_input_against_0_1_is_a_scale_of_255(pixels):
    f = fields(pixels, pixels / 255)
    assert f["norm_relation"] == "scale" and f["scale_known"] == "255"
    assert f["scale_factor"] == pytest.approx(255, rel=1e-6)


def test_a_raw_target_against_a_normalised_golden_is_missing_its_normalisation(pixels, photo):
    f = fields(pixels, photo)
    assert f["norm_relation"] == "missing_normalization" and f["norm_applied_to"] == "golden"
    assert (f["norm_mean"], f["norm_std"]) == ("127.5", "128")


def test_imagenet_normalisation_applied_twice_is_recognised_per_channel(pixels):
    golden = (pixels / 255 - IMAGENET_MEAN) / IMAGENET_STD
    f = fields((golden - IMAGENET_MEAN) / IMAGENET_STD, golden)
    assert f["norm_relation"] == "extra_normalization" and f["norm_known"] == "ImageNet (0-1)"
    assert f["norm_mean"] == "0.485,0.456,0.406" and not f["norm_shared"]


def test_bgr_and_a_different_scale_show_as_both(pixels):
    f = fields(pixels[:, ::-1], pixels / 255)
    assert f["channel_reversed"] and f["norm_relation"] == "scale" and f["scale_known"] == "255"


def test_a_channel_permutation_survives_a_per_channel_normalisation(pixels):
    golden = (pixels / 255 - IMAGENET_MEAN) / IMAGENET_STD
    target = (pixels[:, ::-1] / 255 - IMAGENET_MEAN) / IMAGENET_STD     # BGR data, RGB constants
    f = fields(target, golden)
    assert f["channel_reversed"] and f["channel_fit"] > 0.9999


def test_nhwc_images_use_the_last_axis_as_channels(photo):
    nhwc = np.ascontiguousarray(photo.transpose(0, 2, 3, 1))
    f = fields(nhwc[..., ::-1], nhwc)
    assert f["channel_axis"] == 3 and f["channel_reversed"]


@pytest.mark.parametrize(("make", "kind"), [
    (lambda g: g[:, ::-1], "hflip"), (lambda g: g[::-1, :], "vflip"), (lambda g: g[::-1, ::-1], "rot180")])
def test_flips(photo, make, kind):
    plane = photo[0].mean(axis=0)
    match = match_geometry(make(plane), plane, KNOBS.geometry_simpler_margin)
    assert match.kind == kind and match.fit > 0.9999


def test_a_shift_is_found_with_its_offset(photo):
    plane = photo[0].mean(axis=0)
    target = plane[10:80, 6:76]
    golden = plane[7:77, 11:81]            # target[y, x] = golden[y + 3, x - 5]
    match = match_geometry(target, golden, KNOBS.geometry_simpler_margin)
    assert match.kind == "shift" and match.shift == (3, -5) and match.fit > 0.9999


def test_a_tighter_crop_resized_to_the_same_size_is_a_zoom(photo):
    plane = photo[0].mean(axis=0)
    size = plane.shape[0]
    grid = (np.arange(size) - (size - 1) / 2) / 1.2 + (size - 1) / 2
    match = match_geometry(bilinear(plane, grid, grid), plane, KNOBS.geometry_simpler_margin)
    assert match.kind == "zoom" and match.scale == 1.2 and match.fit > 0.999


def test_a_smaller_target_is_a_crop_or_a_resize(photo):
    plane = photo[0].mean(axis=0)
    crop = match_geometry(plane[20:68, 30:78], plane, KNOBS.geometry_simpler_margin)
    assert (crop.kind, crop.shift) == ("crop", (20, 30)) and crop.fit > 0.9999
    half = plane.reshape(48, 2, 48, 2).mean(axis=(1, 3))
    resize = match_geometry(half, plane, KNOBS.geometry_simpler_margin)
    assert resize.kind == "resize" and resize.fit > 0.98


def test_a_batch_with_mixed_flips_and_shifts_looks_random(photo):
    image = photo[0]
    golden = np.stack([image[:, 0:48, 0:48], image[:, 40:88, 10:58], image[:, 20:68, 30:78], image[:, 48:96, 48:96]])
    target = golden.copy()
    target[1] = golden[1][:, :, ::-1]
    target[2] = image[:, 23:71, 28:76]
    f = fields(target, golden)
    assert f["transforms_vary"] and f["samples_explained_share"] == 1.0
    assert f["sample_transforms"] == "identity,hflip,shift(3,-2),identity"


def test_a_batch_flipped_alike_is_not_random(photo):
    golden = np.stack([photo[0, :, :48, :48], photo[0, :, 48:, 48:]])
    f = fields(golden[..., ::-1], golden)
    assert f["sample_transforms"] == "hflip,hflip" and not f["transforms_vary"]


def test_tensors_without_channels_or_images_still_get_the_affine_probe():
    tokens = np.arange(52, dtype=np.int64).reshape(1, 52)
    f = fields(tokens, tokens)
    assert f["norm_relation"] == "identity" and "channel_order" not in f and "geometry" not in f


def test_non_finite_tensors_are_not_probed():
    x = np.array([[1.0, np.inf], [2.0, 3.0]])
    f = fields(x, np.ones((2, 2)))
    assert f["probed"] is False and "NaN or inf" in f["skipped"]


@pytest.mark.parametrize(("shape", "axis"), [((1, 3, 8, 8), 1), ((1, 8, 8, 3), 3), ((3, 8, 8), 0), ((8, 8, 3), 2),
                                             ((1, 52), None), ((8, 1, 1024, 1), 1)])
def test_channel_axis(shape, axis):
    assert probes.channel_axis(shape) == axis


def test_layout_mistakes_on_an_nhwc_golden_are_found_too(photo):
    nhwc = np.ascontiguousarray(photo.transpose(0, 2, 3, 1))          # a TF-style golden input
    nchw_buffer = np.ascontiguousarray(photo).reshape(nhwc.shape)    # its NCHW buffer read as NHWC
    assert fields(nchw_buffer, nhwc)["layout_match"] == "nchw_buffer_as_nhwc"
    n, h, w, c = nhwc.shape
    read_as_nchw = nhwc.reshape(n, c, h, w).transpose(0, 2, 3, 1)    # its NHWC buffer read as NCHW
    assert fields(read_as_nchw, nhwc)["layout_match"] == "nhwc_buffer_as_nchw"
