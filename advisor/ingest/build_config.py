"""Build configs (MagicMind and ATC knobs, docs/build-configs.md) read and checked into a ``BuildConfig``;
advisor/evidence/config.py turns it into the one ``config`` fact.

Precision and quantisation settings are normalised by :mod:`advisor.ingest.quant_config`.

What the compiler was told decides what a mismatching input means: a model built with
``insert_bn_before_firstnode`` (MagicMind) or an AIPP with ``mean_chn``/``var_reci_chn`` (ATC)
normalises its input itself, so preprocessing that normalises too is the "duplicate mean/std" bug;
AIPP's ``rbuv_swap_switch`` swaps R and B; ``convert_input_layout`` expects another layout.

Accepted: a JSON or YAML mapping of knobs as the tools name them, flat or MagicMind-style
(``precision_config: {precision_mode: ...}``), with ``tool: atc|magicmind`` optional (guessed
from the knobs). An ATC ``insert_op_conf`` AIPP file is read when it sits where the config says
(relative paths are relative to the config file).

MagicMind's knobs in the form ``config.parse_from_string`` takes them (docs/build-configs.md):
``insert_bn_before_firstnode {"0": {"mean": [...], "var": [...]}}`` (network input index -> per
channel mean and variance, var = std²; the older ``true`` with top-level ``mean``/``std`` is read
too), ``convert_input_layout {"0": {"src": "NCHW", "dst": "NHWC"}}``. A key a MagicMind config does
not have is a warning (:func:`config_warnings`), a bad value an InputFormatError naming the field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputFormatError
from ..inputfiles import MAX_SETTINGS_BYTES, read_input_text
from ..text import suggest
from .quant_config import QuantConfig, config_flag, read_quant_config

MAGICMIND_KNOBS = frozenset({"insert_bn_before_firstnode", "convert_input_layout", "precision_config", "input_dims",
                             "graph_shape_mutable", "onnx", "archs", "convert_output_layout",
                             "cross_compile_toolchain_path", "compute_determinism", "computation_preference"})
#: The keys of a MagicMind build config (``IBuilderConfig::ParseFromString``/``parse_from_string``, as
#: Cambricon's samples set them), and the keys advisor reads beside them (the model, its input dims,
#: the quantised layers and calibration, a generic ``quantization:`` block, legacy mean/std).
MAGICMIND_CONFIG_KEYS = frozenset({
    "archs", "cross_compile_toolchain_path", "precision_config", "insert_bn_before_firstnode",
    "convert_input_layout", "convert_output_layout", "graph_shape_mutable", "dim_range", "custom_ranges",
    "compute_determinism", "computation_preference", "opt_config", "debug_config",
    "tool", "onnx", "model", "input_dims", "quantized_layers", "calibration", "quantization", "amct", "amct_config",
    "mean", "std", "runtime"})
MAGICMIND_PRECISION_KEYS = frozenset({"precision_mode", "activation_quant_algo", "weight_quant_granularity",
                                      "weight_only"})
ATC_KNOBS = frozenset({"soc_version", "framework", "insert_op_conf", "input_format", "input_shape", "keep_dtype",
                       "modify_mixlist", "op_select_implmode"})
_AIPP_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True)
class BuildConfig:
    """A build config, checked and normalised: what advisor/evidence/config.py turns into the
    ``config`` fact."""

    tool: str                               # magicmind | atc | unknown (guessed from the knobs when not given)
    source: Path | None = None
    knobs: dict[str, str] = field(default_factory=dict)   # precision_mode, input_format, keep_dtype, modify_mixlist
    quant: QuantConfig = field(default_factory=QuantConfig)
    insert_bn: bool = False                 # the model normalises its input (insert_bn_before_firstnode)
    folded: dict[int, tuple[list[float], list[float]]] = field(default_factory=dict)  # input -> (mean, std)
    aipp: dict[str, Any] | None = None      # the AIPP settings (``_file``: where they came from)
    layout_conversion: str | None = None    # "NCHW->NHWC" per input, ';'-separated


def parse_build_config(raw: dict[str, Any], source: Path | None = None, quant: QuantConfig | None = None
                       ) -> BuildConfig:
    """The settings of a build config mapping; ``quant``: its quantisation settings when the caller
    has them already. InputFormatError names the field of a bad value."""
    where = source
    tool = str(raw.get("tool") or _guess_tool(raw)).lower()
    knobs: dict[str, str] = {}
    precision = raw.get("precision_mode")
    if precision is None and isinstance(raw.get("precision_config"), dict):
        precision = raw["precision_config"].get("precision_mode")
    if precision is not None:
        knobs["precision_mode"] = _text(precision, "precision_mode", where)
    for knob in ("input_format", "keep_dtype", "modify_mixlist"):
        if raw.get(knob) is not None:
            knobs[knob] = _text(raw[knob], knob, where)
    quant = quant if quant is not None else read_quant_config(raw, source)
    insert_bn, folded = folded_normalization(raw, where)
    aipp = _aipp(raw, source)
    layout = raw.get("convert_input_layout")
    return BuildConfig(tool=tool, source=source, knobs=knobs, quant=quant, insert_bn=insert_bn, folded=folded,
                       aipp=aipp, layout_conversion=_layout(layout, where) if layout is not None else None)


def folded_normalization(raw: dict[str, Any], where: Path | None = None
                         ) -> tuple[bool, dict[int, tuple[list[float], list[float]]]]:
    """(the build folds a normalisation into the model, {network input index: (mean, std) per channel}).

    MagicMind's form is ``{"0": {"mean": [...], "var": [...]}}`` (std = sqrt(var)); the older
    ``insert_bn_before_firstnode: true`` takes top-level ``mean``/``std`` (for input 0) when given."""
    value = raw.get("insert_bn_before_firstnode", False)
    name = "insert_bn_before_firstnode"
    if not isinstance(value, dict):
        if not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
            raise InputFormatError(f'\'{name}\' maps network input indexes to {{"mean": [...], "var": [...]}} '
                                   f"(or is true/false with top-level mean/std), not {value!r}", path=where, field=name)
        if not config_flag(value, name, where):
            return False, {}
        mean, std = _numbers(raw.get("mean"), "mean", where), _numbers(raw.get("std"), "std", where)
        if mean and std:
            _check_pair(mean, std, "std", "mean/std", where)
            return True, {0: (mean, std)}
        return True, {}
    if not value:
        raise InputFormatError(f'{name} maps network input indexes to {{"mean": [...], "var": [...]}}; it is empty',
                               path=where, field=name)
    folded: dict[int, tuple[list[float], list[float]]] = {}
    for key, spec in value.items():
        field = f"{name}.{key}"
        if not str(key).isdigit():
            raise InputFormatError(f"'{key}' is not a network input index (0, 1, ...)", path=where, field=field)
        if not isinstance(spec, dict) or set(spec) != {"mean", "var"}:
            found = ", ".join(sorted(spec)) if isinstance(spec, dict) else type(spec).__name__
            raise InputFormatError(f'needs exactly "mean" and "var" (one number per channel), found {found}',
                                   path=where, field=field)
        mean = _numbers(spec["mean"], f"{field}.mean", where)
        var = _numbers(spec["var"], f"{field}.var", where)
        if not mean or not var:
            raise InputFormatError("needs a mean and a var per channel", path=where, field=field)
        if not all(v > 0 and math.isfinite(v) for v in var) or not all(math.isfinite(m) for m in mean):
            raise InputFormatError("variances must be finite and above 0 (var = std², one per channel)",
                                   path=where, field=f"{field}.var")
        _check_pair(mean, var, "var", field, where)
        folded[int(key)] = (mean, [math.sqrt(v) for v in var])
    return True, dict(sorted(folded.items()))


def _check_pair(mean: list[float], spread: list[float], name: str, field: str, where: Path | None) -> None:
    if len(mean) != len(spread) and 1 not in (len(mean), len(spread)):
        raise InputFormatError(f"{len(mean)} means but {len(spread)} {name} values: give one per channel",
                               path=where, field=field)


def config_warnings(raw: dict[str, Any]) -> list[str]:
    """What a MagicMind config holds that advisor does not know (a typo, or a knob of a newer
    release): said, never fatal."""
    tool = str(raw.get("tool") or _guess_tool(raw)).lower()
    if tool != "magicmind":
        return []
    out = [f"unknown MagicMind config key '{key}' ignored{suggest(str(key), sorted(MAGICMIND_CONFIG_KEYS))}"
           for key in raw if key not in MAGICMIND_CONFIG_KEYS]
    precision = raw.get("precision_config")
    if isinstance(precision, dict):
        out += [f"unknown key 'precision_config.{key}' ignored{suggest(str(key), sorted(MAGICMIND_PRECISION_KEYS))}"
                for key in precision if key not in MAGICMIND_PRECISION_KEYS]
    return out


def _guess_tool(raw: dict[str, Any]) -> str:
    if MAGICMIND_KNOBS & set(raw):
        return "magicmind"
    if ATC_KNOBS & set(raw):
        return "atc"
    return "unknown"


def _text(value: Any, name: str, where: Path | None) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ",".join(str(v) for v in value)
    raise InputFormatError(f"'{name}' must be a string, not {type(value).__name__}", path=where, field=name)


def _numbers(value: Any, name: str, where: Path | None) -> list[float]:
    if value is None:
        return []
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise InputFormatError(f"'{name}' must be a number or a list of numbers (one per channel)",
                               path=where, field=name)
    return [float(v) for v in values]


def _layout(value: Any, where: Path | None) -> str:
    """``convert_input_layout {"0": {"src": "NCHW", "dst": "NHWC"}}`` -> ``NCHW->NHWC`` (per input, ';')."""
    if not isinstance(value, dict) or not value:
        raise InputFormatError('convert_input_layout must map input indexes to {"src": ..., "dst": ...}',
                               path=where, field="convert_input_layout")
    parts = []
    for index, spec in value.items():
        if not isinstance(spec, dict) or not {"src", "dst"} <= set(spec):
            raise InputFormatError(f'convert_input_layout["{index}"] needs "src" and "dst" layouts',
                                   path=where, field="convert_input_layout")
        parts.append(f"{spec['src']}->{spec['dst']}")
    return ";".join(parts)


def _aipp(raw: dict[str, Any], source: Path | None) -> dict[str, Any] | None:
    """The AIPP settings: inline (``aipp: {...}``) or the ``insert_op_conf`` file when it exists."""
    if isinstance(raw.get("aipp"), dict):
        return dict(raw["aipp"])
    conf = raw.get("insert_op_conf")
    if not isinstance(conf, str):
        return None
    path = Path(conf)
    if not path.is_absolute() and source is not None:
        path = Path(source).parent / path
    if not path.is_file():
        return {"_file": conf}
    return read_aipp(path)


def read_aipp(path: Path) -> dict[str, Any]:
    """The first ``aipp_op { key: value ... }`` block of an AIPP config file."""
    settings: dict[str, Any] = {"_file": str(path)}
    depth = 0
    lines = read_input_text(path, max_bytes=MAX_SETTINGS_BYTES, what="AIPP config").splitlines()
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if text.endswith("{"):
            depth += 1
            if depth > 1 or not text.startswith("aipp_op"):
                raise InputFormatError("expected 'aipp_op {' blocks of 'key : value' lines", path=path, line=number)
            continue
        if text == "}":
            depth -= 1
            if depth < 0:
                raise InputFormatError("unbalanced '}'", path=path, line=number)
            if depth == 0:
                break
            continue
        found = _AIPP_LINE.match(text)
        if not found or depth != 1:
            raise InputFormatError("expected 'key : value' inside 'aipp_op { }'", path=path, line=number)
        settings[found.group(1)] = _aipp_value(found.group(2))
    return settings


def _aipp_value(text: str) -> Any:
    text = text.strip().strip('"')
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        return text
