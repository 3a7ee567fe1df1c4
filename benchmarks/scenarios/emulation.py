"""Emulate an NPU ("target") run of a golden graph: precision policy, ATC-style conversion, execution.

The target graph is what an offline compiler such as ATC makes of the golden one:

- a ``Data`` op per network input (GroundTruth = the golden input name);
- target-only ops inserted around it (``trans_Cast_<k>`` float32 -> float16/bfloat16,
  ``trans_TransData_<k>`` NCHW -> 5HD for 4-D tensors; GroundTruth ``*``), and again before each
  network output; a build that folds the input normalisation into the model (MagicMind
  ``insert_bn_before_firstnode``) inserts ``insert_bn_<k>`` (BNInference, ``(x - mean) / std`` per
  channel, GroundTruth ``*``) right after the input, which is then fed raw data;
- fused ops: ``[Pad+]Conv[+BatchNormalization][+Relu|PRelu]``, ``Gemm+PRelu`` and
  ``MatMul+Add(bias)`` become one target op named after the Conv/Gemm/MatMul, whose GroundTruth lists
  the golden ops comma-joined; everything else maps one to one (Ascend op types);
- with ``fusions=("layer_norm",)``, what ATC's ``LayerNormONNXFusionPass`` does to a written-out
  LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add): one ``LayerNorm`` op named
  ``<last Add>/LayerNorm`` whose inputs are x, gamma and beta (the weights are dumped as its inputs
  1 and 2, as a device dump holds every input of an op; no golden op produced them).

Execution follows a precision policy: each target op reads its inputs as stored (already rounded),
uses weights rounded to the policy dtype, computes in float32 (as cube/vector units accumulate)
and rounds its output once. Rounding to float16 turns values beyond 65504 into ``inf``, as real FP16
does. Intermediate values inside a fused op are not rounded. A :class:`~faults.Fault` may change
the fed input or any op's computation.

Per-op precision (a remedy's "keep this op in FP32", :meth:`Fault.kept_precision`): a kept op
computes with float32 weights on its inputs as stored and stores its output unrounded (DT_FLOAT);
an op running in the policy dtype that reads such a float32 tensor casts it first, as the Cast an
offline compiler inserts after a kept op would (no extra row: op indices stay those of the
unremedied run).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from advisor.dtypes import FP16_MAX
from benchmarks.scenarios.fusion import FUSIONS, fusion_groups, layer_norm
from benchmarks.scenarios.graph import GoldenGraph, GoldenOp

if TYPE_CHECKING:  # faults imports this module
    from benchmarks.scenarios.faults import Fault


@dataclass(frozen=True)
class Precision:
    """A precision policy: the device dtype every computed tensor is rounded to."""

    name: str                        # "fp32" | "fp16" | "bf16"
    torch_dtype: torch.dtype
    ge_dtype: str                    # GE dtype name in the result CSV
    precision_mode: str              # the ATC --precision_mode that selects it

    def round(self, tensor: torch.Tensor) -> torch.Tensor:
        """Round a floating tensor to the device dtype (kept as float32 for computing)."""
        if not tensor.is_floating_point() or self.torch_dtype == torch.float32:
            return tensor
        return tensor.to(self.torch_dtype).to(torch.float32)


PRECISIONS: dict[str, Precision] = {
    "fp32": Precision("fp32", torch.float32, "DT_FLOAT", "force_fp32"),
    "fp16": Precision("fp16", torch.float16, "DT_FLOAT16", "allow_fp32_to_fp16"),
    "bf16": Precision("bf16", torch.bfloat16, "DT_BF16", "allow_mix_precision_bf16"),
}

ASCEND_TYPES: dict[str, str] = {
    "Conv": "Conv2D", "PRelu": "PRelu", "MaxPool": "MaxPoolV3", "BatchNormalization": "BNInference",
    "Gemm": "MatMulV2", "Softmax": "SoftmaxV2", "Gather": "GatherV2", "Relu": "Relu", "Pad": "PadV3",
    "Sigmoid": "Sigmoid", "Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "RealDiv",
    "MatMul": "BatchMatMulV2", "Erf": "Erf", "Sqrt": "Sqrt", "Exp": "Exp", "Pow": "Pow",
    "ReduceMean": "ReduceMeanD", "Transpose": "TransposeD", "Reshape": "Reshape", "Flatten": "Flatten",
}


@dataclass
class TargetOp:
    """One op of the converted (target) graph."""

    index: int
    name: str
    op_type: str
    golden_ops: list[str]            # fused-from golden op names; empty -> GroundTruth "*"
    inputs: list[str]                # logical tensors read (golden tensor names)
    output: str                      # logical tensor written
    role: str                        # "data" | "compute" | "trans" | "normalize" | "layout" | "layout_out"
    constants: tuple[tuple[float, ...], tuple[float, ...]] | None = None   # normalize: (mean, std) per channel
    weights: tuple[str, ...] = ()    # graph constants dumped as further inputs (fused LayerNorm: gamma, beta)

    @property
    def ground_truth(self) -> str:
        return ",".join(self.golden_ops) if self.golden_ops else "*"


@dataclass
class TargetPlan:
    ops: list[TargetOp]
    outputs: list[str]               # logical tensors of the network outputs

    def op(self, name: str) -> TargetOp:
        return next(op for op in self.ops if op.name == name)

    def op_containing(self, golden_op: str) -> TargetOp:
        """The target op a golden op was fused into."""
        return next(op for op in self.ops if golden_op in op.golden_ops and op.role == "compute")


def plan_target(graph: GoldenGraph, precision: Precision, golden: dict[str, torch.Tensor],
                fuse: bool = True, folded: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] | None = None,
                fusions: tuple[str, ...] = (), nhwc: tuple[str, ...] = (),
                nhwc_outputs: tuple[int, ...] = ()) -> TargetPlan:
    """The converted graph for ``precision`` (see the module docstring).

    ``golden`` holds the golden tensors by name (their dtypes and ranks decide where Cast and
    TransData are inserted). ``folded``: input name -> (mean, std) the build normalises inside.
    ``fusions``: further fusions of :data:`FUSIONS` the build applies. ``nhwc``: 4-D inputs the build
    declares NHWC: their TransData transposes NHWC to the model's NCHW (role ``layout``); ``nhwc_outputs``:
    positions of the 4-D outputs it hands over NHWC (their TransData transposes NCHW to NHWC).
    """
    unknown = set(fusions) - set(FUSIONS)
    if unknown:
        raise ValueError(f"unknown fusions {sorted(unknown)}; known: {', '.join(FUSIONS)}")
    ops: list[TargetOp] = []
    inserted = 0

    def add(name: str, op_type: str, golden: list[str], inputs: list[str], output: str, role: str,
            constants: tuple | None = None, weights: tuple[str, ...] = ()) -> None:
        ops.append(TargetOp(len(ops), name, op_type, golden, inputs, output, role, constants, weights))

    def insert_trans(tensor: str, kind: str) -> None:
        nonlocal inserted
        add(f"trans_{kind}_{inserted}", kind, [], [tensor], tensor, "trans")
        inserted += 1

    for name in graph.inputs:
        add(name, "Data", [name], [], name, "data")
        if folded and name in folded:
            add(f"insert_bn_{inserted}", "BNInference", [], [name], name, "normalize", folded[name])
            inserted += 1
        feed = golden[name]
        if feed.is_floating_point() and precision.name != "fp32":
            insert_trans(name, "Cast")
        if feed.dim() == 4 and name in nhwc:
            add(f"trans_TransData_{inserted}", "TransData", [], [name], name, "layout")
            inserted += 1
        elif feed.dim() == 4:
            insert_trans(name, "TransData")
    groups = fusion_groups(graph, fusions) if fuse else [[op] for op in graph.ops]
    for group in groups:
        external = []
        members = {g.name for g in group}
        for g in group:
            external.extend(t for t in g.inputs if t not in members and t not in external)
        names = [g.name for g in group]
        if len(group) > 1 and layer_norm(graph, group[0]) == group:
            # ATC names the op it creates after the pattern's output node; gamma and beta become inputs.
            weights = tuple(_constant_arg(g) for g in group[-2:])
            add(f"{group[-1].name}/LayerNorm", "LayerNorm", names, external, group[-1].name, "compute",
                weights=weights)
            continue
        main = next((g for g in group if g.op_type in ("Conv", "Gemm", "MatMul")), group[0])
        add(main.name, ASCEND_TYPES[main.op_type], names, external, group[-1].name, "compute")
    for position, tensor in enumerate(graph.outputs):
        if golden[tensor].dim() == 4 and position in nhwc_outputs:
            add(f"trans_TransData_{inserted}", "TransData", [], [tensor], tensor, "layout_out")
            inserted += 1
        elif golden[tensor].dim() == 4:
            insert_trans(tensor, "TransData")
        if precision.name != "fp32":
            insert_trans(tensor, "Cast")
    return TargetPlan(ops, list(graph.outputs))


def _constant_arg(op: GoldenOp) -> str:
    """The graph constant (``get_attr`` target) an elementwise op applies, e.g. a LayerNorm's gamma."""
    return next(a.target for a in op.node.all_input_nodes if a.op == "get_attr")


