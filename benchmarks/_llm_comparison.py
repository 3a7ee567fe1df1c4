"""A synthetic msaccucmp comparison of a large language model, any number of rows, vectorised.

The network is a GPT-style FP16 decoder (ONNX op names, as ATC keeps them): an embedding, ``L``
decoder layers of 35 ops (LayerNorm exported as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add,
q/k/v/o projections as MatMul fused with their bias Add, attention as BatchMatMul/Mul/Add(mask)/
Exp/ReduceSum/Div/BatchMatMul with a target-only TransData, a Gelu MLP, residual Adds), a final
LayerNorm, the LM head MatMul, a Softmax, a target-only Cast back to FP32 and the ``Node_Output``
row. Each op has 2-4 tensors (inputs, then outputs); an input row carries the numbers of the
tensor that feeds it, so the rows of one file tell a consistent story:

* error drifts slowly up through the layers (cosine from ~0.99999 down to ~0.9997), within the
  FP16 thresholds;
* at ~62 % of the depth the ``Pow`` of a post-attention LayerNorm overflows FP16 (``OverFlow``
  YES, inf in the target), the variance chain after it overflows, the normalised output collapses
  to zeros and every op after it deviates; a few later attention ``Exp`` ops overflow too;
* target-only ops (TransData, Cast) have GroundTruth ``*`` and no metrics; some cosines are NaN,
  some KL divergences inf (golden distribution has zeros), with the reason msaccucmp writes.

The expected diagnosis is an FP16 overflow at that ``Pow``. Everything is deterministic for a seed.

``write_llm_comparison(..., graph=PATH)`` also writes the matching GE graph dump (protobuf text, Build
stage, ``benchmarks/graph_load.py``'s writer): one op per target op of the table (not the
``Node_Output`` row), its ``_datadump_original_op_names`` the GroundTruth ops, a data edge from the
previous op for each input the flowing tensor feeds, and the residual Adds of each decoder layer fed
by the layer's input (``Add``) and by the attention residual (``Add_1``).
Per-op and per-row arrays are built with numpy; Python loops run over the template's 35 ops,
never over rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import _csvbytes as csvb
from benchmarks.graph_load import op_text, write_dump

HEADER = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,"
          "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
          "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
          "MaxRelativeError,MeanRelativeError,CompareFailReason")

# --- the network ---------------------------------------------------------------------------------
# Tensor sources: X = the tensor flowing in (the previous op's output), W = a weight (agrees up to
# FP16 rounding), C = a scalar constant, M = the attention mask, OUT = this op's output.
X, W, C, M, OUT = range(5)
SHAPES = ("[1,512,2048]", "[1,512,1]", "[]", "[2048]", "[2048,2048]", "[1,16,512,128]",
          "[1,16,128,512]", "[1,16,8,32,16,16]", "[1,16,512,512]", "[1,16,512,1]", "[1,1,512,512]",
          "[1,512,8192]", "[2048,8192]", "[8192]", "[8192,2048]", "[1,512]", "[32000,2048]",
          "[2048,32000]", "[1,512,32000]")
DTYPES = ("DT_FLOAT16", "DT_FLOAT", "DT_INT64")
GOLDEN_DTYPES = ("float32", "float32", "int64")
F16, F32, I64 = range(3)
HID, MEAN, SCALAR, VEC, WQ, HEADS, HEADS_T, NZ, SCORES, SUMS, MASK, FFN, W1, B1, W2, IDS, EMB, WLM, LOGITS = (
    range(len(SHAPES)))

Tensor = tuple  # (io, source, shape, npu dtype[, scalar value])
Op = tuple      # (name template, op type, golden: "" same name | "*" target-only | tuple, tensors)


def _t(io: str, source: int, shape: int, dtype: int = F16, value: float = 0.0) -> Tensor:
    return io, source, shape, dtype, value


def _layer_norm(prefix: str) -> list[Op]:
    i, o = "input", "output"
    return [
        (f"{prefix}ReduceMean", "ReduceMean", "", [_t(i, X, HID), _t(o, OUT, MEAN)]),
        (f"{prefix}Sub", "Sub", "", [_t(i, X, HID), _t(i, X, MEAN), _t(o, OUT, HID)]),
        (f"{prefix}Pow", "Pow", "", [_t(i, X, HID), _t(i, C, SCALAR, value=2.0), _t(o, OUT, HID)]),
        (f"{prefix}ReduceMean_1", "ReduceMean", "", [_t(i, X, HID), _t(o, OUT, MEAN)]),
        (f"{prefix}Add", "Add", "", [_t(i, X, MEAN), _t(i, C, SCALAR, value=1e-5), _t(o, OUT, MEAN)]),
        (f"{prefix}Sqrt", "Sqrt", "", [_t(i, X, MEAN), _t(o, OUT, MEAN)]),
        (f"{prefix}Div", "Div", "", [_t(i, X, HID), _t(i, X, MEAN), _t(o, OUT, HID)]),
        (f"{prefix}Mul", "Mul", "", [_t(i, X, HID), _t(i, W, VEC), _t(o, OUT, HID)]),
        (f"{prefix}Add_1", "Add", "", [_t(i, X, HID), _t(i, W, VEC), _t(o, OUT, HID)]),
    ]


def _linear(prefix: str, x: int, weight: int, bias: int, y: int) -> Op:
    # ATC fuses MatMul + bias Add into one MatMul: GroundTruth names both golden ops.
    return (f"{prefix}MatMul", "MatMul", (f"{prefix}MatMul", f"{prefix}Add"),
            [_t("input", X, x), _t("input", W, weight), _t("input", W, bias), _t("output", OUT, y)])


def _decoder_layer() -> list[Op]:
    p, i, o = "/model/layers.{l}/", "input", "output"
    a = f"{p}self_attn/"
    return [
        *_layer_norm(f"{p}input_layernorm/"),
        _linear(f"{a}q_proj/", HID, WQ, VEC, HID),
        _linear(f"{a}k_proj/", HID, WQ, VEC, HID),
        _linear(f"{a}v_proj/", HID, WQ, VEC, HID),
        ("trans_TransData_{i}", "TransData", "*", [_t(i, X, HEADS), _t(o, OUT, NZ)]),
        (f"{a}MatMul", "BatchMatMul", "", [_t(i, X, HEADS), _t(i, X, HEADS_T), _t(o, OUT, SCORES)]),
        (f"{a}Mul", "Mul", "", [_t(i, X, SCORES), _t(i, C, SCALAR, value=0.0883883), _t(o, OUT, SCORES)]),
        (f"{a}Add", "Add", "", [_t(i, X, SCORES), _t(i, M, MASK), _t(o, OUT, SCORES)]),
        (f"{a}Exp", "Exp", "", [_t(i, X, SCORES), _t(o, OUT, SCORES)]),
        (f"{a}ReduceSum", "ReduceSum", "", [_t(i, X, SCORES), _t(o, OUT, SUMS)]),
        (f"{a}Div", "Div", "", [_t(i, X, SCORES), _t(i, X, SUMS), _t(o, OUT, SCORES)]),
        (f"{a}MatMul_1", "BatchMatMul", "", [_t(i, X, SCORES), _t(i, X, HEADS), _t(o, OUT, HEADS)]),
        _linear(f"{a}o_proj/", HID, WQ, VEC, HID),
        (f"{p}Add", "Add", "", [_t(i, X, HID), _t(i, X, HID), _t(o, OUT, HID)]),
        *_layer_norm(f"{p}post_attention_layernorm/"),
        _linear(f"{p}mlp/fc1/", HID, W1, B1, FFN),
        (f"{p}mlp/act/Gelu", "Gelu", "", [_t(i, X, FFN), _t(o, OUT, FFN)]),
        _linear(f"{p}mlp/fc2/", FFN, W2, VEC, HID),
        (f"{p}Add_1", "Add", "", [_t(i, X, HID), _t(i, X, HID), _t(o, OUT, HID)]),
    ]


PROLOGUE: list[Op] = [
    ("input_ids", "Data", "", [_t("output", OUT, IDS, I64)]),
    ("/model/embed_tokens/Gather", "GatherV2", "",
     [_t("input", W, EMB), _t("input", X, IDS, I64), _t("output", OUT, HID)]),
    ("trans_Cast_{i}", "Cast", "*", [_t("input", M, MASK, F32), _t("output", OUT, MASK)]),
]
LAYER: list[Op] = _decoder_layer()
# Pads the file to the exact row count asked: format changes the target inserts between layers.
FILL: list[Op] = [("trans_TransData_{i}", "TransData", "*", [_t("input", X, HID), _t("output", OUT, NZ)])]
EPILOGUE: list[Op] = [
    *_layer_norm("/model/norm/"),
    ("/lm_head/MatMul", "MatMul", "", [_t("input", X, HID), _t("input", W, WLM), _t("output", OUT, LOGITS)]),
    ("/Softmax", "Softmax", "", [_t("input", X, LOGITS), _t("output", OUT, LOGITS)]),
    ("trans_Cast_{i}", "Cast", "*", [_t("input", X, LOGITS), _t("output", OUT, LOGITS, F32)]),
]
NODE_OUTPUT: list[Op] = [("Node_Output", "NaN", "_Softmax.0.1714969176001460.npy",
                          [_t("output", OUT, SCALAR, F32)])]

ROOT_LAYER_FRACTION = 0.62
EXP_OVERFLOW_AFTER = (2, 5, 9)  # layers after the root whose attention Exp overflows too
OK, INF, NAN, ZERO = range(4)   # what the target tensor holds


def _op_position(name: str) -> int:
    return next(j for j, op in enumerate(LAYER) if op[0] == "/model/layers.{l}/" + name)


ROOT_CHAIN = {  # the overflowing LayerNorm: op -> what its output becomes
    "post_attention_layernorm/Pow": INF, "post_attention_layernorm/ReduceMean_1": INF,
    "post_attention_layernorm/Add": INF, "post_attention_layernorm/Sqrt": INF,
    "post_attention_layernorm/Div": ZERO, "post_attention_layernorm/Mul": ZERO,
}
EXP_CHAIN = {"self_attn/Exp": INF, "self_attn/ReduceSum": INF, "self_attn/Div": NAN}


@dataclass
class Network:
    """Per-op and per-row arrays of one generated comparison."""

    op_name: np.ndarray        # bytes, per op
    op_type: np.ndarray        # bytes, per op
    golden: np.ndarray         # bytes, per op: GroundTruth cell (quoted when it holds a comma)
    target_only: np.ndarray    # bool, per op
    layer: np.ndarray          # int, per op (-1 outside the decoder layers)
    spec: np.ndarray           # int, per op: position in its segment's template
    segment: np.ndarray        # int, per op: 0 prologue, 1 layers, 2 partial layer, 3 fill, 4 epilogue, 5 output
    row_op: np.ndarray         # int, per row
    row_io: np.ndarray         # 0 input / 1 output, per row
    row_slot: np.ndarray
    row_source: np.ndarray
    row_shape: np.ndarray
    row_dtype: np.ndarray
    row_value: np.ndarray      # scalar constant value (source C)
    layers: int

    @property
    def rows(self) -> int:
        return len(self.row_op)


def _rows_of(ops: Sequence[Op]) -> int:
    return sum(len(op[3]) for op in ops)


def _segment(ops: Sequence[Op], layers: np.ndarray, op_base: int, segment: int) -> dict[str, np.ndarray]:
    """``ops`` repeated once per entry of ``layers`` (layer-major), ops numbered from ``op_base``."""
    count, per = len(layers), len(ops)
    layer_text = layers.astype("S")
    names, types, golden = [], [], []
    for j, (template, op_type, gt, _) in enumerate(ops):
        op_index = op_base + np.arange(count, dtype=np.int64) * per + j
        names.append(_format(template, layer_text, op_index))
        types.append(np.full(count, op_type.encode()))
        if gt == "":
            golden.append(names[-1])
        elif isinstance(gt, tuple):
            joined = _format(gt[0], layer_text, op_index)
            for part in gt[1:]:
                joined = np.char.add(np.char.add(joined, b","), _format(part, layer_text, op_index))
            golden.append(np.char.add(np.char.add(b'"', joined), b'"'))
        else:
            golden.append(np.full(count, gt.encode()))
    tensors = [(j, slot_of, *tensor) for j, op in enumerate(ops)
               for slot_of, tensor in _numbered(op[3])]
    local_op, slot, io, source, shape, dtype, value = (np.array(c) for c in zip(*tensors, strict=True))
    repeat_ops = np.arange(count, dtype=np.int64)[:, None] * per
    return {
        "op_name": np.stack(names, axis=1).ravel(), "op_type": np.stack(types, axis=1).ravel(),
        "golden": np.stack(golden, axis=1).ravel(),
        "target_only": np.tile(np.array([op[2] == "*" for op in ops]), count),
        "layer": np.repeat(layers if segment in (1, 2) else np.full(count, -1), per),
        "spec": np.tile(np.arange(per), count), "segment": np.full(count * per, segment),
        "row_op": (op_base + repeat_ops + local_op[None, :]).ravel(),
        "row_io": np.tile((io == "output").astype(np.int8), count), "row_slot": np.tile(slot, count),
        "row_source": np.tile(source.astype(np.int8), count), "row_shape": np.tile(shape.astype(np.int8), count),
        "row_dtype": np.tile(dtype.astype(np.int8), count), "row_value": np.tile(value.astype(float), count),
    }


def _numbered(tensors: Sequence[Tensor]) -> list[tuple[int, Tensor]]:
    seen = {"input": 0, "output": 0}
    out = []
    for tensor in tensors:
        out.append((seen[tensor[0]], tensor))
        seen[tensor[0]] += 1
    return out


def _format(template: str, layer_text: np.ndarray, op_index: np.ndarray) -> np.ndarray:
    """``template`` with ``{l}`` (layer) or ``{i}`` (op index) filled in, for every instance."""
    for key, values in (("{l}", layer_text), ("{i}", op_index.astype("S"))):
        if key in template:
            head, tail = template.split(key)
            return np.char.add(np.char.add(head.encode(), values), tail.encode())
    return np.full(len(layer_text), template.encode())


def build_network(rows: int) -> Network:
    """The op/row layout of a network with exactly ``rows`` rows (at least a few thousand)."""
    fixed = _rows_of(PROLOGUE) + _rows_of(EPILOGUE) + _rows_of(NODE_OUTPUT)
    per_layer = _rows_of(LAYER)
    layers = (rows - fixed) // per_layer
    # A partial last layer (its first whole ops) and 2-row fill ops make up the rest, which must
    # then be even: take fewer ops of the partial layer, or one layer fewer, until it is.
    while True:
        if layers < 12:
            raise ValueError(f"at least {fixed + 13 * per_layer} rows, please")
        rest = rows - fixed - layers * per_layer
        ends = np.cumsum([len(op[3]) for op in LAYER])
        fitting = [k + 1 for k in range(len(LAYER)) if ends[k] <= rest and (rest - ends[k]) % 2 == 0]
        partial = max(fitting, default=0) if fitting or rest % 2 == 0 else None
        if partial is not None:
            break
        layers -= 1
    used = int(ends[partial - 1]) if partial else 0
    fill = (rest - used) // 2
    parts, op_base = [], 0
    for ops, instances, segment in ((PROLOGUE, np.zeros(1, np.int64), 0),
                                    (LAYER, np.arange(layers), 1),
                                    (LAYER[:partial], np.array([layers]), 2),
                                    (FILL * fill, np.zeros(1, np.int64), 3),
                                    (EPILOGUE, np.zeros(1, np.int64), 4),
                                    (NODE_OUTPUT, np.zeros(1, np.int64), 5)):
        if not ops:
            continue
        parts.append(_segment(ops, instances, op_base, segment))
        op_base += len(ops) * len(instances)
    data = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    network = Network(**data, layers=layers)
    assert network.rows == rows, (network.rows, rows)
    return network


# --- numbers -------------------------------------------------------------------------------------

@dataclass
class Comparison:
    network: Network
    columns: dict[str, np.ndarray]   # per-row metric, statistic and flag arrays
    root_op: int                     # the op whose FP16 overflow is the root cause
    root_name: str


def simulate(network: Network, seed: int = 0) -> Comparison:
    """Per-row metrics: slow drift, then the FP16 overflow at ~62 % depth and its aftermath."""
    rng = np.random.default_rng(seed)
    n_ops = len(network.op_name)
    progress = np.arange(n_ops) / max(1, n_ops - 1)
    # 1 - cosine of each op's output: slow growth with depth, log-normal noise, capped so healthy
    # ops stay inside the FP16 thresholds (cosine 0.99, relative distance 0.05).
    drift = 1e-5 * 30.0**progress * np.clip(np.exp(0.35 * rng.standard_normal(n_ops)), 0.5, 2.5)
    drift[0] = 0.0  # the token ids are the same on both sides
    state = np.full(n_ops, OK, np.int8)
    in_layer = network.segment == 1
    root_layer = int(network.layers * ROOT_LAYER_FRACTION)

    def ops_at(layer: int, name: str) -> np.ndarray:
        return np.flatnonzero(in_layer & (network.layer == layer) & (network.spec == _op_position(name)))

    root_op = int(ops_at(root_layer, "post_attention_layernorm/Pow")[0])
    after = np.arange(n_ops) > root_op
    drift[after] = 0.02 + 0.4 * rng.beta(2, 3, int(after.sum()))
    for name, what in ROOT_CHAIN.items():
        state[ops_at(root_layer, name)] = what
    for extra in EXP_OVERFLOW_AFTER:
        if root_layer + extra < network.layers:
            for name, what in EXP_CHAIN.items():
                state[ops_at(root_layer + extra, name)] = what
    # Target-only ops pass their input through; the Node_Output row is the last op's output.
    passthrough = network.target_only | (network.segment == 5)
    drift = pd.Series(np.where(passthrough, np.nan, drift)).ffill().to_numpy()
    state = pd.Series(np.where(passthrough, np.nan, state)).ffill().to_numpy().astype(np.int8)

    op, source = network.row_op, network.row_source
    rows = len(op)
    fed_by = np.where(source == X, np.maximum(op - 1, 0), op)   # the op whose output this row holds
    d = np.select([source == W, (source == C) | (source == M)],
                  [5e-8 * (1 + rng.random(rows)), 0.0], drift[fed_by])
    row_state = np.where((source == X) | (source == OUT), state[fed_by], OK)
    golden = ~network.target_only[op]

    scale = (0.5 + 3 * progress[op]) * np.exp(0.3 * rng.standard_normal(rows))
    scalar = source == C
    u = rng.random((7, rows))
    red = np.sqrt(2 * d) * (0.9 + 0.2 * u[0])
    rmse = red * scale
    g_mean = np.where(scalar, network.row_value, 0.05 * scale * rng.standard_normal(rows))
    g_std = np.where(scalar, 0.0, scale)
    cols = {
        "cosine": np.where(scalar, 1.0, 1.0 - d),
        "max_abs_error": rmse * (3 + 3 * u[1]),
        "accumulated_relative_error": red * (100 + 5000 * u[2]),
        "relative_euclidean_distance": red,
        "kl_divergence": d * (0.3 + u[3]),
        "mean_absolute_error": 0.8 * rmse,
        "root_mean_square_error": rmse,
        "max_relative_error": red * (20 + 2000 * u[4]),
        "mean_relative_error": red * (0.6 + 0.8 * u[5]),
        "npu_mean": g_mean + 0.05 * rmse * rng.standard_normal(rows),
        "npu_std": g_std * (1 + 0.3 * red * u[6]),
        "golden_mean": g_mean,
        "golden_std": g_std,
    }
    reason = np.zeros(rows, np.int8)  # index into REASONS
    # Inf in the target (overflow): msaccucmp still prints the errors, as inf.
    inf = row_state == INF
    for key in ("max_abs_error", "accumulated_relative_error", "relative_euclidean_distance",
                "mean_absolute_error", "root_mean_square_error", "max_relative_error", "mean_relative_error"):
        cols[key][inf] = np.inf
    for key in ("cosine", "kl_divergence", "npu_std"):
        cols[key][inf] = np.nan
    cols["npu_mean"][inf] = np.inf
    nan = row_state == NAN
    for key in cols:
        if key not in ("golden_mean", "golden_std"):
            cols[key][nan] = np.nan
    reason[inf | nan] = 1
    # A target collapsed to zeros: cosine undefined, the error is the golden tensor itself.
    zero = row_state == ZERO
    cols["cosine"][zero] = np.nan
    cols["relative_euclidean_distance"][zero] = 1.0
    cols["max_relative_error"][zero] = cols["mean_relative_error"][zero] = 1.0
    cols["npu_mean"][zero] = cols["npu_std"][zero] = 0.0
    cols["kl_divergence"][zero] = np.nan
    reason[zero] = 2
    # Sprinkled oddities of real files: a few NaN cosines, inf KL where the golden has zeros.
    plain = golden & (row_state == OK) & ~scalar
    cols["cosine"][plain & (rng.random(rows) < 0.002)] = np.nan
    kl_inf = plain & ((source == M) | (rng.random(rows) < 0.01))
    cols["kl_divergence"][kl_inf] = np.inf
    reason[kl_inf] = 3
    cols["cosine"] = np.minimum(cols["cosine"], 1.0)
    for key in cols:
        cols[key][~golden] = np.nan
    reason[~golden] = 4
    fp16 = network.row_dtype == F16
    cols["overflow"] = np.where(fp16, np.where(inf, 2, 1), 0).astype(np.int8)  # NaN / NO / YES
    cols["reason"] = reason
    cols["scale"] = scale
    return Comparison(network, cols, root_op, network.op_name[root_op].decode())


REASONS = (b"NaN", b"NPU data contains NaN or inf", b"cannot compare by cosine similarity: all NPU data is zero",
           b"cannot compare by KL divergence: golden distribution has zeros", b"no golden data")
OVERFLOW = (b"NaN", b"NO", b"YES")
METRICS = ("cosine", "max_abs_error", "accumulated_relative_error", "relative_euclidean_distance",
           "kl_divergence")
METRICS_AFTER_STD = ("mean_absolute_error", "root_mean_square_error", "max_relative_error",
                     "mean_relative_error")


# --- the CSV -------------------------------------------------------------------------------------

def _quoted(values: Sequence[str]) -> np.ndarray:
    return np.array([f'"{v}"'.encode() if "," in v else v.encode() for v in values])


def write_comparison(path: Path, comparison: Comparison) -> None:
    network, cols = comparison.network, comparison.columns
    shapes = _quoted(SHAPES)
    io_words = np.array([b":input:", b":output:"])
    dtypes = np.array([d.encode() for d in DTYPES])
    golden_dtypes = np.array([d.encode() for d in GOLDEN_DTYPES])
    golden_present = ~network.target_only
    reasons, overflow = np.array(REASONS), np.array(OVERFLOW)

    def block(start: int, stop: int) -> list[np.ndarray]:
        n = stop - start
        sl = slice(start, stop)
        op = network.row_op[sl]
        comma = csvb.const(b",", n)
        name = csvb.text(network.op_name[op])
        address = 0x12C0C0000000 + (np.arange(start, stop, dtype=np.int64) * 0x8200) % (1 << 36)
        has_golden = golden_present[op]
        std = [csvb.const(b'"(', n), csvb.fixed(cols["npu_mean"][sl]), csvb.const(b";", n),
               csvb.fixed(cols["npu_std"][sl]), csvb.const(b"),(", n), csvb.fixed(cols["golden_mean"][sl]),
               csvb.const(b";", n), csvb.fixed(cols["golden_std"][sl]), csvb.const(b')"', n)]
        std_cell = csvb.blank_rows(np.concatenate(std, axis=1), np.flatnonzero(~has_golden), b"NaN")
        fields = [
            csvb.integers(op), comma, csvb.text(network.op_type[op]), comma, name, comma,
            csvb.text(dtypes[network.row_dtype[sl]]), comma, csvb.const(b"0x", n), _hex(address), comma,
            csvb.text(network.golden[op]), comma,
            csvb.text(np.where(has_golden, golden_dtypes[network.row_dtype[sl]], b"NaN")), comma,
            name, csvb.text(io_words[network.row_io[sl]]), csvb.integers(network.row_slot[sl]), comma,
            csvb.text(shapes[network.row_shape[sl]]), comma,
            csvb.text(overflow[cols["overflow"][sl]]), comma,
        ]
        for key in METRICS:
            fields += [csvb.fixed(cols[key][sl]), comma]
        fields += [std_cell, comma]
        for key in METRICS_AFTER_STD:
            fields += [csvb.fixed(cols[key][sl]), comma]
        fields.append(csvb.text(reasons[cols["reason"][sl]]))
        return fields

    with open(path, "wb") as handle:
        handle.write(HEADER.encode() + b"\n")
        csvb.write_blocks(handle, network.rows, block)


def _hex(values: np.ndarray, digits: int = 12) -> np.ndarray:
    nibbles = (values[:, None] >> (4 * np.arange(digits - 1, -1, -1))) & 0xF
    return np.frombuffer(b"0123456789abcdef", dtype=np.uint8)[nibbles]


# --- the graph -----------------------------------------------------------------------------------

FUSED_PASS = "MatMulBiasaddFusionPass"


def _graph_ops(network: Network) -> Iterator[str]:
    """The ``op { ... }`` blocks of the network's GE Build graph, in table order."""
    n_ops = len(network.op_name)
    names = [n.decode() for n in network.op_name.tolist()]
    types = [t.decode() for t in network.op_type.tolist()]
    flowing = (network.row_source == X) & (network.row_io == 0)
    x_inputs = np.bincount(network.row_op[flowing], minlength=n_ops)
    # Residual Adds: the second flowing input comes from the residual stream, not the previous op.
    residual = np.full(n_ops, -1, np.int64)
    in_layer = (network.segment == 1) | (network.segment == 2)
    layer_start = np.flatnonzero(in_layer & (network.spec == 0))
    start_of = np.zeros(n_ops, np.int64)
    start_of[in_layer] = layer_start[np.searchsorted(layer_start, np.flatnonzero(in_layer), side="right") - 1]
    add, add_1 = _op_position("Add"), _op_position("Add_1")
    residual[in_layer & (network.spec == add)] = start_of[in_layer & (network.spec == add)] - 1
    residual[in_layer & (network.spec == add_1)] = start_of[in_layer & (network.spec == add_1)] + add
    for o in range(n_ops):
        if network.segment[o] == 5:  # Node_Output: a row of the table, not an op
            continue
        inputs = [f"{names[o - 1]}:0"] * int(x_inputs[o]) if o else []
        if residual[o] >= 0 and len(inputs) > 1:
            inputs[1] = f"{names[residual[o]]}:0"
        golden = network.golden[o].decode().strip('"')
        originals = [] if network.target_only[o] else golden.split(",")
        yield op_text(names[o], types[o], inputs, originals, FUSED_PASS if len(originals) > 1 else "", op_id=o)


def write_graph(path: Path, network: Network) -> int:
    """Write the network's GE graph dump (protobuf text, Build stage); returns the op count."""
    return write_dump(path, _graph_ops(network), name="llm_decoder")


@dataclass
class Generated:
    path: Path
    rows: int
    ops: int
    layers: int
    root_op: int
    root_name: str
    graph: Path | None = None   # the GE graph dump, when one was asked for
    graph_ops: int = 0


def write_llm_comparison(path: str | Path, rows: int, seed: int = 0, *, graph: str | Path | None = None) -> Generated:
    """Write an msaccucmp ``result_*.csv`` of exactly ``rows`` rows (and, given ``graph``, the matching
    GE graph dump there); see the module docstring."""
    path = Path(path)
    network = build_network(rows)
    comparison = simulate(network, seed)
    write_comparison(path, comparison)
    graph_ops = write_graph(Path(graph), network) if graph is not None else 0
    return Generated(path, rows, len(network.op_name), network.layers, comparison.root_op, comparison.root_name,
                     Path(graph) if graph is not None else None, graph_ops)
