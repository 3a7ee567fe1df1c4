"""Dtype names as every tool spells them, normalised to one vocabulary.

Shared by the comparison readers (advisor/ingest) and the graph readers (advisor/graph): neither
stage imports the other for it.

msaccucmp writes ``DT_FLOAT16``, msprobe/PyTorch ``torch.float16``, msprobe/MindSpore ``Float16`` /
``BFloat16``, numpy ``float16``; the canonical table holds ``float16``, ``bfloat16``, ``float32``,
``int8``... Unknown names are kept, lowercased. msprobe 26 types a Python scalar argument as its class,
``<class 'float'>``: that is ``python.float`` (a Python float is 64-bit and no tensor: not ``float32``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

#: Largest finite float16 value: a float16 tensor reaching it has overflowed (or saturated).
FP16_MAX: float = 65504.0

#: Unit roundoff of each float format (half an ulp, relative): rounding a value to the format moves it
#: by at most this share of its magnitude. What a change of dtype alone can do to a tensor.
UNIT_ROUNDOFF: dict[str, float] = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11,
                                   "bfloat16": 2.0**-8}

DTYPE_PREFIXES = ("dt_", "torch.", "np.", "numpy.", "mindspore.", "ms.")
DTYPE_ALIASES: dict[str, str] = {
    "float": "float32", "float32": "float32", "fp32": "float32", "single": "float32",
    "float16": "float16", "half": "float16", "fp16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "double": "float64", "float64": "float64", "fp64": "float64",
    "int8": "int8", "uint8": "uint8", "int16": "int16", "short": "int16", "uint16": "uint16",
    "int32": "int32", "int": "int32", "uint32": "uint32", "int64": "int64", "long": "int64",
    "uint64": "uint64", "bool": "bool", "bool_": "bool", "boolean": "bool",
    "complex64": "complex64", "complex128": "complex128",
}


PYTHON_CLASS = re.compile(r"<class '([\w.]+)'>")


def normalise_dtype(value: str) -> str:
    """``DT_FLOAT16`` / ``torch.float16`` / ``Float16`` / ``half`` -> ``float16``; unknown names lowercased."""
    text = value.strip().lower()
    if match := PYTHON_CLASS.fullmatch(text):
        return f"python.{match.group(1)}"
    key = next((text[len(p):] for p in DTYPE_PREFIXES if text.startswith(p)), text)
    return DTYPE_ALIASES.get(key, text)


def normalise_dtypes(values: pd.Series) -> pd.api.extensions.ExtensionArray:
    """A column of dtype names, normalised; NA stays NA."""
    import pandas as pd  # here: advisor compare and the command-line help use this module without pandas
    import pyarrow as pa

    # A million rows hold a handful of distinct dtypes: normalise the distinct ones only, and spread
    # them by Arrow (an object per row made into pandas strings cost 0.09 s per million rows).
    codes, uniques = pd.factorize(values)
    names = pa.array([normalise_dtype(str(u)) for u in uniques], type=pa.large_string())
    return pd.arrays.ArrowStringArray(names.take(pa.array(codes, mask=codes < 0)))


_NUMPY_TO_GE_DTYPE = {
    "float16": "DT_FLOAT16", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "bfloat16": "DT_BF16",
    "int8": "DT_INT8", "uint8": "DT_UINT8", "int16": "DT_INT16", "int32": "DT_INT32",
    "int64": "DT_INT64", "bool": "DT_BOOL",
}


def ge_dtype_name(numpy_name: str) -> str:
    """The GE dtype name msaccucmp prints for a numpy dtype: float16 -> ``DT_FLOAT16``."""
    return _NUMPY_TO_GE_DTYPE.get(numpy_name, f"DT_{numpy_name.upper()}")
