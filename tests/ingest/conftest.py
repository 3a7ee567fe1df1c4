"""Fixtures for the ingest tests. The sample texts live in msaccucmp_samples.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from msaccucmp_samples import csv_text

WriteResult = Callable[..., Path]


@pytest.fixture
def write_result(tmp_path: Path) -> WriteResult:
    """write_result(header, rows, encoding="utf-8", name=..., newline="\\n") -> path of a result CSV."""

    def write(header: str, rows: list[str], encoding: str = "utf-8",
              name: str = "result_20240521093000.csv", newline: str = "\n") -> Path:
        path = tmp_path / name
        path.write_bytes(csv_text(header, rows, newline).encode(encoding))
        return path

    return write
