"""Real comparison CSVs from public projects (/work/shared/realdata, see its SOURCES.md).

There is no public msaccucmp result among them: every CSV there is an msprobe/ptdbg compare
result, a format whose reader comes later. Until then they must be refused with the clear
"unknown header" message listing the formats we do read, never misread as msaccucmp.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.errors import InputFormatError
from advisor.ingest import read_comparison

REALDATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "realdata"
CSVS = sorted(REALDATA.glob("*/*.csv")) if REALDATA.is_dir() else []


@pytest.mark.skipif(not REALDATA.is_dir(), reason=f"real data not found at {REALDATA}")
def test_realdata_has_comparison_csvs():
    assert CSVS, f"no CSV under {REALDATA}"


@pytest.mark.skipif(not CSVS, reason=f"no real comparison CSVs at {REALDATA}")
@pytest.mark.parametrize("path", CSVS, ids=[p.name for p in CSVS])
def test_msprobe_compare_csv_is_refused_with_the_expected_formats(path):
    assert path.read_text(encoding="utf-8").startswith("NPU Name,Bench Name,")
    with pytest.raises(InputFormatError) as caught:
        read_comparison(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1: unknown header 'NPU Name,Bench Name,")
    assert "expected one of: msaccucmp (Index, OpType, NPUDump," in message
    assert "msaccucmp-legacy (Index, LeftOp, RightOp, TensorIndex" in message
