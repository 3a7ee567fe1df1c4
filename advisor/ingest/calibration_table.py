"""Calibrated activation ranges as the quantisation tools write them, read into tensor -> (low, high).

- ONNX Runtime: the calibration cache ``create_calibrator(...).compute_data()`` gives, as
  ``save_tensors_data`` or ``write_calibration_table`` write it (``calibration.json``:
  ``{"CLS": "TensorsData", "data": {name: {"lowest": {"data": [..]}, "highest": {"data": [..]}}}}``),
  keyed by the ONNX value names; and its plain ``calibration.cache`` (``name max`` per line: a
  symmetric range).
- Ascend AMCT: the record file (protobuf text of ``ScaleOffsetRecord``: ``record { key: LAYER value
  { scale_d: S offset_d: O ... } }``); the layer's input is quantised as q = round(x / S) + O in int8,
  so its range is [S * (-128 - O), S * (127 - O)], keyed ``LAYER:input:0``.
- Any tool: YAML or JSON ``ranges: {tensor: [low, high]}``.

The format is told from the content. A bad entry is one line naming the file and the entry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputFormatError
from ..graph.protobuf_text import ProtobufTextError, many, one, parse
from ..inputfiles import read_input
from ..nesting import loads_json
from ..yamlfile import load_yaml

INT8_LOW, INT8_HIGH = -128, 127
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class CalibrationTable:
    ranges: dict[str, tuple[float, float]]     # tensor -> calibrated (low, high)
    format: str                                # onnxruntime-json | onnxruntime-cache | amct-record | ranges
    source: Path


def read_calibration_table(path: str | Path) -> CalibrationTable:
    path = Path(path)
    text = _text(path)
    head = text.lstrip()[:1]
    if head == "{":
        document = loads_json(text, path, InputFormatError)
        if isinstance(document, dict) and isinstance(document.get("data"), dict):
            return CalibrationTable(_ort_json(document["data"], path), "onnxruntime-json", path)
        return CalibrationTable(_ranges(document, path), "ranges", path)
    if "record" in text[:4096] and ("scale_d" in text or "{" in text):
        return CalibrationTable(_amct(text, path), "amct-record", path)
    if text.lstrip().startswith("ranges"):
        return CalibrationTable(_ranges(load_yaml(path, InputFormatError), path), "ranges", path)
    return CalibrationTable(_ort_cache(text, path), "onnxruntime-cache", path)


def _text(path: Path) -> str:
    data = read_input(path, max_bytes=MAX_BYTES, what="calibration table")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputFormatError("not UTF-8 text (a binary calibration table: give its JSON or text form)",
                               path=path) from None


def _pair(low: Any, high: Any, path: Path, field: str) -> tuple[float, float]:
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high)) \
            or low > high:
        raise InputFormatError(f"a range is two finite numbers, low <= high, not [{low!r}, {high!r}]"[:200],
                               path=path, field=field)
    return float(low), float(high)


def _ort_json(data: dict[str, Any], path: Path) -> dict[str, tuple[float, float]]:
    def bound(entry: Any, key: str, name: str) -> float:
        value = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(value, dict):
            value = value.get("data")
        if isinstance(value, list):
            value = min(value) if key == "lowest" else max(value) if value else None
        if value is None:
            raise InputFormatError(f"no '{key}' for this tensor", path=path, field=f"data.{name}.{key}")
        return value
    return {str(name): _pair(bound(entry, "lowest", name), bound(entry, "highest", name), path, f"data.{name}")
            for name, entry in data.items()}


def _ort_cache(text: str, path: Path) -> dict[str, tuple[float, float]]:
    ranges = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("TRT-"):
            continue
        name, _, value = line.rstrip().rpartition(" ")
        try:
            bound = abs(float(value))
        except ValueError:
            bound = math.nan
        if not name or not math.isfinite(bound):
            raise InputFormatError("expected 'TENSOR MAX' (an ONNX Runtime calibration.cache line), a JSON or "
                                   "YAML ranges file, or an AMCT record", path=path, line=number)
        ranges[name] = (-bound, bound)
    return ranges


def _amct(text: str, path: Path) -> dict[str, tuple[float, float]]:
    try:
        document = parse(text)
    except ProtobufTextError as exc:
        raise InputFormatError(f"not an AMCT record (protobuf text): {exc}", path=path) from None
    ranges = {}
    for i, entry in enumerate(many(document.get("record"))):
        key, value = one(entry.get("key")) if isinstance(entry, dict) else None, \
            one(entry.get("value")) if isinstance(entry, dict) else None
        if not isinstance(key, str) or not isinstance(value, dict):
            raise InputFormatError("a record entry is {key: LAYER value {scale_d, offset_d}}", path=path,
                                   field=f"record[{i}]")
        scale, offset = one(value.get("scale_d")), one(value.get("offset_d"), 0)
        if scale is None:
            continue                    # a weight-only layer: no activation range
        if not isinstance(scale, (int, float)) or scale <= 0 or not isinstance(offset, int):
            raise InputFormatError("scale_d must be a positive number and offset_d an integer", path=path,
                                   field=f"record[{i}] ({key})")
        ranges[f"{key}:input:0"] = (scale * (INT8_LOW - offset), scale * (INT8_HIGH - offset))
    return ranges


def _ranges(document: Any, path: Path) -> dict[str, tuple[float, float]]:
    table = document.get("ranges") if isinstance(document, dict) else None
    if not isinstance(table, dict):
        raise InputFormatError("expected 'ranges: {tensor: [low, high]}', an ONNX Runtime calibration cache or an "
                               "AMCT record", path=path)
    out = {}
    for name, pair in table.items():
        if not isinstance(pair, list) or len(pair) != 2:
            raise InputFormatError("a range is [low, high]", path=path, field=f"ranges.{name}")
        out[str(name)] = _pair(pair[0], pair[1], path, f"ranges.{name}")
    return out
