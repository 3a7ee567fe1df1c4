"""`advisor tensor` and `advisor diff` handed a file that is not a tensor: exit 2 and one line that
names the file and says what it is, never an internal error or a message about pickles."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from advisor.cli import main
from advisor.filekind import sniff

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_CSV = REPO / "examples" / "crepe_tiny_bn_fold" / "result_20240506043136.csv"


def png_bytes() -> bytes:
    """A real 1x1 PNG (signature, IHDR, IDAT, IEND with their CRCs), as an image editor writes it."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    header = (1).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
            + chunk(b"IEND", b""))


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


def test_a_comparison_csv_is_named_as_such_with_the_commands_that_read_it(tmp_path, capsys):
    assert main(["tensor", str(EXAMPLE_CSV)]) == 2
    line = one_error_line(capsys)
    assert str(EXAMPLE_CSV) in line and "is a comparison CSV (msaccucmp" in line and "not a tensor" in line
    assert "advisor run" in line and "advisor ops" in line


def test_a_png_renamed_npy_is_called_an_image_not_a_pickle(tmp_path, capsys):
    fake = tmp_path / "conv1.output.0.npy"
    fake.write_bytes(png_bytes())
    golden = tmp_path / "golden.npy"
    np.save(golden, np.ones((2, 3), np.float32))
    assert main(["diff", str(golden), str(fake)]) == 2
    line = one_error_line(capsys)
    assert f"{fake}: is a PNG image, not a tensor" in line and "pickle" not in line


@pytest.mark.parametrize(("content", "said"), [
    (b"SQLite format 3\x00" + bytes(100), "is an SQLite database"),
    (b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00}\x94.", "is a Python pickle"),
    (b'{"task": "tensor", "data": {}}', "is a JSON file"),
    ("op,值\n1,2\n".encode("gbk"), "is a CSV table"),
    (bytes(range(1, 256)) * 4, "is a binary file"),
    (b"", "is an empty file"),
])
def test_other_files_say_what_they_are(tmp_path, capsys, content, said):
    path = tmp_path / "x.npy"
    path.write_bytes(content)
    assert main(["tensor", str(path)]) == 2
    assert f"{path}: {said}" in one_error_line(capsys)


def test_real_tensors_and_text_exports_still_load(tmp_path, capsys):
    array = np.arange(12, dtype=np.float16).reshape(3, 4)
    np.save(tmp_path / "a.npy", array)
    assert main(["tensor", str(tmp_path / "a.npy"), "--txt", str(tmp_path / "a.csv")]) == 0
    assert sniff(tmp_path / "a.npy").name == "npy" and sniff(tmp_path / "a.csv").name == "tensor-text"
    assert main(["diff", str(tmp_path / "a.npy"), str(tmp_path / "a.csv"), "--no-probes"]) == 0
    assert "allclose: yes" in capsys.readouterr().out


def test_a_dump_folder_with_an_image_in_it_names_the_image(tmp_path, capsys):
    golden, target = tmp_path / "golden", tmp_path / "target"
    for folder in (golden, target):
        folder.mkdir()
    np.save(golden / "conv1.0.1714987110000066.npy", np.ones(4, np.float32))
    (target / "Conv2D.conv1.5.0.1714987410000641.output.0.npy").write_bytes(png_bytes())
    shutil.copy(golden / "conv1.0.1714987110000066.npy", golden / "relu1.0.1714987110000067.npy")
    code = main(["compare", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "r.csv"), "-q"])
    assert code == 2
    assert "is a PNG image, not an .npy dump" in one_error_line(capsys)
