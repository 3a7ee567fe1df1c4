"""How the target computes, as far as the emulation reproduces it: the storage dtype, FP16 overflow
(IEEE inf, or saturation at +-65504), FP16 accumulation in reductions, int8 layers, and the ops a
remedy keeps in higher precision.

Read from the build config (``--config``: its precision mode and quantisation settings, advisor's
QuantSettings) and, without one, from the dtypes the comparison shows on the target.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..evidence.quant_config import QuantSettings

STORAGE_DTYPES = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class Numerics:
    """One emulated variant of the target. ``keep_fp32`` / ``keep_float`` name target ops (groups):
    computed and stored in float32 / kept out of int8 (computed in the storage dtype)."""

    storage: str = "float16"
    saturate: bool = False
    fp16_accumulation: bool = True
    quant: QuantSettings | None = None
    keep_fp32: frozenset[str] = frozenset()
    keep_float: frozenset[str] = frozenset()

    @property
    def rounds(self) -> bool:
        return self.storage != "float32"

    def describe(self) -> str:
        """E.g. "float16 storage, saturation at +-65504, int8 layers"."""
        parts = [f"{self.storage} storage"]
        if self.storage == "float16":
            parts.append("saturation at +-65504" if self.saturate else "IEEE overflow to inf")
        if self.quant is not None and self.quant.quantized:
            parts.append("int8 layers as configured")
        if self.keep_fp32:
            parts.append(f"{len(self.keep_fp32)} ops kept in float32")
        return ", ".join(parts)

    def with_settings(self, settings: Mapping[str, Any]) -> Numerics:
        """The remedy's generic quantisation knobs (advisor/remedy/model.py KNOBS) applied to the build."""
        if self.quant is None or not settings:
            return self
        quant = self.quant
        changes: dict[str, Any] = {}
        if "weight_quant_granularity" in settings:
            changes["weight_granularity"] = str(settings["weight_quant_granularity"])
        if "weight_quant_symmetric" in settings:
            changes["weight_symmetric"] = bool(settings["weight_quant_symmetric"])
        if "activation_quant_algo" in settings:
            changes["activation_symmetric"] = str(settings["activation_quant_algo"]) == "symmetric"
        if "activation_calibration" in settings or "activation_percentile" in settings:
            # A calibration asked for replaces the ranges the build stored: they are calibrated again.
            changes["ranges"] = {}
            changes["calibration"] = str(settings.get("activation_calibration") or "percentile")
            if "activation_percentile" in settings:
                changes["percentile"] = float(settings["activation_percentile"])
        return replace(self, quant=replace(quant, **changes)) if changes else self

    def with_keep(self, fp32: Iterable[str], floating: Iterable[str]) -> Numerics:
        fp32 = frozenset(fp32)
        return replace(self, keep_fp32=self.keep_fp32 | fp32, keep_float=self.keep_float | fp32 | frozenset(floating))


def target_numerics(settings: QuantSettings | None, network: Mapping[str, Any], fp16_accumulation: bool) -> Numerics:
    """The build's numerics: the config's float precision (its quantised layers' precision when the build
    is not quantised), else the comparison's compute dtype on the target."""
    storage = None
    if settings is not None and settings.precision is not None:
        storage = settings.float_precision if settings.quantized else settings.precision
    if storage not in STORAGE_DTYPES:
        dtype = str(network.get("compute_dtype") or network.get("dtype") or "")
        storage = dtype if dtype in STORAGE_DTYPES else "float16" if dtype in ("int8", "uint8") else "float32"
    quant = settings if settings is not None and settings.quantized else None
    return Numerics(storage=storage, fp16_accumulation=fp16_accumulation, quant=quant)
