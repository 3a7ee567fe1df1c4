"""The remedy's words and the files beside it use the same key names: MagicMind spells per-channel
weights ``per_axis``, AMCT ``channel_wise``, ONNX Runtime ``per_channel=True``. A summary that said
``per_channel`` above a MagicMind build_config.json saying ``per_axis`` sent users hunting for a key
that does not exist. Each test reads the generated files."""

from __future__ import annotations

import re

import pytest

from advisor.remedy import remedy_for
from advisor.remedy.backends import SPELLINGS

from .conftest import quant_findings

KEY_VALUE = re.compile(r"([\w\"]+)=([\w.\"]+)")


def _normalised(text: str) -> str:
    """A file's text with quotes and spaces gone and ':' as '=' (JSON, AMCT's proto text, Python)."""
    return re.sub(r"\s+", "", text).replace('"', "").replace(":", "=")


# Settings every backend writes as code (a calibrator call, a percentile argument), not as a key.
IN_CODE = ("activation_calibration", "activation_percentile")


@pytest.mark.parametrize("backend", sorted(SPELLINGS))
def test_one_backend_summary_names_the_keys_its_files_write(backend: str) -> None:
    root, second = quant_findings()
    remedy, _ = remedy_for(root, [root, second], (backend,))
    step = remedy.steps[0]
    files = _normalised("\n".join(step.files[backend].values()))
    quoted = [(key.strip('"'), value) for key, value in KEY_VALUE.findall(step.summary["en"]) if key not in IN_CODE]
    assert len(quoted) >= 2
    for key, value in quoted:
        assert f"{key}={value}" in files, (key, value, files)
    assert step.summary["zh"].count("=") == step.summary["en"].count("=")


def test_magicmind_never_reads_per_channel() -> None:
    root, second = quant_findings()
    remedy, _ = remedy_for(root, [root, second], ("magicmind",))
    step = remedy.steps[0]
    assert "per_axis" in step.summary["en"] and "per_channel" not in step.summary["en"]
    assert '"weight_quant_granularity": "per_axis"' in step.files["magicmind"]["build_config.json"]


def test_several_backends_each_say_their_own_keys() -> None:
    root, second = quant_findings()
    remedy, _ = remedy_for(root, [root, second])
    step = remedy.steps[0]
    for label, backend in (("MagicMind", "magicmind"), ("AMCT", "ascend"), ("ONNX Runtime", "onnxruntime")):
        part = re.search(rf"{label}: ([^;)]+)", step.summary["en"]).group(1)
        files = _normalised("\n".join(step.files[backend].values()))
        for key, value in KEY_VALUE.findall(part):
            assert f"{key.strip(chr(34))}={value}" in files, (backend, key, value)
