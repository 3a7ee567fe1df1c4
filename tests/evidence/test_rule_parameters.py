"""The evidence stage measures, the rules judge: on the committed scenarios, a rule parameter
(``--set RULE.PARAM=V``) or a measurement knob (``--threshold probes.KNOB=V``) changes the verdict
the way its documentation says, through the whole pipeline a user runs."""

from __future__ import annotations

import pytest

from advisor.errors import UsageError
from advisor.pipeline import AnalysisOptions, analyse
from tests.conftest import scenario_csv, scenario_label
from tests.evidence.conftest import path_of

SWAP = "rgb_bgr_swap__mtcnn_pnet__aipp_swap__s0"
LAYOUT = "layout_nchw_nhwc__mtcnn_pnet__nhwc_buffer__s0"


def _diagnose(name: str, **options):
    folder = path_of(name)
    return analyse(AnalysisOptions(comparison=scenario_csv(folder), plugins=False,
                                   dumps=(folder / "golden", folder / "target"),
                                   build_config=folder / "build.json", **options))


def _evidence_of(diagnosis, rule: str):
    return next(f for f in diagnosis.findings if f.rule == rule)


def test_the_channel_swap_is_named_with_its_measured_margin():
    diagnosis = _diagnose(SWAP)
    label = scenario_label(path_of(SWAP))
    assert (diagnosis.root_cause.kind, diagnosis.root_cause.index) == ("rgb_bgr_swap", label["index"])
    values = _evidence_of(diagnosis, "rgb-bgr-swap").values
    # the measured numbers behind the verdict: permuted fit, original-order fit
    assert values["channel_fit"] > 0.999 and values["channel_fit"] - values["channel_identity_fit"] > 0.1


def test_raising_the_swap_rules_min_margin_above_the_measured_margin_withdraws_the_swap():
    default = _diagnose(SWAP)
    values = _evidence_of(default, "rgb-bgr-swap").values
    margin = values["channel_fit"] - values["channel_identity_fit"]
    stricter = _diagnose(SWAP, params=(f"rgb-bgr-swap.min_margin={margin + 0.01:.4f}",))
    assert all(f.rule != "rgb-bgr-swap" for f in stricter.findings)
    # without the swap the input is still wrong: the generic finding at the input takes over
    assert stricter.root_cause.kind == "input_mismatch"
    assert stricter.root_cause.index == default.root_cause.index
    loosened = _diagnose(SWAP, params=(f"rgb-bgr-swap.min_margin={margin - 0.01:.4f}",))
    assert loosened.root_cause.kind == "rgb_bgr_swap"


def test_a_layout_knob_above_the_measured_margin_leaves_the_reinterpretation_unnamed():
    default = _diagnose(LAYOUT)
    assert default.root_cause.kind == "layout_nchw_nhwc"
    strict = _diagnose(LAYOUT, thresholds=("probes.layout_min_margin=0.999",))
    assert strict.root_cause.kind != "layout_nchw_nhwc"
    assert "probes.layout_min_margin=0.999" in strict.overrides["thresholds"]


def test_an_unknown_probe_knob_is_a_usage_error_naming_the_known_ones():
    with pytest.raises(UsageError, match="no knob 'layout_min_marign' in 'probes'.*layout_min_margin"):
        _diagnose(LAYOUT, thresholds=("probes.layout_min_marign=0.5",))
