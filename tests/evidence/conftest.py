"""Real network inputs (the committed scenarios' dumps) for the probe tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SCENARIOS


def scenario_input(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(target, golden) network input of a committed scenario."""
    directory = SCENARIOS / name
    (target,) = (directory / "target").glob("Data.*.npy")
    (golden,) = [p for p in (directory / "golden").glob("*.npy")]
    return np.load(target), np.load(golden)


@pytest.fixture
def photo() -> np.ndarray:
    """MTCNN P-Net's golden input: the astronaut photo, 1x3x96x96, normalised (x - 127.5) / 128."""
    return scenario_input("clean_bf16__mtcnn_pnet__mixed_bf16__s0")[1]


@pytest.fixture
def pixels(photo) -> np.ndarray:
    """The same photo as raw 0..255 pixel values."""
    return photo * 128 + 127.5


def path_of(name: str) -> Path:
    return SCENARIOS / name
