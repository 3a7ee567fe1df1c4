"""What a build's quantisation settings mean: the int8 schemes the simulation re-quantises with
(advisor/evidence/quant.py) and the ``config`` fact's quantisation fields.

The settings themselves are read by advisor/ingest/quant_config.py (MagicMind, ATC + AMCT and the
generic ``quantization:`` block, normalised into one ``QuantConfig``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..ingest.quant_config import LOW_PRECISIONS, QuantConfig, read_quant_config
from .quant import Scheme


class QuantSettings(QuantConfig):
    """A build config's quantisation settings, with the schemes they stand for."""

    @classmethod
    def of(cls, config: QuantConfig) -> QuantSettings:
        if isinstance(config, cls):
            return config
        return cls(**{f.name: getattr(config, f.name) for f in dataclasses.fields(config)})

    def weight_scheme(self) -> Scheme:
        """How the build quantises weights (per-tensor and symmetric unless the config says otherwise:
        the default of MagicMind and the conservative reading of an unstated setting)."""
        return Scheme(per_channel=self.weight_granularity == "per_channel",
                      symmetric=self.weight_symmetric is not False)

    def activation_scheme(self, tensor: str | Sequence[str] | None, percentile: float) -> Scheme:
        """How the build quantises an activation: its calibrated range when the config lists one
        under any of the tensor's names (``tensor``: one name or its aliases, see :meth:`range_key`),
        else the calibration algorithm on the golden tensor (KL and MSE fits approximated by the
        percentile search they behave like). ``percentile``: the one assumed when the config asks for
        a percentile calibration without saying which (the ``quant.percentile`` knob)."""
        symmetric = self.activation_symmetric is not False
        key = self.range_key(tensor)
        if key is not None:
            low, high = self.ranges[key]
            return Scheme(symmetric=symmetric, calibration="range", low=low, high=high)
        if self.calibration in ("percentile", "kl", "mse"):
            return Scheme(symmetric=symmetric, calibration="percentile",
                          percentile=self.percentile or percentile)
        return Scheme(symmetric=symmetric)

    def range_key(self, tensor: str | Sequence[str] | None) -> str | None:
        """The first of a tensor's names the config lists a calibrated range for. Toolchains key
        ranges by the tensor as they see it: the consuming op's input (``MatMul_26:input:0``), the
        producing op's output (``Softmax_25:output:0``), the ONNX value name (TensorRT calibration
        caches, ONNX Runtime calibration tables); a caller passes every name it knows."""
        names = [tensor] if isinstance(tensor, str) else list(tensor or ())
        return next((name for name in names if name in self.ranges), None)

    def fields(self) -> dict[str, Any]:
        """The ``config`` fact's quantisation fields."""
        out: dict[str, Any] = {"quantized": self.quantized,
                               "low_precision": self.precision in LOW_PRECISIONS}
        if self.precision:
            out["quant_precision"] = self.precision
        if self.float_precision:
            out["float_precision"] = self.float_precision
        if self.weight_granularity:
            out["weight_quant_granularity"] = self.weight_granularity
        if self.weight_symmetric is not None:
            out["weight_quant_symmetric"] = self.weight_symmetric
        if self.activation_symmetric is not None:
            out["activation_quant_algo"] = "symmetric" if self.activation_symmetric else "asymmetric"
        if self.calibration:
            out["activation_calibration"] = self.calibration
        if self.percentile is not None:
            out["activation_percentile"] = self.percentile
        out["weight_only"] = self.weight_only
        out["quantized_layers_listed"] = bool(self.layers)
        if self.layers:
            out["quantized_layers"] = ",".join(self.layers)
        if self.float_layers:
            out["float_layers"] = ",".join(self.float_layers)
        return out


def quant_settings(raw: dict[str, Any], source: Path | None = None) -> QuantSettings:
    """The quantisation settings of a build config mapping (InputFormatError names a bad value)."""
    return QuantSettings.of(read_quant_config(raw, source))
