"""A build config -> one ``config`` fact (FACT_FIELDS['config'] in advisor/facts/schema.py).

The file is read and checked by advisor/ingest/build_config.py (docs/build-configs.md). Here the
settings become what the rules match: the knobs as text, the quantisation fields
(advisor/evidence/quant_config.py), the normalisation the model does itself (MagicMind's
``insert_bn_before_firstnode`` or an ATC AIPP's ``mean_chn``/``var_reci_chn``, as per-input mean and
std), the AIPP's R/B swap and colour conversion, and the input layout conversion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..ingest.build_config import BuildConfig, parse_build_config
from ..ingest.config_file import read_build_config
from ..ingest.quant_config import QuantConfig
from .quant_config import QuantSettings

AIPP_NORMALIZATION_KEYS = ("mean_chn_", "min_chn_", "var_reci_chn_")


def config_fact(raw: dict[str, Any], source: Path | None = None, settings: QuantConfig | None = None
                ) -> dict[str, Any]:
    """The ``config`` fact of a build config mapping; ``settings``: its quantisation settings when
    the caller has them already."""
    return build_config_fact(parse_build_config(raw, source, settings))


def config_facts(path: Path) -> list[dict[str, Any]]:
    """The facts of a build config file (one ``config`` fact)."""
    path = Path(path)
    return [config_fact(read_build_config(path), source=path)]


def build_config_fact(config: BuildConfig) -> dict[str, Any]:
    """The ``config`` fact of a checked build config."""
    fact: dict[str, Any] = {"id": "config", "fact": "config", "tool": config.tool}
    if config.source is not None:
        fact["source"] = str(config.source)
    fact.update(config.knobs)
    fact.update(QuantSettings.of(config.quant).fields())
    fact["insert_bn_before_firstnode"] = config.insert_bn
    fact["aipp"] = config.aipp is not None
    fact.update(_aipp_fields(config.aipp or {}))
    if config.insert_bn:
        fact["normalization_knob"] = "insert_bn_before_firstnode"
        if config.folded:
            fact["normalized_inputs"] = ";".join(str(i) for i in config.folded)
            fact["norm_mean"] = ";".join(_joined(m) for m, _ in config.folded.values())
            fact["norm_std"] = ";".join(_joined(s) for _, s in config.folded.values())
    elif fact.get("aipp_normalization"):
        fact["normalization_knob"] = "AIPP mean_chn/min_chn/var_reci_chn"
        fact["normalized_inputs"] = "0"
    fact["normalization_in_model"] = "normalization_knob" in fact
    if config.layout_conversion is not None:
        fact["layout_conversion"] = config.layout_conversion
    fact["layout_converted"] = "layout_conversion" in fact
    return fact


def _joined(values: list[float]) -> str:
    texts = [f"{v:.6g}" for v in values]
    return texts[0] if len(set(texts)) == 1 else ",".join(texts)


def _aipp_fields(aipp: dict[str, Any]) -> dict[str, Any]:
    """What an AIPP does to the input: colour conversion, R/B swap, normalisation constants.

    AIPP computes ``(pixel - mean_chn_i - min_chn_i) * var_reci_chn_i``: mean = mean + min,
    std = 1 / var_reci."""
    if not aipp:
        return {}
    out: dict[str, Any] = {"aipp_channel_swap": bool(aipp.get("rbuv_swap_switch", False)),
                           "aipp_csc": bool(aipp.get("csc_switch", False))}
    if "_file" in aipp:
        out["aipp_file"] = str(aipp["_file"])
    if aipp.get("input_format") is not None:
        out["aipp_input_format"] = str(aipp["input_format"])
    means = [float(aipp.get(f"mean_chn_{i}", 0)) + float(aipp.get(f"min_chn_{i}", 0)) for i in range(3)]
    recips = [float(aipp.get(f"var_reci_chn_{i}", 1.0)) for i in range(3)]
    if any(k.startswith(AIPP_NORMALIZATION_KEYS) for k in aipp) and (any(means) or any(r != 1.0 for r in recips)):
        out["aipp_normalization"] = True
        out["norm_mean"] = _joined(means)
        out["norm_std"] = _joined([1.0 / r if r else float("inf") for r in recips])
    return out
