"""Build config files as written: JSON, else YAML, read into a mapping of knob names to values. The
one reader of config files, for the build config (build_config.py) and the AMCT config it names
(quant_config.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputFormatError
from ..inputfiles import MAX_SETTINGS_BYTES, read_input_text
from ..nesting import loads_json
from ..yamlfile import parse_yaml


def read_build_config(path: Path) -> dict[str, Any]:
    """The config file as a mapping (JSON, else YAML); InputFormatError names what is wrong."""
    path = Path(path)
    text = read_input_text(path, max_bytes=MAX_SETTINGS_BYTES, what="build config")
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        data = loads_json(text, path, InputFormatError)
    else:
        data = parse_yaml(text, path, InputFormatError)
    if not isinstance(data, dict):
        raise InputFormatError("a build config is a mapping of knob names to values", path=path)
    return data
