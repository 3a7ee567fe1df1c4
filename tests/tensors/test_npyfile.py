"""An .npy dump's data seen through maps of a window at a time: every element, in order, whatever the
window, the chunk or the header's length; read into buffers where a file cannot be mapped."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from advisor.errors import InputFormatError
from advisor.tensors import npyfile
from advisor.tensors.npyfile import NpyFile
from advisor.tensors.running import file_sums, pair_sums

RNG = np.random.default_rng(11)


@pytest.fixture
def dump(tmp_path):
    """Float16 values whose data starts mid-page (a long header: numpy pads it to 64 bytes, not 4096)."""
    values = RNG.standard_normal((7, 1001)).astype(np.float16)
    path = tmp_path / "t.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, values, version=(2, 0))
    return path, values


@pytest.mark.parametrize("window", [mmap.ALLOCATIONGRANULARITY, 3 * mmap.ALLOCATIONGRANULARITY, 1 << 26])
@pytest.mark.parametrize("chunk", [1, 999, 4096, 7007, 10_000])
def test_chunks_hand_over_every_element_in_order(dump, monkeypatch, window, chunk):
    path, values = dump
    monkeypatch.setattr(npyfile, "WINDOW", window)
    with NpyFile.open(path) as found:
        pieces = list(found.chunks(chunk))
        whole = found.read("target")
    assert found.offset % mmap.ALLOCATIONGRANULARITY != 0
    assert all(piece.size == chunk for piece in pieces[:-1]) and 0 < pieces[-1].size <= chunk
    assert np.array_equal(np.concatenate(pieces), values.reshape(-1))
    assert np.array_equal(whole, values.reshape(-1))


def test_a_file_that_cannot_be_mapped_is_read(dump, monkeypatch):
    path, values = dump

    def refused(*args, **kwargs):
        raise OSError(19, "No such device")           # what mmap says on a file system without it

    monkeypatch.setattr(npyfile.mmap, "mmap", refused)
    with NpyFile.open(path) as found:
        assert np.array_equal(np.concatenate(list(found.chunks(4096))), values.reshape(-1))


def test_a_pair_larger_than_whole_gives_the_numbers_of_the_arrays(tmp_path, monkeypatch):
    """Dumps over running.WHOLE elements are scanned twice through windows (ranges first): the sums
    are those of the arrays in memory, bit for bit."""
    from advisor.tensors import running

    monkeypatch.setattr(running, "WHOLE", 1 << 12)
    monkeypatch.setattr(npyfile, "WINDOW", 1 << 16)
    golden = RNG.standard_normal(50_003).astype(np.float32)
    target = (golden + 1e-3 * RNG.standard_normal(golden.size)).astype(np.float16)
    np.save(tmp_path / "t.npy", target)
    np.save(tmp_path / "g.npy", golden)
    with NpyFile.open(tmp_path / "t.npy") as target_file, NpyFile.open(tmp_path / "g.npy") as golden_file:
        from_files = file_sums(target_file, golden_file, chunk=4096, compiled=False)
    in_memory = pair_sums(target, golden, chunk=4096, compiled=False)
    assert vars(from_files) == vars(in_memory)


def test_a_dump_cut_short_is_refused_before_any_data_is_mapped(dump):
    path, _ = dump
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(InputFormatError, match="cut short"):
        NpyFile.open(path)
