"""The quantisation and precision settings of a build config, read into one normalised form.

Tools spell the same decisions differently; the rules should not have to. Read from:

- MagicMind (``precision_config``, nested or flat): ``precision_mode`` (``qint8_mixed_float16``,
  ``qint8_mixed_float32``, ``force_float16``, ``force_float32``...), ``weight_quant_granularity``
  (``per_tensor``, ``per_channel``/``per_axis``), ``activation_quant_algo`` (``symmetric`` /
  ``asymmetric``).
- Ascend ATC ``precision_mode`` (``allow_fp32_to_fp16``, ``force_fp16``, ``allow_mix_precision``,
  ``allow_mix_precision_bf16``, ``must_keep_origin_dtype``, ``force_fp32``...), and an AMCT
  quantisation config (inline under ``amct``, or the file ``amct_config`` names, or the whole file):
  ``activation_offset`` (asymmetric activations), per layer ``quant_enable``,
  ``weight_quant_params.channel_wise``, ``activation_quant_params.act_algo`` (``ifmr``: a
  percentile search, ``hfmg``: a histogram MSE fit) and ``max_percentile``; ``skip_layers``.
- The generic form (docs/formats.md), which any other toolchain's settings can be written in::

      quantization:
        precision: int8                 # what quantised layers run in; others: float_precision
        float_precision: float16
        weight_only: false               # true: activations stay in float
        weights: {granularity: per_tensor, symmetric: true}
        activations: {symmetric: true, calibration: minmax, percentile: 99.99}
        layers: [MatMul_97]             # the quantised layers (default: every Conv/MatMul/Gemm)
        float_layers: [Softmax_12]      # layers kept in float
        ranges: {"MatMul_26:input:0": [-1.0, 1.0]}   # calibrated activation ranges

  ``quantized_layers`` and ``calibration: {algorithm, percentile, custom_ranges}`` at the top level
  are accepted too (what the scenario generator writes next to MagicMind's knobs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputFormatError
from .config_file import read_build_config

GRANULARITY = {"per_tensor": "per_tensor", "per-tensor": "per_tensor", "tensor": "per_tensor",
               "per_layer": "per_tensor", "per_channel": "per_channel", "per-channel": "per_channel",
               "per_axis": "per_channel", "channel": "per_channel"}
CALIBRATION = {"minmax": "minmax", "min_max": "minmax", "max": "minmax", "naive": "minmax", "linear": "minmax",
               "percentile": "percentile", "ifmr": "percentile", "kl": "kl", "entropy": "kl", "kld": "kl",
               "mse": "mse", "hfmg": "mse", "histogram": "mse"}
# precision_mode -> (precision of quantised layers or of the whole net, precision of the float layers)
PRECISION_MODES = {
    "qint8_mixed_float16": ("int8", "float16"), "qint8_mixed_float32": ("int8", "float32"),
    "qint16_mixed_float16": ("int16", "float16"), "qint16_mixed_float32": ("int16", "float32"),
    "force_float16": ("float16", "float16"), "force_float32": ("float32", "float32"),
    "force_fp16": ("float16", "float16"), "force_fp32": ("float32", "float32"),
    "allow_fp32_to_fp16": ("float16", "float16"), "allow_mix_precision": ("float16", "float16"),
    "allow_mix_precision_fp16": ("float16", "float16"), "allow_mix_precision_bf16": ("bfloat16", "bfloat16"),
    "must_keep_origin_dtype": ("float32", "float32"), "cube_fp16in_fp32out": ("float16", "float16"),
}
LOW_PRECISIONS = ("int8", "int16", "int4", "float16", "bfloat16")


@dataclass(frozen=True)
class QuantConfig:
    """What the build config says about precision and quantisation (None: not said). What the
    settings mean for the simulation and the ``config`` fact: advisor/evidence/quant_config.py."""

    precision: str | None = None            # int8, int16, float16, bfloat16, float32
    float_precision: str | None = None      # what the layers left in float run in
    weight_granularity: str | None = None   # per_tensor | per_channel
    weight_symmetric: bool | None = None
    activation_symmetric: bool | None = None
    calibration: str | None = None          # minmax | percentile | kl | mse
    percentile: float | None = None
    layers: tuple[str, ...] = ()            # quantised layers the config names
    float_layers: tuple[str, ...] = ()      # layers it keeps in float
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)   # tensor -> calibrated range
    calibration_table: str | None = None    # the file the ranges were read from, and its format
    weight_only: bool = False               # activations stay in float (weight-only int8)
    warnings: tuple[str, ...] = ()          # settings read but not understood

    @property
    def quantized(self) -> bool:
        return self.precision in ("int8", "int16", "int4")


def read_quant_config(raw: dict[str, Any], source: Path | None = None) -> QuantConfig:
    """The normalised settings of a build config mapping (InputFormatError names a bad value)."""
    values: dict[str, Any] = {}
    precision_config = raw.get("precision_config") if isinstance(raw.get("precision_config"), dict) else {}
    flat = {**raw, **precision_config}
    mode = flat.get("precision_mode")
    warnings: list[str] = []
    if mode is not None:
        precision = PRECISION_MODES.get(str(mode).lower())
        if precision:
            values["precision"], values["float_precision"] = precision
        else:
            warnings.append(f"precision_mode '{mode}' is not one advisor knows "
                            f"({', '.join(sorted(PRECISION_MODES))}): the build's precision is unknown, so no "
                            f"layer is taken as quantised unless an AMCT or 'quantization:' block says so")
    if flat.get("weight_quant_granularity") is not None:
        values["weight_granularity"] = _choice(flat["weight_quant_granularity"], GRANULARITY,
                                               "weight_quant_granularity", source)
    if flat.get("activation_quant_algo") is not None:
        values["activation_symmetric"] = _choice(flat["activation_quant_algo"],
                                                 {"symmetric": True, "asymmetric": False},
                                                 "activation_quant_algo", source)
    if flat.get("weight_only") is not None:
        values["weight_only"] = config_flag(flat["weight_only"], "weight_only", source)
    calibration = raw.get("calibration")
    if isinstance(calibration, str):            # the algorithm alone: calibration: percentile
        calibration = {"algorithm": calibration}
    if calibration is not None:
        values.update(_calibration(_mapping(calibration, "calibration", source), "calibration", source))
    if raw.get("quantized_layers") is not None:
        values["layers"] = _names(raw["quantized_layers"], "quantized_layers", source)
    amct = _amct(raw, source)
    if amct is not None:
        values.update(_amct_settings(amct, source))
    generic = raw.get("quantization")
    if generic is not None:
        if not isinstance(generic, dict):
            raise InputFormatError("'quantization' must be a mapping (docs/formats.md)", path=source,
                                   field="quantization")
        values.update(_generic(generic, source))
    if warnings and "precision" not in values:
        values["warnings"] = tuple(warnings)
    return QuantConfig(**values)


def _generic(block: dict[str, Any], source: Path | None) -> dict[str, Any]:
    known = {"precision", "float_precision", "weights", "activations", "layers", "float_layers", "ranges",
             "weight_only", "calibration_table"}
    unknown = sorted(set(block) - known)
    if unknown:
        raise InputFormatError(f"unknown key 'quantization.{unknown[0]}' (known: {', '.join(sorted(known))})",
                               path=source, field=f"quantization.{unknown[0]}")
    out: dict[str, Any] = {}
    for key in ("precision", "float_precision"):
        if block.get(key) is not None:
            out[key] = _choice(block[key], {p: p for p in (*LOW_PRECISIONS, "float32")}, f"quantization.{key}",
                               source)
    weights = _mapping(block.get("weights"), "quantization.weights", source)
    if weights.get("granularity") is not None:
        out["weight_granularity"] = _choice(weights["granularity"], GRANULARITY, "quantization.weights.granularity",
                                            source)
    if weights.get("symmetric") is not None:
        out["weight_symmetric"] = config_flag(weights["symmetric"], "quantization.weights.symmetric", source)
    activations = _mapping(block.get("activations"), "quantization.activations", source)
    if activations.get("symmetric") is not None:
        out["activation_symmetric"] = config_flag(activations["symmetric"], "quantization.activations.symmetric",
                                                  source)
    out.update(_calibration({"algorithm": activations.get("calibration"), "percentile": activations.get("percentile")},
                            "quantization.activations", source))
    if block.get("weight_only") is not None:
        out["weight_only"] = config_flag(block["weight_only"], "quantization.weight_only", source)
    if block.get("layers") is not None:
        out["layers"] = _names(block["layers"], "quantization.layers", source)
    if block.get("float_layers") is not None:
        out["float_layers"] = _names(block["float_layers"], "quantization.float_layers", source)
    if block.get("calibration_table") is not None:
        out.update(_calibration_table(block["calibration_table"], source))
    if block.get("ranges") is not None:      # written in the config: over the table's
        out["ranges"] = {**out.get("ranges", {}), **_ranges(block["ranges"], "quantization.ranges", source)}
    return out


def _calibration_table(value: Any, source: Path | None) -> dict[str, Any]:
    """``calibration_table: FILE`` (relative to the config): the ranges the tool calibrated, as it wrote them
    (advisor/ingest/calibration_table.py)."""
    from .calibration_table import read_calibration_table

    if not isinstance(value, str) or not value.strip():
        raise InputFormatError("'quantization.calibration_table' names a file", path=source,
                               field="quantization.calibration_table")
    path = Path(value)
    if not path.is_absolute() and source is not None:
        path = Path(source).parent / path
    table = read_calibration_table(path)
    return {"ranges": table.ranges, "calibration_table": f"{path} ({table.format})"}


def _calibration(block: dict[str, Any], where: str, source: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    algorithm = block.get("algorithm")
    if algorithm is not None:
        out["calibration"] = _choice(algorithm, CALIBRATION, f"{where}.algorithm", source)
    if block.get("percentile") is not None:
        out["percentile"] = _percentile(block["percentile"], f"{where}.percentile", source)
    if block.get("custom_ranges") is not None:
        out["ranges"] = _ranges(block["custom_ranges"], f"{where}.custom_ranges", source)
    return out


def _amct(raw: dict[str, Any], source: Path | None) -> dict[str, Any] | None:
    """The AMCT config: inline ``amct: {...}``, the file ``amct_config`` names, or the mapping itself."""
    if isinstance(raw.get("amct"), dict):
        return raw["amct"]
    path_text = raw.get("amct_config")
    if isinstance(path_text, str):
        path = Path(path_text)
        if not path.is_absolute() and source is not None:
            path = Path(source).parent / path
        if not path.is_file():
            raise InputFormatError(f"the AMCT config '{path_text}' does not exist", path=source, field="amct_config")
        return read_build_config(path)
    if "activation_offset" in raw or any(isinstance(v, dict) and "quant_enable" in v for v in raw.values()):
        return raw
    return None


def _amct_settings(amct: dict[str, Any], source: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {"precision": "int8"}
    if amct.get("activation_offset") is not None:
        out["activation_symmetric"] = not config_flag(amct["activation_offset"], "activation_offset", source)
    layers, skipped, channel_wise, algos, percentiles = [], [], set(), set(), set()
    for name, spec in amct.items():
        if not isinstance(spec, dict) or "quant_enable" not in spec:
            continue
        if not config_flag(spec["quant_enable"], f"{name}.quant_enable", source):
            skipped.append(str(name))
            continue
        layers.append(str(name))
        weights = _mapping(spec.get("weight_quant_params"), f"{name}.weight_quant_params", source)
        if weights.get("channel_wise") is not None:
            channel_wise.add(config_flag(weights["channel_wise"], f"{name}.weight_quant_params.channel_wise", source))
        activations = _mapping(spec.get("activation_quant_params"), f"{name}.activation_quant_params", source)
        if activations.get("act_algo") is not None:
            algos.add(_choice(activations["act_algo"], CALIBRATION, f"{name}.activation_quant_params.act_algo",
                              source))
        if activations.get("max_percentile") is not None:
            percentiles.add(_percentile(activations["max_percentile"],
                                        f"{name}.activation_quant_params.max_percentile", source))
        if activations.get("with_offset") is not None:
            out["activation_symmetric"] = not config_flag(activations["with_offset"],
                                                    f"{name}.activation_quant_params.with_offset", source)
    skipped += _names(amct.get("skip_layers") or [], "skip_layers", source)
    if layers:
        out["layers"] = tuple(layers)
    if skipped:
        out["float_layers"] = tuple(skipped)
    if channel_wise:   # mixed settings: the weaker one is what can hurt
        out["weight_granularity"] = "per_channel" if channel_wise == {True} else "per_tensor"
    if len(algos) == 1:
        out["calibration"] = algos.pop()
    if percentiles:
        out["percentile"] = min(percentiles)
    return out


def _choice(value: Any, allowed: dict[str, Any], name: str, source: Path | None) -> Any:
    key = str(value).strip().lower()
    if key not in allowed:
        raise InputFormatError(f"'{name}' is {value!r}; expected one of {', '.join(sorted(set(allowed)))}",
                               path=source, field=name)
    return allowed[key]


def config_flag(value: Any, name: str, source: Path | None) -> bool:
    """A true/false setting of a build config (YAML/JSON booleans, or "true"/"false" text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InputFormatError(f"'{name}' must be true or false, not {value!r}", path=source, field=name)


def _percentile(value: Any, name: str, source: Path | None) -> float:
    """A percentile given as 99.99 or as AMCT's fraction 0.9999."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 100:
        raise InputFormatError(f"'{name}' must be a percentile in (0, 100] or a fraction in (0, 1], not {value!r}",
                               path=source, field=name)
    return float(value) * 100.0 if value <= 1 else float(value)


def _mapping(value: Any, name: str, source: Path | None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputFormatError(f"'{name}' must be a mapping", path=source, field=name)
    return value


def _names(value: Any, name: str, source: Path | None) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputFormatError(f"'{name}' must be a list of layer names", path=source, field=name)
    return tuple(v.strip() for v in value)


def _ranges(value: Any, name: str, source: Path | None) -> dict[str, tuple[float, float]]:
    if not isinstance(value, dict):
        raise InputFormatError(f"'{name}' must map tensor names to [low, high]", path=source, field=name)
    out = {}
    for tensor, pair in value.items():
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
                or pair[0] > pair[1]):
            raise InputFormatError(f"'{name}.{tensor}' must be [low, high], finite, with low <= high", path=source,
                                   field=f"{name}.{tensor}")
        out[str(tensor)] = (float(pair[0]), float(pair[1]))
    return out
