"""Our msaccucmp writer (advisor/compare/msaccucmp_csv.py, used by the scenario generator) against
the vendor's msaccucmp 26.2.0 run on the same dumps (tests/data/msaccucmp_genuine, see its
PROVENANCE.md). Needs no torch: both files are committed.

Where they still differ, on purpose or by the CPU route, the test says so: the genuine files have
no ``Address``/``OverFlow`` columns and no input rows (numpy target files, no overflow detection);
msaccucmp prints the numpy dtype (``float16``) where our writer prints the GE name
(``DT_FLOAT16``); its target-only ops were compared because the model JSON gave them no origin.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from advisor.compare import HEADER
from advisor.ingest import read_comparison

DATA = Path(__file__).resolve().parents[1] / "data"
GENUINE = sorted(p for p in (DATA / "msaccucmp_genuine").iterdir() if p.is_dir())
NUMBERS = ["CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
           "KullbackLeiblerDivergence", "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError",
           "MeanRelativeError"]


def _pair(directory: Path) -> pd.DataFrame:
    (genuine,) = directory.glob("result_*.csv")
    (ours,) = (DATA / "scenarios" / directory.name).glob("result_*.csv")
    read = {"dtype": str, "keep_default_na": False}
    g, o = pd.read_csv(genuine, **read), pd.read_csv(ours, **read)
    both = g.merge(o, on="TensorIndex", suffixes=("_g", "_o"))
    return both[both["GroundTruth_g"] != "*"]


@pytest.mark.parametrize("directory", GENUINE, ids=lambda p: p.name)
def test_header_is_ours_without_the_address_and_overflow_of_a_binary_dump(directory):
    (genuine,) = directory.glob("result_*.csv")
    header = genuine.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header == [c for c in HEADER if c not in ("Address", "OverFlow")]


@pytest.mark.parametrize("directory", GENUINE, ids=lambda p: p.name)
def test_cells_are_formatted_as_msaccucmp_formats_them(directory):
    rows = _pair(directory)
    assert len(rows) >= 8
    for column in ("Index", "GroundTruth", "Shape", "StandardDeviation", "CompareFailReason", "CosineSimilarity",
                   "RelativeEuclideanDistance"):
        assert (rows[f"{column}_g"] == rows[f"{column}_o"]).all(), column
    # msaccucmp reduces in the dump's float32, ours in float64: the 6th decimal may differ (its KL of
    # two equal distributions can print -0.000000 where ours prints 0.000000).
    for column in NUMBERS:
        genuine, ours = rows[f"{column}_g"].astype(float), rows[f"{column}_o"].astype(float)
        assert np.allclose(genuine, ours, rtol=1e-6, atol=2e-6), column
    assert set(rows["DataType_g"]) <= {"float16", "float32"} and set(rows["DataType_o"]) <= {"DT_FLOAT16", "DT_FLOAT"}


@pytest.mark.parametrize("directory", GENUINE, ids=lambda p: p.name)
def test_the_advisor_reads_the_genuine_file_as_it_reads_ours(directory):
    (genuine,) = directory.glob("result_*.csv")
    (ours,) = (DATA / "scenarios" / directory.name).glob("result_*.csv")
    g, o = read_comparison(genuine).frame, read_comparison(ours).frame
    g, o = g[g["io"] == "output"], o[(o["io"] == "output") & o["tensor_id"].isin(g["tensor_id"])]
    assert list(g["npu_dtype"].astype(str)) == list(o["npu_dtype"].astype(str))
