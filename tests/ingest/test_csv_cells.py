"""Number and text cells read column-wise by Arrow give what pandas gives cell by cell: the same
float64 bits for every printed form of a number, the same words, the same NA."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from msprobe_samples import CURRENT_HEADER, CURRENT_ROWS

from advisor.ingest.csv_cells import NO_VALUE, map_distinct, numbers_and_words, read_text_cells, text_column

REALTOOL = Path(__file__).resolve().parents[1] / "data" / "realtool"


def printed_numbers(count: int, seed: int = 0) -> list[str]:
    """Numbers as tools print them: repr, %.17g, %.6g, long fixed, %e, %E, over 60 decades."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(count) * 10.0 ** rng.integers(-30, 30, count)
    forms = ("{!r}", "{:.17g}", "{:.6g}", "{:.25f}", "{:.3e}", "{:.12E}")
    texts = [forms[i % len(forms)].format(float(v)) for i, v in enumerate(values)]
    return texts + ["0", "-0", "119", "007", "1.", ".5", "-.5e3", "1e308", "1e309", "4.9e-324",
                    "2.2250738585072011e-308", "123456789012345678901234567890"]


def test_plain_numbers_parse_to_the_same_bits_as_pandas():
    texts = printed_numbers(60_000)
    arrow = pd.Series(texts, dtype="string[pyarrow]")
    values, words = numbers_and_words(arrow)
    expected = pd.to_numeric(pd.Series(texts, dtype=object)).to_numpy(dtype=np.float64)
    assert words is None
    assert np.array_equal(values.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("storage", ["pyarrow", "python"])
def test_words_percentages_and_na_read_alike_in_either_storage(storage):
    cells = pd.Series(["1.5", " 2 ", "inf", "-inf", "Nan", "N/A", None, "4460.48%", "unsupported", "True", "mean",
                       "shape unmatched", "1e-05"], dtype=f"string[{storage}]")
    values, words = numbers_and_words(cells, percent=True, no_value=NO_VALUE)
    assert np.array_equal(values, [1.5, 2.0, np.inf, -np.inf, np.nan, np.nan, np.nan, 44.6048, np.nan, np.nan,
                                   np.nan, np.nan, 1e-05], equal_nan=True)
    assert words.dropna().tolist() == ["True", "mean"]


# Cells written only with a number's bytes that are no plain number, each beside plain ones: the
# column is read from the bytes first, and such a cell must send it to the regular expression.
NUMBER_BYTES_NOT_A_NUMBER = ["1-2", "+", "-", ".", "e", "E5", "1e", "1e+", "--1", "+-1", "1..2", "1e5.5", ".e1",
                             "1.5e", "1.2.3", "e-", "++1"]


@pytest.mark.parametrize("odd", NUMBER_BYTES_NOT_A_NUMBER)
def test_number_shaped_cells_that_are_no_number_read_as_before(odd):
    texts = ["1.5", odd, "-.5e3", "+7", None, "12%", "-inf"]
    arrow = pd.Series(texts, dtype="string[pyarrow]")
    values, words = numbers_and_words(arrow, percent=True)
    python, python_words = numbers_and_words(arrow.astype("string[python]"), percent=True)
    assert np.array_equal(values, python, equal_nan=True)
    assert values[0] == 1.5 and values[2] == -500.0 and values[3] == 7.0 and values[5] == 0.12
    if odd == "-":   # a spreadsheet's no value
        assert words is None and python_words is None
    else:
        assert words.tolist() == python_words.tolist() and words.iat[1] == odd


def test_number_shapes_read_each_cell_by_its_own_bytes():
    """A null slot may hold bytes (Arrow leaves them undefined) and a slice starts inside the buffers:
    each cell is judged on its own bytes only."""
    import pyarrow as pa

    from advisor.ingest.arrow_text import number_shaped

    data = b"1x2-3e4" + b"1.5%" + b"7"
    offsets = np.array([0, 1, 2, 3, 7, 11, 11, 12], dtype=np.int64)   # "1", null "x", "2", "-3e4", "1.5%", "", "7"
    validity = np.packbits(np.array([1, 0, 1, 1, 1, 1, 1], dtype=bool), bitorder="little")
    column = pa.Array.from_buffers(pa.large_string(), 7, [pa.py_buffer(validity), pa.py_buffer(offsets.tobytes()),
                                                          pa.py_buffer(data)])
    assert number_shaped(column).tolist() == [True, False, True, True, False, False, True]
    assert number_shaped(column.slice(2, 4)).tolist() == [True, True, False, False]


def test_distinct_texts_map_the_same_from_arrow_and_from_python_strings():
    path = next((REALTOOL / "msprobe_argument_mismatch__mlp__dropout_p__mix_statistics").glob("*.csv"))
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    assert frame["NPU Dtype"].dtype.storage == "pyarrow"
    for header in ("NPU Name", "NPU Dtype", "NPU Tensor Shape", "Result"):
        arrow = text_column(frame[header], NO_VALUE)
        python = text_column(frame[header].astype("string[python]"), NO_VALUE)
        pd.testing.assert_series_equal(arrow, python)
        assert arrow.dtype == "string"
    lowered = map_distinct(frame["NPU max"], str.lower)
    assert lowered.isna().equals(frame["NPU max"].isna())


def test_the_cells_read_hold_nothing_in_the_scratch_pool():
    """The blocks are parsed in a pool that keeps what it frees; what the read keeps must live outside
    it, or the pool's heap holds every freed block around it for the rest of the run."""
    import pyarrow as pa

    from advisor.memory import scratch_pool

    path = next((REALTOOL / "msprobe_argument_mismatch__mlp__dropout_p__mix_statistics").glob("*.csv"))
    default = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())   # as advisor's command line sets it
    try:
        before = scratch_pool().bytes_allocated()
        cells, _ = read_text_cells(path, "utf-8")
        assert cells["NPU Name"].dtype.storage == "pyarrow" and len(cells) > 10
        assert scratch_pool().bytes_allocated() == before
    finally:
        pa.set_memory_pool(default)


