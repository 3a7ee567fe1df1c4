"""PyTorch: keep modules out of autocast (float16 builds) or out of quantisation (int8 builds,
``torch.ao.quantization`` FX graph mode).

The comparison names ONNX nodes; PyTorch names modules. ``MODULES`` maps each kept node to the module
that produced it where the node name carries the module path (``torch.onnx.export`` names nodes
after their scope: ``/encoder/layer.0/norm/Pow`` came from ``encoder.layer.0.norm``), and to None
where the user has to find it.

- ``torch_autocast.py``: wraps each module's ``forward`` in ``torch.autocast(..., enabled=False)``
  with its floating inputs cast to float32.
- ``torch_quantize.py``: a ``QConfig`` from the step's settings (``MinMaxObserver`` for min/max,
  ``HistogramObserver`` for a least-error range search; ``per_tensor_affine`` or ``_symmetric``
  activations; ``PerChannelMinMaxObserver`` for per-channel weights) and a ``QConfigMapping`` that
  sets the kept modules' qconfig to None, for ``prepare_fx``.
"""

from __future__ import annotations

import re

from ..model import BuildContext, RemedyStep, activation_calibration, known_setting
from ..quoting import py_dict
from .common import golden_names, header, unexpressed

AUTOCAST = "torch_autocast.py"
QUANTIZE = "torch_quantize.py"
_SCOPE_PART = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")


def files(step: RemedyStep, context: BuildContext) -> dict[str, str]:
    if context.quantised:
        return {QUANTIZE: quantize_script(step, context)}
    if step.keep:
        return {AUTOCAST: autocast_script(step)}
    return {}


def module_of(node: str) -> str | None:
    """The module path an exported ONNX node name carries (``/a/b.0/Pow`` -> ``a.b.0``), else None."""
    if not node.startswith("/"):
        return None
    parts = node[1:].split("/")
    if len(parts) < 2 or not all(_SCOPE_PART.fullmatch(part) for part in parts[:-1]):
        return None
    return ".".join(parts[:-1])


def _modules(step: RemedyStep) -> str:
    return py_dict({name: module_of(name) for name in golden_names(step)})


_MODULES_COMMENT = ["# ONNX node -> the module that produced it (None: find it, e.g. in the names",
                    "# torch.onnx.export(..., verbose=True) prints, and fill it in)."]


def autocast_script(step: RemedyStep) -> str:
    return "\n".join([
        '"""' + f"advisor remedy, step {step.step}, for PyTorch (autocast).",
        "",
        "keep_in_float32(model) makes the modules of MODULES run in float32 even inside torch.autocast;",
        "it returns the module names it did not find.",
        '"""',
        *header(step, "PyTorch"),
        "import torch",
        "",
        *_MODULES_COMMENT,
        f"MODULES = {_modules(step)}",
        "", "",
        _KEEP_FUNCTION,
    ]) + "\n"


_KEEP_FUNCTION = '''def keep_in_float32(model):
    wanted = sorted({name for name in MODULES.values() if name})
    modules = dict(model.named_modules())
    for name in wanted:
        if name in modules:
            _run_in_float32(modules[name])
    return [name for name in wanted if name not in modules]


def _run_in_float32(module):
    forward = module.forward

    def forward_in_float32(*args, **kwargs):
        device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        args = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        with torch.autocast(device_type=device, enabled=False):
            return forward(*args, **kwargs)

    module.forward = forward_in_float32'''


def quantize_script(step: RemedyStep, context: BuildContext) -> str:
    settings = step.settings
    expressed: list[str] = []
    notes: list[str] = []
    calibration = activation_calibration(settings)
    observer = "HistogramObserver"           # PyTorch's default qconfig searches the range too
    if calibration:
        expressed.append("activation_calibration")
        if calibration == "minmax":
            observer = "MinMaxObserver"
        elif calibration in ("kl", "percentile"):
            notes += [f"# activation_calibration={calibration}: torch.ao.quantization has no such observer;",
                      "# HistogramObserver (a least-error range search) is the closest."]
    algo = known_setting(settings, "activation_quant_algo")
    if algo:
        expressed.append("activation_quant_algo")
    activation_scheme = "torch.per_tensor_symmetric" if algo == "symmetric" else "torch.per_tensor_affine"
    granularity = known_setting(settings, "weight_quant_granularity")
    symmetric_weights = known_setting(settings, "weight_quant_symmetric")
    expressed += [k for k, v in (("weight_quant_granularity", granularity),
                                 ("weight_quant_symmetric", symmetric_weights)) if v is not None]
    per_tensor = granularity == "per_tensor"
    weight_observer = "MinMaxObserver" if per_tensor else "PerChannelMinMaxObserver"
    weight_scheme = (f"torch.{'per_tensor' if per_tensor else 'per_channel'}_"
                     f"{'affine' if symmetric_weights is False else 'symmetric'}")
    imports = sorted({observer, weight_observer, "QConfig", "QConfigMapping"})
    return "\n".join([
        '"""' + f"advisor remedy, step {step.step}, for PyTorch (torch.ao.quantization, FX graph mode).",
        "",
        "prepare(model, example_inputs) inserts observers with the settings of this step and leaves the",
        "modules of MODULES in float; calibrate the result, then torch.ao.quantization.quantize_fx.convert_fx.",
        "Recent PyTorch releases deprecate torch.ao.quantization in favour of torchao's pt2e flow.",
        '"""',
        *header(step, "PyTorch"), *context.weight_only_note("prepare_fx"), *notes,
        *unexpressed(settings, tuple(expressed), "torch.ao.quantization"),
        "import torch",
        f"from torch.ao.quantization import {', '.join(imports)}",
        "from torch.ao.quantization.quantize_fx import prepare_fx",
        "",
        *_MODULES_COMMENT,
        "# Modules left out of quantisation run in float32.",
        f"MODULES = {_modules(step)}",
        "",
        "QCONFIG = QConfig(",
        f"    activation={observer}.with_args(dtype=torch.quint8, qscheme={activation_scheme}),",
        f"    weight={weight_observer}.with_args(dtype=torch.qint8, qscheme={weight_scheme}),",
        ")",
        "", "",
        "def qconfig_mapping():",
        "    mapping = QConfigMapping().set_global(QCONFIG)",
        "    for name in sorted({name for name in MODULES.values() if name}):",
        "        mapping = mapping.set_module_name(name, None)",
        "    return mapping",
        "", "",
        "def prepare(model, example_inputs):",
        "    return prepare_fx(model, qconfig_mapping(), example_inputs)",
    ]) + "\n"
