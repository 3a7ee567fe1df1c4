"""A dump's fingerprint is the standard CRC-32 and Adler-32 of its data bytes, however it is read.

The values are what any zlib computes (Python's own ``zlib`` module here), so a fingerprint does not
depend on the library that computed it, nor on the pieces the data came in.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from advisor.tensors.lineage import Fingerprinter, fingerprint, fingerprint_array


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int64])
def test_a_fingerprint_is_the_crc32_and_adler32_of_the_data_bytes(tmp_path, dtype):
    values = (np.random.default_rng(3).standard_normal((3, 5, 7001)) * 100).astype(dtype)
    np.save(tmp_path / "t.npy", values)
    data = values.tobytes()
    mark = fingerprint(tmp_path / "t.npy")
    assert (mark.crc32, mark.adler32) == (zlib.crc32(data), zlib.adler32(data))


def test_pieces_of_any_size_give_the_fingerprint_of_the_whole():
    values = np.random.default_rng(4).standard_normal(100_003).astype(np.float32)
    printer = Fingerprinter(values.dtype)
    for start in range(0, values.size, 4097):
        printer.update(values[start:start + 4097])
    assert printer.result() == fingerprint_array(values)