@dataclass
class RecordedTensor:
    """A target tensor as dumped: the logical tensor it stands for, its value and device dtype."""

    tensor: str
    value: np.ndarray
    ge_dtype: str


@dataclass
class TargetRun:
    """Every target op's dumped inputs and outputs, and the final network outputs."""

    inputs: dict[str, list[RecordedTensor]] = field(default_factory=dict)    # op name -> inputs
    outputs: dict[str, list[RecordedTensor]] = field(default_factory=dict)   # op name -> outputs
    final: dict[str, RecordedTensor] = field(default_factory=dict)           # logical -> output


#: Signature of an op override: (golden op, its tensor input values, its (rounded) module) -> output.
OpOverride = Callable[[GoldenOp, list[torch.Tensor], nn.Module | None], torch.Tensor]


@dataclass
class OpContext:
    """What a fault sees of one compute op while the target runs.

    ``precision``: the dtype the op computes and stores in (the policy's, or float32 when kept).
    ``calibration``: the float32 values of the op's inputs on the calibration data, what a
    post-training quantiser records to choose a range (here the golden run's tensors, when the
    emulator was given them; None otherwise).
    """

    op: TargetOp
    inputs: list[torch.Tensor]                 # external inputs as read from device memory
    _execute: Callable[[list[torch.Tensor], dict[str, OpOverride]], torch.Tensor]
    precision: Precision = field(default_factory=lambda: PRECISIONS["fp32"])
    calibration: list[torch.Tensor] | None = None

    def run(self, inputs: list[torch.Tensor] | None = None,
            overrides: dict[str, OpOverride] | None = None) -> torch.Tensor:
        """Compute the op (un-rounded), optionally on other inputs or with golden ops replaced."""
        return self._execute(self.inputs if inputs is None else inputs, overrides or {})


