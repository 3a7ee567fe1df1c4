"""Replay: a blamed op cut out of the model and run on ONNX Runtime CPU with the target's own inputs.

The op's original subgraph (a fused target op: every golden op it was fused from) is extracted with
``onnx.utils.Extractor`` (what ``onnx.utils.extract_model`` does, on the model already loaded), fed
the tensors the target dumped as the op's inputs, and computed in float32. Three cosines say what
happened; the rules (``rules/core/verification/replay-*.yaml``) read them:

- the CPU result matches the golden output, the target's does not: the op is wrong on the target;
- the CPU result matches the target's output: the op is right, its error came in with its inputs;
- neither: the comparison paired tensors that do not belong together.

Each replay leaves a repro pack in the report folder: the sub-model, its inputs, the expected outputs
(golden and target) and a README with the commands to run it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..evidence.facts import GoldenInputs
from ..tensors.dump_names import safe_name
from ..tensors.lineage import load_dump
from ..tensors.metrics import cosine_similarity
from .model import ReplayCheck, ReproFile
from .onnxgraph import Group, OnnxModel, group_inputs, group_output

PACK_FOLDER = "replay"
#: (sub-model bytes, its group, the feeds) -> its output computed in the target's precision
Emulate = Callable[[bytes, Group, dict[str, np.ndarray]], np.ndarray]


@dataclass
class OpTensors:
    """What the dumps hold for one target op: its inputs (ONNX tensor -> target array), its output."""

    inputs: dict[str, np.ndarray]
    target: np.ndarray | None
    golden: np.ndarray | None
    missing: str = ""                  # why a tensor the replay needs was not found


def op_tensors(model: OnnxModel, group: Group, dumps: GoldenInputs, frame: pd.DataFrame) -> OpTensors:
    """The target's dumped inputs of ``group`` matched to the subgraph's inputs through the comparison's
    pairing (the golden tensor each input row pairs with names the ONNX tensor), and its output."""
    rows = frame[(frame["op_index"] == group.index) & frame["io"].isin(["input", "output"])]
    located = dumps.locate(rows)
    inputs: dict[str, np.ndarray] = {}
    target = golden = None
    for row, (target_file, golden_file, _) in zip(rows.to_dict("records"), located, strict=True):
        if target_file is None or golden_file is None:
            continue
        tensor = model.tensor_of(golden_file.name.op, int(golden_file.name.slot) if golden_file.name.slot.isdigit()
                                 else 0)
        if row["io"] == "input" and tensor is not None:
            inputs.setdefault(tensor, np.asarray(load_dump(target_file.path)))
        elif row["io"] == "output" and str(row["slot"]) == "0":
            target, golden = np.asarray(load_dump(target_file.path)), np.asarray(load_dump(golden_file.path))
    needed = group_inputs(model, group)
    absent = [t for t in needed if t not in inputs]
    missing = (f"no target dump pairs with input {absent[0]} of {group.name}" if absent else
               "" if target is not None else f"no target and golden dump of {group.name}'s output")
    return OpTensors({t: inputs[t] for t in needed if t in inputs}, target, golden, missing)


class Replayer:
    """Extracts subgraphs of one model (its shape inference done once) and runs them."""

    def __init__(self, model: OnnxModel) -> None:
        self.model = model
        self._extractor = None

    def submodel(self, group: Group) -> bytes:
        import onnx

        if self._extractor is None:
            self._extractor = onnx.utils.Extractor(self.model.proto)
        sub = self._extractor.extract_model(group_inputs(self.model, group), [group_output(self.model, group)])
        return sub.SerializeToString()

    def replay(self, group: Group, tensors: OpTensors, emulate: Emulate | None = None
               ) -> tuple[ReplayCheck, list[ReproFile]]:
        """Run ``group`` on the target's inputs in float32 (against the golden output) and, with
        ``emulate``, in the target's own precision (against the target's output: an int8 or float16 op
        computed as configured); without it the float32 result stands for both."""
        import onnxruntime as ort

        proto = self.submodel(group)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3
        session = ort.InferenceSession(proto, options, providers=["CPUExecutionProvider"])
        feeds = {i.name: _as_input(tensors.inputs[i.name], i.type) for i in session.get_inputs()}
        (cpu,) = session.run(None, feeds)
        as_target = emulate(proto, group, feeds) if emulate is not None else None
        target, golden = tensors.target, tensors.golden
        check = ReplayCheck(
            op=group.name, index=int(group.index or 0), golden_ops=group.nodes,
            cpu_vs_golden_cosine=_cosine(cpu, golden),
            cpu_vs_target_cosine=_cosine(as_target if as_target is not None else cpu, target),
            target_vs_golden_cosine=_cosine(target, golden),
            target_finite=bool(np.isfinite(np.asarray(target, dtype=np.float64)).all()),
            pack=pack_folder(group), emulated=as_target is not None)
        return check, repro_pack(check, proto, feeds, golden, target)


def pack_folder(group: Group) -> str:
    return f"{PACK_FOLDER}/{group.index}_{safe_name(group.name)}"


def repro_pack(check: ReplayCheck, proto: bytes, feeds: dict[str, np.ndarray], golden: np.ndarray | None,
               target: np.ndarray | None) -> list[ReproFile]:
    """The sub-model, its inputs as fed, the expected outputs, and a README to run it again."""
    folder = check.pack
    files = [ReproFile(f"{folder}/model.onnx", proto)]
    names = []
    for n, (name, value) in enumerate(feeds.items()):
        file = f"inputs/{n}_{safe_name(name)}.npy"
        names.append((name, file))
        files.append(ReproFile(f"{folder}/{file}", _npy(value)))
    for side, value in (("golden", golden), ("target", target)):
        if value is not None:
            files.append(ReproFile(f"{folder}/expected/{side}.npy", _npy(value)))
    files.append(ReproFile(f"{folder}/README.md", _readme(check, names).encode("utf-8")))
    return files


def _readme(check: ReplayCheck, inputs: list[tuple[str, str]]) -> str:
    feeds = ", ".join(f"{name!r}: np.load({file!r})" for name, file in inputs)
    files = ",".join(file for _, file in inputs)
    return "\n".join([
        f"# {check.op} (op {check.index}) on its own",
        "",
        f"`model.onnx` is {check.op} cut out of the model (golden ops: {', '.join(check.golden_ops)}); "
        "`inputs/` holds the tensors the target fed it, `expected/golden.npy` the golden run's output and "
        "`expected/target.npy` the target's.",
        "",
        f"- CPU (ONNX Runtime, float32) vs golden: cosine {_text(check.cpu_vs_golden_cosine)}",
        f"- CPU{' in the target precision' if check.emulated else ''} vs target: cosine "
        f"{_text(check.cpu_vs_target_cosine)}",
        f"- target vs golden: cosine {_text(check.target_vs_golden_cosine)}",
        "",
        "ONNX Runtime on the CPU:",
        "",
        "```sh",
        "python -c \"import numpy as np, onnxruntime as ort; "
        "s = ort.InferenceSession('model.onnx', providers=['CPUExecutionProvider']); "
        f"out = s.run(None, {{{feeds}}})[0]; g = np.load('expected/golden.npy').ravel(); o = out.ravel(); "
        "print('cosine vs golden', float(o @ g / (np.linalg.norm(o) * np.linalg.norm(g))))\"",
        "```",
        "",
        "On an Ascend device (the op alone, with the target's own build settings): convert, then run it with "
        "msit/ais_bench on the same inputs and compare with `expected/`:",
        "",
        "```sh",
        "atc --model=model.onnx --framework=5 --output=op --soc_version=<your SoC> --precision_mode=<as in your build>",
        f"python -m ais_bench --model op.om --input {files} --output out/ --outfmt NPY",
        "```",
        "",
        "With torch_npu, feed the same arrays to the op's PyTorch module on the NPU and compare with `expected/`.",
        "",
    ])


def _as_input(value: np.ndarray, onnx_type: str) -> np.ndarray:
    dtype = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8,
             "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}.get(onnx_type)
    return np.ascontiguousarray(value, dtype=dtype) if dtype is not None else np.ascontiguousarray(value)


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or np.size(a) != np.size(b):
        return None
    value = cosine_similarity(np.asarray(a), np.asarray(b))
    return float(value) if np.isfinite(value) else None


def _npy(value: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(value), allow_pickle=False)
    return buffer.getvalue()


def _text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6g}"
