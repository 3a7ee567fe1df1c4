"""Plain facts: what the engine can assert."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def clean_fact(fact: dict[str, Any]) -> dict[str, Any]:
    """Make a fact plain: no NA/NaN (the field is then absent, so conditions on it do not match) and
    Python scalars instead of numpy ones. Infinities stay; the engine clamps them when it encodes."""
    clean: dict[str, Any] = {}
    for key, value in fact.items():
        kind = type(value)   # the plain types first: tens of thousands of facts of ~60 fields
        if kind is str or kind is bool or kind is int:
            clean[key] = value
            continue
        if kind is float:
            if value == value:   # not NaN
                clean[key] = value
            continue
        if value is None or value is pd.NA:
            continue
        if isinstance(value, (np.bool_, bool)):
            clean[key] = bool(value)
        elif isinstance(value, (np.integer, int)):
            clean[key] = int(value)
        elif isinstance(value, (np.floating, float)):
            number = float(value)
            if math.isnan(number):
                continue
            clean[key] = number
        else:
            clean[key] = str(value)
    return clean