class Emulator:
    """Runs a :class:`TargetPlan` under a precision policy, letting a fault intervene.

    ``calibration``: golden tensors by name, handed to faults as the calibration activations of
    each op's inputs (:attr:`OpContext.calibration`).
    """

    def __init__(self, graph: GoldenGraph, plan: TargetPlan, precision: Precision,
                 calibration: dict[str, torch.Tensor] | None = None) -> None:
        self.graph, self.plan, self.precision = graph, plan, precision
        self.calibration = calibration
        self._modules: dict[str, nn.Module] = {}
        self.constants = {k: precision.round(v) for k, v in graph.constants.items()}

    def rounded_module(self, op: GoldenOp, precision: Precision | None = None) -> nn.Module | None:
        """A copy of the op's module with floating parameters and buffers rounded to the policy
        (the original module when ``precision`` is float32: a kept op reads float32 weights)."""
        if op.module is None:
            return None
        if precision is not None and precision.torch_dtype == torch.float32:
            return op.module
        if op.name not in self._modules:
            module = copy.deepcopy(op.module)
            with torch.no_grad():
                for tensor in list(module.parameters()) + list(module.buffers()):
                    if tensor.is_floating_point():
                        tensor.copy_(self.precision.round(tensor))
            self._modules[op.name] = module
        return self._modules[op.name]

    def _execute_group(self, top: TargetOp, inputs: list[torch.Tensor],
                       overrides: dict[str, OpOverride], precision: Precision | None = None) -> torch.Tensor:
        values = dict(zip(top.inputs, inputs, strict=True))
        by_node: dict[str, torch.Tensor] = {}
        tensor_to_node = {t: n for n, t in self.graph.node_to_tensor.items()}
        for name, value in values.items():
            by_node[tensor_to_node[name]] = value
        out = None
        full = precision is not None and precision.torch_dtype == torch.float32
        constants = self.graph.constants if full else self.constants
        for golden_name in top.golden_ops:
            op = self.graph.op(golden_name)
            module = self.rounded_module(op, precision)
            if golden_name in overrides:
                args = [by_node[tensor_to_node[t]] for t in op.inputs]
                out = overrides[golden_name](op, args, module)
            else:
                out = op.evaluate(by_node, module=module, constants=constants)
            by_node[op.node.name] = out
        return out

    def op_precision(self, op: TargetOp, fault: Fault | None) -> Precision:
        """The dtype ``op`` computes and stores in: the policy's, or float32 when the fault's
        remedy keeps it there (:meth:`Fault.kept_precision`)."""
        if fault is not None and fault.kept_precision(op) == "float32":
            return PRECISIONS["fp32"]
        return self.precision

    def _weights(self, op: TargetOp, precision: Precision) -> list[RecordedTensor]:
        """The weights a fused op reads as inputs, as stored on the device (``weight:<constant>``:
        no golden op produced them)."""
        full = precision.torch_dtype == torch.float32
        values = [(self.graph.constants if full else self.constants)[key] for key in op.weights]
        return [RecordedTensor(f"weight:{key}", _to_numpy(v, precision.ge_dtype), precision.ge_dtype)
                for key, v in zip(op.weights, values, strict=True)]

    def run(self, feeds: dict[str, torch.Tensor], fault: Fault | None = None) -> TargetRun:
        """Execute every target op on ``feeds`` (the inputs the target was really given)."""
        env: dict[str, torch.Tensor] = {}
        dtypes: dict[str, str] = {}
        record = TargetRun()
        with torch.no_grad():
            for top in self.plan.ops:
                read = [env[t] for t in top.inputs]
                read_dtypes = [dtypes[t] for t in top.inputs]
                precision = self.op_precision(top, fault) if top.role == "compute" else self.precision
                if top.role == "compute" and precision.name != "fp32":
                    # A float32 tensor stored by a kept op: the compiler's inserted Cast rounds it.
                    cast = [d == "DT_FLOAT" and v.is_floating_point() for v, d in zip(read, read_dtypes, strict=True)]
                    read = [_cast(v, precision, fault) if c else v for v, c in zip(read, cast, strict=True)]
                    read_dtypes = [precision.ge_dtype if c else d for d, c in zip(read_dtypes, cast, strict=True)]
                record.inputs[top.name] = [RecordedTensor(t, _to_numpy(v, d), d)
                                           for t, v, d in zip(top.inputs, read, read_dtypes, strict=True)]
                record.inputs[top.name] += self._weights(top, precision)
                if top.role == "data":
                    value = feeds[top.name]
                    dtype = "DT_FLOAT" if value.is_floating_point() else _ge_int(value)
                elif top.role == "trans" and top.op_type == "Cast":
                    to_device = top.output in self.graph.inputs        # else: device -> float32 output
                    value = self.precision.round(read[0]) if to_device else read[0]
                    dtype = self.precision.ge_dtype if to_device else "DT_FLOAT"
                elif top.role == "normalize":
                    value, dtype = _normalize(read[0], top.constants), "DT_FLOAT"
                elif top.role == "layout":      # NHWC -> NCHW, as the build's TransData reads the input
                    value, dtype = read[0].permute(0, 3, 1, 2).contiguous(), dtypes[top.output]
                elif top.role == "layout_out":  # NCHW -> NHWC, the output as the build hands it over
                    value, dtype = read[0].permute(0, 2, 3, 1).contiguous(), dtypes[top.output]
                elif top.role == "trans":
                    value, dtype = read[0], dtypes[top.output]
                else:
                    calibration = ([self.calibration[t] for t in top.inputs]
                                   if self.calibration is not None else None)
                    context = OpContext(top, read, lambda i, o, top=top, p=precision: self._execute_group(top, i, o, p),
                                        precision, calibration)
                    raw = fault.run_op(context) if fault is not None else context.run()
                    value = precision.round(raw) if raw.is_floating_point() else raw
                    dtype = precision.ge_dtype if raw.is_floating_point() else _ge_int(raw)
                env[top.output], dtypes[top.output] = value, dtype
                record.outputs[top.name] = [RecordedTensor(top.output, _to_numpy(value, dtype), dtype)]
        for tensor in self.plan.outputs:
            record.final[tensor] = RecordedTensor(tensor, _to_numpy(env[tensor], dtypes[tensor]),
                                                  dtypes[tensor])
        return record


