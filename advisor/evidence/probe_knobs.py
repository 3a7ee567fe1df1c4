"""The measurement knobs of the input probes (``knobs: probes:`` in knowledge/thresholds.yaml).

They steer the probes themselves (undo a layout or a channel permutation before the next probe,
skip geometry when a hypothesis already explains the tensor, read an affine map as a scale or a
normalisation); what a fit or a margin means for a verdict is a rule parameter
(rules/core/preprocessing/). Override with ``--threshold probes.NAME=VALUE``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..facts.thresholds import Thresholds, load_thresholds


@dataclass(frozen=True)
class ProbeKnobs:
    apply_channel_fit: float            # a channel permutation with this fit and margin is undone
    apply_channel_margin: float         # before the affine fit
    layout_min_fit: float               # a layout reinterpretation above this fit and margin is named
    layout_min_margin: float            # (and undone before the other probes)
    explained_fit: float                # a hypothesis with this fit explains the tensor
    sample_fit: float                   # a sample is explained by a geometric augmentation at this fit
    sample_identity_cosine: float       # a sample this close to its golden one is untouched
    relation_min_fit: float             # below this fit an affine map is no relation
    identity_scale_tolerance: float     # |a - 1| and |b| / rms within this: identity
    scale_offset_tolerance: float       # |b| / (a * rms) within this: a pure scale
    known_tolerance: float              # relative tolerance when naming well-known mean/std constants
    scale_name_tolerance: float         # relative tolerance when naming a scale factor (255, 1/32768...)
    shared_tolerance: float             # scales and offsets this close across channels are one shared map
    geometry_simpler_margin: float      # a more complex geometric hypothesis must beat a simpler one by this fit
    group_residual_ratio: float         # per-sample maps replace per-channel ones leaving this share of the residual
    standardised_tolerance: float       # |mean| and |std - 1| of a standardised channel or sample
    max_samples: int                    # samples of a batch surveyed one by one
    stats_abs_tolerance: float          # rounding of a printed mean/std (msaccucmp prints 3 decimals) ...
    stats_rel_tolerance: float          # ... plus this share of the value: statistics agree within both

    @classmethod
    def from_thresholds(cls, thresholds: Thresholds | None = None) -> ProbeKnobs:
        """The knobs of ``thresholds`` (the defaults of knowledge/thresholds.yaml when None)."""
        thresholds = thresholds if thresholds is not None else load_thresholds()
        return cls(**{f.name: thresholds.knob("probes", f.name) for f in fields(cls)})
