"""Calibration-set scenarios: MTCNN's P-Net (real weights, facenet-pytorch) quantised to int8 with ONNX
Runtime's static quantisation, calibrated on correctly preprocessed photo crops, on the same crops in
BGR order, on raw pixels (not normalised), and on two crops only.

    python -m benchmarks.scenarios.calibration --out DIR

For each calibration set: ONNX Runtime's calibrator computes the ranges (written as ONNX Runtime
writes them, ``save_tensors_data``: ``calibration.json``), ``quantize_static`` builds the QDQ model
from the same data, both models run on the golden inputs (crops of other photos), and their tensors
are dumped with the vendor file names; ``advisor compare`` writes the comparison. DIR holds
``model.onnx``, ``golden/`` (every tensor of the float run), and per set ``<set>/`` with
``calibration.json``, ``build.yaml``, ``target/`` (the input's dump: what advisor's input probes read)
and the comparison ``result.csv``; ``labels.yaml`` names the rule each set must fire.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import yaml

from benchmarks.scenarios.dumps import golden_dump_name, npu_dump_name
from benchmarks.scenarios.networks import mtcnn, package_file

SIZE = 24                                      # P-Net is fully convolutional: 24 x 24 crops
GOLDEN_PHOTOS = ("astronaut.png", "coffee.png", "chelsea.png")
CALIBRATION_PHOTOS = ("rocket.jpg", "motorcycle_left.png", "retina.jpg", "ihc.png", "astronaut.png", "coffee.png")
TIMESTAMP = 1714987410000000
SETS = {   # name -> (preprocessing of the calibration crops, how many crops, the rule it must fire)
    "correct": ("rgb", 48, None),
    "bgr": ("bgr", 48, None),
    "unnormalised": ("raw", 48, "calibration-unnormalised"),
    "two_images": ("rgb", 2, "calibration-unrepresentative"),
}


def _photo(name: str) -> np.ndarray:
    from PIL import Image

    with Image.open(package_file("skimage", "data", name)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def crops(names: tuple[str, ...], per_photo: int, seed: int) -> list[np.ndarray]:
    """Square crops of random size and place, resized to SIZE: real image statistics at P-Net's scale."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for name in names:
        image = _photo(name)
        for _ in range(per_photo):
            side = int(rng.integers(SIZE, min(image.shape[:2]) // 2))
            y = int(rng.integers(0, image.shape[0] - side + 1))
            x = int(rng.integers(0, image.shape[1] - side + 1))
            out.append(np.asarray(Image.fromarray(image[y:y + side, x:x + side]).resize((SIZE, SIZE),
                                                                                        Image.BILINEAR)))
    return out


def preprocess(pixels: list[np.ndarray], mode: str) -> np.ndarray:
    """NCHW float32: MTCNN's (x - 127.5) / 128 on RGB ("rgb"), on reversed channels ("bgr"), or none ("raw")."""
    x = np.stack(pixels).astype(np.float32)
    if mode == "bgr":
        x = x[..., ::-1]
    if mode != "raw":
        x = (x - 127.5) * 0.0078125
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def export_pnet(path: Path) -> Path:
    """P-Net as ONNX, its nodes named ``Conv_0``, ``PRelu_1``... (names a dump file keeps as they are, so the
    comparison and the graph share them)."""
    import onnx
    import torch

    net = mtcnn("pnet").eval()
    torch.onnx.export(net, torch.zeros(1, 3, SIZE, SIZE), str(path), input_names=["image"],
                      dynamic_axes={"image": {0: "batch"}}, opset_version=17, dynamo=False)
    model = onnx.load(str(path))
    for i, node in enumerate(model.graph.node):
        node.name = f"{node.op_type}_{i}"
    onnx.save(model, str(path))
    return path


class _Reader:
    """ONNX Runtime's CalibrationDataReader over a batch, one crop at a time."""

    def __init__(self, batch: np.ndarray) -> None:
        self._items = iter([{"image": batch[i:i + 1]} for i in range(len(batch))])

    def get_next(self) -> dict | None:
        return next(self._items, None)

    def rewind(self) -> None:                  # quantize_static may ask
        pass


def _all_outputs(model_path: Path, names: list[str], out_path: Path) -> Path:
    """A copy of the model that also outputs ``names`` (value names of its graph)."""
    import onnx

    model = onnx.load(str(model_path))
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    onnx.save(model, str(out_path))
    return out_path


def _run(model_path: Path, names: list[str], batch: np.ndarray, work: Path) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    probe = _all_outputs(model_path, names, work / f"{model_path.stem}.all.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(probe), options, providers=["CPUExecutionProvider"])
    values = session.run(names, {"image": batch})
    return dict(zip(names, values, strict=True))


def _seen_by_consumers(qdq_path: Path, tensors: list[str]) -> dict[str, str]:
    """For each float tensor, the QDQ model's value its consumers read: its dequantised copy when the
    quantiser inserted one, else itself."""
    import onnx

    names = {o for node in onnx.load(str(qdq_path)).graph.node for o in node.output}
    return {t: f"{t}_DequantizeLinear_Output" if f"{t}_DequantizeLinear_Output" in names else t for t in tensors}


def _nodes(model_path: Path) -> list[tuple[str, str, list[str], list[str]]]:
    import onnx

    graph = onnx.load(str(model_path)).graph
    weights = {i.name for i in graph.initializer}
    return [(n.name, n.op_type, [i for i in n.input if i and i not in weights], list(n.output)) for n in graph.node]


def _write_golden(folder: Path, nodes: list, values: dict[str, np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / golden_dump_name("image", 0, TIMESTAMP), values["image"])
    for k, (name, _, _, outputs) in enumerate(nodes, start=1):
        for slot, tensor in enumerate(outputs):
            np.save(folder / golden_dump_name(name, slot, TIMESTAMP + k), values[tensor])


def _write_target(folder: Path, nodes: list, values: dict[str, np.ndarray], fed: np.ndarray) -> None:
    """The int8 run's dumps: the input as fed (``fed``), and every op's inputs and outputs as its
    consumers read them (dequantised)."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / npu_dump_name("Data", "image", 1, 0, TIMESTAMP, "output", 0), fed)
    for k, (name, op_type, inputs, outputs) in enumerate(nodes, start=2):
        for io, tensors in (("input", inputs), ("output", outputs)):
            for slot, tensor in enumerate(tensors):
                np.save(folder / npu_dump_name(op_type, name, k, 0, TIMESTAMP + k, io, slot), values[tensor])


def _one_set(out: Path, work: Path, model: Path, nodes: list, golden_batch: np.ndarray, name: str) -> None:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, create_calibrator, quantize_static
    from onnxruntime.quantization.calibrate import save_tensors_data

    from advisor.compare.runner import CompareOptions, compare_dumps

    mode, count, _ = SETS[name]
    calibration = preprocess(crops(CALIBRATION_PHOTOS, 8, seed=2)[:count], mode)
    folder = out / name
    calibrator = create_calibrator(str(model), [], augmented_model_path=str(work / f"{name}.augmented.onnx"),
                                   calibrate_method=CalibrationMethod.MinMax)
    calibrator.collect_data(_Reader(calibration))
    folder.mkdir(parents=True, exist_ok=True)
    save_tensors_data(calibrator.compute_data(), folder / "calibration.json")
    qdq = work / f"{name}.qdq.onnx"
    quantize_static(str(model), str(qdq), _Reader(calibration), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=False,
                    calibrate_method=CalibrationMethod.MinMax)
    tensors = ["image", *{t for _, _, ins, outs in nodes for t in (*ins, *outs)}]
    seen = _seen_by_consumers(qdq, tensors)
    run = _run(qdq, sorted(set(seen.values()) - {"image"}), golden_batch, work)
    run["image"] = golden_batch
    target = {t: run[v] if v in run else golden_batch for t, v in seen.items()}
    _write_target(work / f"{name}.target", nodes, target, golden_batch)
    compare_dumps(CompareOptions(golden=out / "golden", target=work / f"{name}.target", output=folder / "result.csv",
                                 graphs=(model,), jobs=1, progress=False, resume=False))
    _write_target_input(folder / "target", golden_batch)
    (folder / "build.yaml").write_text(yaml.safe_dump({"tool": "onnxruntime", "quantization": {
        "precision": "int8", "weights": {"granularity": "per_tensor", "symmetric": True},
        "activations": {"symmetric": False, "calibration": "minmax"},
        "calibration_table": "calibration.json"}}, sort_keys=False), encoding="utf-8")


def _write_target_input(folder: Path, image: np.ndarray) -> None:
    """The target's input dump alone: what advisor's input probes read (the other target tensors are in the
    comparison already)."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / npu_dump_name("Data", "image", 1, 0, TIMESTAMP, "output", 0), image)


def generate(out: Path, sets: list[str] | None = None) -> dict[str, dict]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = export_pnet(out / "model.onnx")
        nodes = _nodes(model)
        golden_batch = preprocess(crops(GOLDEN_PHOTOS, 2, seed=1), "rgb")
        tensors = [t for _, _, _, outs in nodes for t in outs]
        golden = _run(model, tensors, golden_batch, work)
        golden["image"] = golden_batch
        _write_golden(out / "golden", nodes, golden)
        for name in sets or list(SETS):
            _one_set(out, work, model, nodes, golden_batch, name)
    labels = {name: {"rule": SETS[name][2], "preprocessing": SETS[name][0], "crops": SETS[name][1]}
              for name in sets or list(SETS)}
    (out / "labels.yaml").write_text(yaml.safe_dump(labels, sort_keys=False), encoding="utf-8")
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scenarios.calibration",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", choices=list(SETS))
    args = parser.parse_args(argv)
    labels = generate(args.out, args.only)
    print(f"{len(labels)} calibration sets in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
