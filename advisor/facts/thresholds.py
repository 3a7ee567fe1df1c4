"""Per-dtype thresholds and named measurement knobs from ``knowledge/thresholds.yaml``, with overrides.

The dtype table says when a tensor deviates. ``knobs`` holds the few numbers Python itself needs to
*measure* a feature (how long a clean streak must be, how many ops to follow), grouped in sections;
everything that *judges* is a rule parameter instead. Both are overridden the same way:
``--threshold float16.cosine=0.98`` or ``--threshold propagation.clean_ops=4`` (and the same
keys in ``advisor.toml`` ``[thresholds]``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import KnowledgeError, UsageError
from ..resources import data_dir
from ..yamlfile import load_yaml

THRESHOLD_METRICS = ("cosine", "relative_euclidean_distance", "scale")


@dataclass(frozen=True)
class Thresholds:
    """dtype -> metric -> threshold; ``default`` applies to dtypes not listed."""

    table: dict[str, dict[str, float]]
    knobs: dict[str, dict[str, float]] = field(default_factory=dict)   # section -> name -> value

    def knob(self, section: str, name: str) -> float:
        """A measurement knob (``knobs:`` in knowledge/thresholds.yaml); a missing one is a bug."""
        return self.knobs[section][name]

    def for_dtype(self, dtype: str | None) -> dict[str, float]:
        return self.table.get(dtype or "default", self.table["default"])

    def per_row(self, dtypes: pd.Series, metric: str, profile: str = "") -> np.ndarray:
        """The threshold of ``metric`` for every row, by the row's dtype (vectorised). ``profile``
        (``gradient``) takes the ``<profile>.<dtype>`` entry where the table has one."""
        mapping = {dtype: values[metric] for dtype, values in self.table.items()}
        if profile:
            mapping.update({dtype.removeprefix(profile + "."): values[metric] for dtype, values in self.table.items()
                            if dtype.startswith(profile + ".")})
        mapped = dtypes.astype("object").map(mapping)
        return mapped.fillna(self.table["default"][metric]).to_numpy(dtype="float64")

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {dtype: dict(values) for dtype, values in self.table.items()}

    def allowing(self, allowance: float, own: float = 1.0) -> Thresholds:
        """The limits the judgement rules hold a tensor to when it may use ``allowance`` of each dtype's
        limits (``own`` of the ``identical_inputs`` ones): ``1 - allowance * (1 - cosine)`` and
        ``allowance`` times the distance and scale limits (rules/core/judgement: what a plot draws and a
        colour follows)."""
        if allowance == 1.0 and own == 1.0:
            return self
        table = {}
        for name, values in self.table.items():
            share = own if name.startswith("identical_inputs.") else allowance
            table[name] = {metric: 1.0 - share * (1.0 - value) if metric == "cosine" else share * value
                           for metric, value in values.items()}
        return Thresholds(table, self.knobs)


def load_thresholds(overrides: Iterable[str] = ()) -> Thresholds:
    path = data_dir("knowledge") / "thresholds.yaml"
    raw = load_yaml(path, KnowledgeError)
    if not isinstance(raw, dict) or "default" not in raw:
        raise KnowledgeError("must map dtypes to thresholds and include 'default'", path=path)
    knobs = _knobs(raw.pop("knobs", {}), path)
    table: dict[str, dict[str, float]] = {}
    for dtype, values in raw.items():
        if not isinstance(values, dict) or set(values) != set(THRESHOLD_METRICS):
            raise KnowledgeError(f"needs exactly {', '.join(THRESHOLD_METRICS)}", path=path, field=str(dtype))
        table[str(dtype)] = {metric: float(values[metric]) for metric in THRESHOLD_METRICS}
    for text in overrides:
        _apply_override(table, knobs, text)
    return Thresholds(table, knobs)


def _knobs(raw: object, path) -> dict[str, dict[str, float]]:
    if not isinstance(raw, dict):
        raise KnowledgeError("'knobs' must map sections to {name: number}", path=path, field="knobs")
    knobs: dict[str, dict[str, float]] = {}
    for section, values in raw.items():
        if not isinstance(values, dict) or not all(_is_number(v) for v in values.values()):
            raise KnowledgeError("must map knob names to numbers", path=path, field=f"knobs.{section}")
        knobs[str(section)] = {str(name): value for name, value in values.items()}
    return knobs


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _apply_override(table: dict[str, dict[str, float]], knobs: dict[str, dict[str, float]], text: str) -> None:
    """``cosine=0.995`` (every dtype), ``float16.cosine=0.98`` (one dtype) or ``SECTION.KNOB=VALUE``."""
    key, sep, value = text.partition("=")
    if not sep:
        raise UsageError(f"--threshold '{text}': expected METRIC=VALUE, DTYPE.METRIC=VALUE or SECTION.KNOB=VALUE")
    dtype, _, metric = key.strip().rpartition(".")
    if dtype in knobs:
        _apply_knob(knobs[dtype], dtype, metric, value, text)
        return
    if metric not in THRESHOLD_METRICS:
        raise UsageError(f"--threshold '{text}': unknown metric '{metric}' "
                         f"(known: {', '.join(THRESHOLD_METRICS)})")
    number = _finite(value, text)
    if dtype:
        table.setdefault(dtype, dict(table["default"]))[metric] = number
    else:
        for values in table.values():
            values[metric] = number


def _apply_knob(section: dict[str, float], name: str, knob: str, value: str, text: str) -> None:
    if knob not in section:
        raise UsageError(f"--threshold '{text}': no knob '{knob}' in '{name}' (knobs: {', '.join(section)})")
    number = _finite(value, text)
    if isinstance(section[knob], int):
        if number != int(number):
            raise UsageError(f"--threshold '{text}': '{knob}' takes a whole number")
        number = int(number)
    section[knob] = number


def _finite(value: str, text: str) -> float:
    """The number an override ``text`` sets, which must be finite."""
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"--threshold '{text}': '{value}' is not a number") from None
    if not np.isfinite(number):
        raise UsageError(f"--threshold '{text}': the value must be finite")
    return number
