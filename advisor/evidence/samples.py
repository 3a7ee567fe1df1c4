"""Per-sample survey of a batch: are the samples transformed *differently* (one flipped, one
shifted, one untouched)? Deterministic preprocessing bugs treat every sample alike; random
augmentation left on does not. Reports counts; rules/core/preprocessing/random-preprocessing.yaml
decides how many explained samples make a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tensors.metrics import cosine_similarity
from .channels import image_stack
from .geometry import match_geometry, pearson
from .probe_knobs import ProbeKnobs


@dataclass(frozen=True)
class SampleSurvey:
    samples: int
    identical: int                  # samples equal to their golden sample
    explained: int                  # samples another single augmentation explains
    labels: tuple[str, ...]         # per sample: identity, hflip, shift(1,-2), affine, unexplained...
    varies: bool                    # the samples were not all treated alike

    @property
    def explained_share(self) -> float:
        """Share of the surveyed samples that are untouched or one augmentation explains."""
        return (self.identical + self.explained) / self.samples


def survey_samples(target: np.ndarray, golden: np.ndarray, axis: int | None, knobs: ProbeKnobs
                   ) -> SampleSurvey | None:
    """Per-sample explanation of a batch (N >= 2 image-like samples of equal shapes), or None."""
    t_planes, g_planes = image_stack(target, axis), image_stack(golden, axis)
    if t_planes is None or g_planes is None or t_planes.shape != g_planes.shape or len(t_planes) < 2:
        return None
    labels = [_sample_label(t, g, knobs)
              for t, g in zip(t_planes[:knobs.max_samples], g_planes[:knobs.max_samples], strict=True)]
    identical = labels.count("identity")
    explained = sum(label not in ("identity", "unexplained") for label in labels)
    varies = len(set(labels)) > 1 and explained > 0
    return SampleSurvey(len(labels), identical, explained, tuple(labels), varies)


def _sample_label(t: np.ndarray, g: np.ndarray, knobs: ProbeKnobs) -> str:
    if cosine_similarity(t, g) >= knobs.sample_identity_cosine:
        return "identity"
    match = match_geometry(t, g, knobs.geometry_simpler_margin)
    if match is not None and match.kind != "identity" and match.fit >= knobs.sample_fit:
        return match.label()
    if pearson(t, g) >= knobs.explained_fit:
        return "affine"                      # brightness / contrast jitter
    return "unexplained"