def _normalize(value: torch.Tensor, constants: tuple[tuple[float, ...], tuple[float, ...]]) -> torch.Tensor:
    """``(x - mean) / std`` per channel (dim 1), in float32, as the inserted BatchNorm computes it."""
    mean, std = (torch.tensor(c, dtype=torch.float32) for c in constants)
    shape = (1, -1) + (1,) * (value.dim() - 2) if mean.numel() > 1 else ()
    return (value.to(torch.float32) - mean.reshape(shape)) / std.reshape(shape)


def _cast(value: torch.Tensor, precision: Precision, fault: Fault | None) -> torch.Tensor:
    """A float32 tensor cast to the policy dtype; in saturation mode FP16 clamps at +-65504."""
    if fault is not None and fault.saturates() and precision.torch_dtype == torch.float16:
        value = value.clamp(-FP16_MAX, FP16_MAX)
    return precision.round(value)


def _ge_int(value: torch.Tensor) -> str:
    return {torch.int64: "DT_INT64", torch.int32: "DT_INT32", torch.int8: "DT_INT8",
            torch.uint8: "DT_UINT8"}.get(value.dtype, "DT_INT64")


def _to_numpy(value: torch.Tensor, ge_dtype: str) -> np.ndarray:
    """The dump of a device tensor: float16 as float16; bfloat16 stored as float32 (numpy has none)."""
    array = value.detach().cpu().numpy()
    if ge_dtype == "DT_FLOAT16":
        return array.astype(np.float16)
    return array
