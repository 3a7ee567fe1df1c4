from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.cli import main
from advisor.errors import InputFormatError
from advisor.inspect.tensor import summarise_tensor
from advisor.inspect.tensor_text import read_text, write_text

from .conftest import LAYOUT


def test_statistics_nonfinite_and_fp16_range():
    x = np.array([[1.0, -2.0, np.nan], [np.inf, -np.inf, 70000.0], [1e-6, 0.0, 1e-9]], dtype=np.float32)
    s = summarise_tensor(x, bins=4)
    assert s.shape == [3, 3] and s.dtype == "float32" and s.size == 9
    assert (s.nan, s.posinf, s.neginf, s.zeros) == (1, 1, 1, 1)
    assert s.min == -2.0 and s.max == pytest.approx(70000.0)
    assert s.fp16["overflow"] == 1 and not s.fp16["fits"]
    assert s.fp16["subnormal"] == 1 and s.fp16["underflow_to_zero"] == 1
    assert s.fp16["range_used"] > 1.0
    assert sum(s.histogram.counts) == 6 and len(s.histogram.edges) == 5


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_text_export_round_trip(tmp_path, dtype):
    x = (np.arange(24).reshape(2, 3, 4) * 0.37).astype(dtype)
    back = read_text(write_text(x, tmp_path / "x.txt"))
    assert back.dtype == x.dtype and back.shape == x.shape
    np.testing.assert_array_equal(back, x)


def test_text_without_header_is_rejected(tmp_path):
    (tmp_path / "bad.txt").write_text("1\n2\n")
    with pytest.raises(InputFormatError, match="header"):
        read_text(tmp_path / "bad.txt")


def test_cli_on_dump_by_op_name_with_export(tmp_path, capsys):
    out = tmp_path / "images.txt"
    assert main(["tensor", "images", "--dumps", str(LAYOUT / "target"), "--txt", str(out)]) == 0
    text = capsys.readouterr().out
    assert "shape [1, 3, 96, 96]" in text and "histogram" in text and "█" in text
    assert out.read_text().startswith("# advisor tensor shape=[1, 3, 96, 96] dtype=float32")
    original = np.load(next((LAYOUT / "target").glob("*.npy")))
    np.testing.assert_array_equal(read_text(out), original)
    assert main(["tensor", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shape"] == [1, 3, 96, 96] and data["nan"] == 0 and data["fp16"]["fits"]


def test_cli_errors_exit_2(tmp_path, capsys):
    assert main(["tensor", str(tmp_path / "missing.npy")]) == 2
    assert main(["tensor", "nonexistent_op", "--dumps", str(LAYOUT / "target")]) == 2
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    assert main(["tensor", str(tmp_path / "junk.npy")]) == 2
    err = capsys.readouterr().err
    assert err.count("advisor: error:") == 3
