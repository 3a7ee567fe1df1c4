"""The cosine limit a tensor is coloured by in ``advisor ops`` and ``advisor node``: the one
``advisor run`` judges it by, from knowledge/thresholds.yaml (with the project's ``[thresholds]``).

Its dtype's entry; for a gradient (a backward row) the ``gradient.<dtype>`` profile where the table
has one; for the output of an op whose inputs are identical on both sides the ``identical_inputs.<dtype>``
profile (only the op's own rounding is allowed there). A float32 output at cosine 0.995 is red here
as it deviates in ``advisor run``; a float16 one at 0.995 is not.
"""

from __future__ import annotations

import math

from ..config import load_config
from ..engine.judgement import judgement
from ..engine.loading import load_packs, parse_param_overrides
from ..facts.thresholds import Thresholds, load_thresholds


def project_thresholds() -> Thresholds:
    """The limits ``advisor run`` would hold tensors to in this folder: knowledge/thresholds.yaml under the
    project settings' ``[thresholds]``, as the judgement rules apply them (an ``allowance`` set in their
    ``[params]``, e.g. ``"tensor-deviates.allowance" = 2``)."""
    config = load_config()
    thresholds = load_thresholds(tuple(config.thresholds))
    if not config.params:
        return thresholds
    rules = load_packs(config.rules, builtin=config.builtin_rules).rules
    return judgement(rules, parse_param_overrides(config.params, rules), rules,
                     fallback=not config.builtin_rules).thresholds(thresholds)


def cosine_limit(thresholds: Thresholds, dtype: str | None, *, backward: bool = False,
                 identical_inputs: bool = False) -> float:
    table = thresholds.table
    for profile, applies in (("identical_inputs", identical_inputs), ("gradient", backward)):
        if applies and dtype and f"{profile}.{dtype}" in table:
            return table[f"{profile}.{dtype}"]["cosine"]
    return thresholds.for_dtype(dtype)["cosine"]


def cosine_tint(cosine: float | None, limit: float) -> str | None:
    """red below the limit, green at or above it, nothing when the cosine is missing."""
    if cosine is None or math.isnan(cosine):
        return None
    return "red" if cosine < limit else "green"
