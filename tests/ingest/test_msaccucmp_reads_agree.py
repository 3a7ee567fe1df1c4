"""The two reads of an msaccucmp result give the same table on every real file: pyarrow's fast read
(msaccucmp_arrow.py) and the exact C-parser read it gives way to (msaccucmp_exact.py).

The files are the ones real tools wrote (tests/data: ingest, realtool, msaccucmp_genuine, the
scenario corpus, realdata), so a difference in how the two parsers take
a cell (quoting, no-value words, ``*``, infinities, dtype spellings) shows up here.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from advisor.errors import InputFormatError
from advisor.ingest import msaccucmp, read_comparison
from advisor.ingest.msaccucmp_layout import CURRENT, LEGACY

REPO = Path(__file__).resolve().parents[2]
ROOTS = [REPO / "tests" / "data"]          # the scenarios, the vendor tables and tests/data/realdata


def _msaccucmp_files() -> list[Path]:
    found = []
    for root in ROOTS:
        for path in sorted(root.rglob("*.csv")) if root.is_dir() else ():
            head = path.read_bytes()[:4096].split(b"\n", 1)[0]
            if b"NPUDump" in head or b"LeftOp" in head or (b"Index" in head and b"CosineSimilarity" in head):
                found.append(path)
    return found


FILES = _msaccucmp_files()


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, arrow: bool) -> object:
    with monkeypatch.context() as patch:
        if not arrow:
            patch.setattr(msaccucmp, "read_arrow", lambda *args: None)
        try:
            return read_comparison(path)
        except InputFormatError as err:
            return str(err)


def test_the_corpus_has_msaccucmp_files():
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_arrow_and_exact_reads_agree(path, monkeypatch):
    fast = _read(path, monkeypatch, arrow=True)
    exact = _read(path, monkeypatch, arrow=False)
    if isinstance(exact, str) or isinstance(fast, str):
        assert fast == exact  # the same one-line error, or the same table
        return
    if exact.format not in (CURRENT, LEGACY):
        pytest.skip(f"read as {exact.format}")
    pd.testing.assert_frame_equal(fast.frame, exact.frame)
    assert (fast.present_metrics, fast.extra_metrics, fast.extra_columns, fast.warnings) == (
        exact.present_metrics, exact.extra_metrics, exact.extra_columns, exact.warnings)


def test_the_usual_file_takes_the_arrow_read(monkeypatch):
    """Most real files are read by pyarrow (else the test above compares the exact read with itself)."""
    taken = []
    original = msaccucmp.read_arrow
    monkeypatch.setattr(msaccucmp, "read_arrow", lambda *args: taken.append(original(*args) is not None) or None)
    for path in FILES:
        try:
            read_comparison(path)
        except InputFormatError:
            pass
    assert sum(taken) >= 0.8 * len(taken) > 0