# msprobe's stack texts, which the reader never uses; the sample's first stack spans two lines.
UNUSED = frozenset({"NPU_Stack_Info", "Requires_grad Consistent"})


@pytest.mark.parametrize("encoding", ["utf-8", "gbk"])  # pyarrow reads UTF-8; pandas reads the rest
def test_unused_columns_are_left_out_yet_their_newlines_and_cells_still_count(write_result, encoding):
    rows = [*CURRENT_ROWS, "", ",,,,,,,,,,,,,,,,,,,,,,,,,\"['stack only']\""]  # a row that only has a stack
    path = write_result(CURRENT_HEADER, rows, encoding=encoding)
    everything, lines = read_text_cells(path, encoding)
    kept, kept_lines = read_text_cells(path, encoding, unused=UNUSED)
    assert not UNUSED & set(kept.columns)
    pd.testing.assert_frame_equal(kept, everything.drop(columns=sorted(UNUSED)))
    assert list(kept_lines) == list(lines) == [2, 4, 5, 7, 9, 11]
    assert kept["NPU Name"].isna().tolist() == [False] * 5 + [True]


EDGE_CASES = ["plain", " lead", "trail ", "\tTab", "cr\r", "\nlf", "in side", "", None, "中文 ", "\u3000wide",
              "wide\u3000", "é", " ", "a\n\nb", "x\x0b"]


@pytest.mark.parametrize("window", [slice(None), slice(1, None), slice(3, 9), slice(6, 7), slice(8, 9), slice(0, 0)])
def test_edge_spaces_are_found_from_the_buffers_as_a_regular_expression_finds_them(window):
    import pyarrow as pa
    import pyarrow.compute as pc

    from advisor.ingest.arrow_text import has_edge_space

    every = pa.array(EDGE_CASES, type=pa.large_string())
    for texts in (every, pa.array([t for t in EDGE_CASES if t is None or t.strip(" \t\r\n") == t],
                                  type=pa.large_string())):
        column = texts[window]   # a slice keeps the parent's buffers, from its offset
        expected = bool(pc.any(pc.match_substring_regex(column, r"^[ \t\r\n]|[ \t\r\n]$")).as_py())
        assert has_edge_space(column) == expected, column.to_pylist()
