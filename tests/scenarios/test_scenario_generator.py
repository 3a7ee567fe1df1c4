"""The generator itself: determinism, self-check, dumps, ONNX. Needs torch and the network wheels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SCENARIO_EXTRAS

pytestmark = pytest.mark.scenarios
torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)

from benchmarks.scenarios import catalog, checks, faults  # noqa: E402
from benchmarks.scenarios.cli import main  # noqa: E402
from benchmarks.scenarios.networks import package_file  # noqa: E402
from benchmarks.scenarios.scenario import generate  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "scenarios"


def _have(package: str, *parts: str) -> bool:
    try:
        package_file(package, *parts)
    except (ModuleNotFoundError, FileNotFoundError):
        return False
    return True


needs_mtcnn = pytest.mark.skipif(not (_have("facenet_pytorch", "data", "rnet.pt")
                                      and _have("skimage", "data", "astronaut.png")),
                                 reason="facenet-pytorch / scikit-image data files not installed")


def _spec(name: str) -> catalog.ScenarioSpec:
    return next(s for s in catalog.CORPUS if s.name == name)


@needs_mtcnn
def test_same_seed_gives_byte_identical_results(tmp_path):
    spec = _spec("input_mismatch__mtcnn_rnet__shifted_crop__s1")
    first = generate(spec, tmp_path / "a")
    second = generate(spec, tmp_path / "b")
    assert first.result_csv.name == second.result_csv.name
    assert first.result_csv.read_bytes() == second.result_csv.read_bytes()
    names_a = sorted(p.name for p in (first.directory / "target").iterdir())
    names_b = sorted(p.name for p in (second.directory / "target").iterdir())
    assert names_a == names_b


@needs_mtcnn
def test_another_seed_gives_another_run(tmp_path):
    base = _spec("clean_fp16__mtcnn_onet__allow_fp32_to_fp16__s0")
    other = catalog.select(["clean_fp16"], seed=5)
    moved = next(s for s in other if s.network == "mtcnn_onet")
    a, b = generate(base, tmp_path), generate(moved, tmp_path)
    assert a.result_csv.read_bytes() != b.result_csv.read_bytes()
    assert not a.problems and not b.problems


# Metrics decided by one element: a maximum, or a quotient by a golden element near zero. The
# networks run in float32 on the CPU, whose kernels round differently from one instruction set to
# another (seen: the committed CSVs regenerated on another x86_64 machine moved MaxRelativeError and
# AccumulatedRelativeError by up to 7x, MaxAbsoluteError by 5%). Only where they are NaN or infinite
# is compared; the metrics over all elements are compared as numbers.
ONE_ELEMENT_METRICS = ("MaxAbsoluteError", "AccumulatedRelativeError", "MaxRelativeError", "MeanRelativeError")


@needs_mtcnn
def test_committed_subset_matches_a_fresh_generation(tmp_path):
    """Regenerating --small gives the committed CSVs: the same rows, text and diagnosis; the metrics
    over all elements to rtol 1e-4 (another CPU's float32 kernels moved them by up to 3.5e-5)."""
    assert main(["--out", str(tmp_path), "--small", "--dumps", "none", "--onnx-max-kb", "0"]) == 0
    for directory in sorted(p for p in DATA.iterdir() if p.is_dir()):
        (committed,) = directory.glob("result_*.csv")
        fresh = tmp_path / directory.name / committed.name
        assert fresh.exists(), f"{directory.name}: result file name changed"
        old, new = pd.read_csv(committed), pd.read_csv(fresh)
        numeric = old.select_dtypes("number").columns
        # StandardDeviation is text, "(mean;std),(mean;std)" printed to 3 decimals: its numbers are
        # compared like the others (a last digit may round the other way), the rest of the text exactly.
        spread = [c for c in old.columns if c.startswith("StandardDeviation")]
        pd.testing.assert_frame_equal(old.drop(columns=[*numeric, *spread]), new.drop(columns=[*numeric, *spread]))
        for column in spread:
            np.testing.assert_allclose(_numbers_in(old[column]), _numbers_in(new[column]), rtol=1e-5, atol=1.5e-3,
                                       equal_nan=True, err_msg=f"{directory.name}: {column}")
        whole = [c for c in numeric if c not in ONE_ELEMENT_METRICS]
        np.testing.assert_allclose(old[whole].to_numpy(float), new[whole].to_numpy(float),
                                   rtol=1e-4, atol=1e-5, equal_nan=True, err_msg=directory.name)
        one = [c for c in numeric if c in ONE_ELEMENT_METRICS]
        old_one, new_one = old[one].to_numpy(float), new[one].to_numpy(float)
        assert (np.isnan(old_one) == np.isnan(new_one)).all(), directory.name
        assert (np.isinf(old_one) == np.isinf(new_one)).all(), directory.name
        label_old = json.loads((directory / "label.json").read_text())
        label_new = json.loads((tmp_path / directory.name / "label.json").read_text())
        assert {k: label_old[k] for k in ("kind", "op", "index")} == \
               {k: label_new[k] for k in ("kind", "op", "index")}


def _numbers_in(texts: pd.Series) -> np.ndarray:
    """Every number of a text column, in order (NaN for a cell that holds none)."""
    cells = texts.fillna("").astype(str).str.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf")
    return np.array([float(x) for cell in cells for x in (cell or ["nan"])], dtype=float)


@needs_mtcnn
def test_self_check_fails_loudly_when_the_signature_is_missing(tmp_path, monkeypatch, capsys):
    # A "problem node" whose fault does nothing must be reported, with the scenario's name.
    spec = _spec("problem_node__mtcnn_pnet__prelu_layout__s0")
    harmless = catalog.ScenarioSpec(spec.family, spec.network, spec.variant, spec.seed,
                                    lambda case: faults.OpFault(kind="problem_node", golden_op="PRelu_4",
                                                                override=lambda op, a, mod: mod(a[0])))
    monkeypatch.setattr("benchmarks.scenarios.cli.select", lambda *a, **k: [harmless])
    assert main(["--out", str(tmp_path), "--dumps", "none"]) == 1
    assert spec.name in capsys.readouterr().err


INPUT_CHANGED_IN_MODEL = [s for s in catalog.RULE_CASES if s.family in ("layout_nchw_nhwc", "duplicate_normalization")]


@needs_mtcnn
@pytest.mark.parametrize("spec", INPUT_CHANGED_IN_MODEL, ids=lambda s: s.name)
def test_an_input_the_build_changes_agrees_and_error_enters_after_it(tmp_path, spec):
    """The rule-case faults whose input agrees with the golden one (the golden run's normalised tensor into a
    model that normalises it; the NCHW buffer declared NHWC): the self-check holds them to that, and the
    same build fed what it expects (raw pixels; the buffer transposed) agrees everywhere."""
    result = generate(spec, tmp_path)
    assert result.problems == []
    judged = checks.judge(result.result_csv)
    assert not judged.op(0)["out_deviates"] and judged.first(judged.deviating) > 0 and judged.output_deviates
    label = json.loads((result.directory / "label.json").read_text())
    assert label["op"] == "images" and label["index"] == 0
    intended = {"layout_nchw_nhwc": lambda x: x.permute(0, 2, 3, 1).contiguous(),
                "duplicate_normalization": lambda x: (x * 128.0 + 127.5).round().clamp(0, 255)}[spec.family]

    def fed_right(case):
        fault = spec.make_fault(case)
        fault.make_input = intended
        return fault
    right = generate(catalog.ScenarioSpec(spec.family, spec.network, "fed_right", spec.seed, fed_right), tmp_path)
    judged = checks.judge(right.result_csv)
    assert judged.first(judged.deviating & (judged.ops["op_type"] != "Data")) is None
    assert not judged.output_deviates


@needs_mtcnn
def test_an_output_handed_over_nhwc_is_the_golden_output_transposed_and_no_op_deviates(tmp_path):
    (spec,) = [s for s in catalog.RULE_CASES if s.family == "output_layout"]
    result = generate(spec, tmp_path)
    assert result.problems == []
    judged = checks.judge(result.result_csv)
    assert judged.first(judged.deviating) is None and judged.output_deviates
    frame = checks.read_result(result.result_csv)
    first = frame[frame["is_output"]].iloc[0]
    golden = np.load(result.directory / "golden" / first["GroundTruth"])
    target = np.load(_dump_at(result.directory / "target", frame, first["Address"]))
    assert golden.ndim == 4 and target.shape == golden.transpose(0, 2, 3, 1).shape
    np.testing.assert_allclose(target, golden.transpose(0, 2, 3, 1), atol=2e-3)


def _dump_at(folder: Path, frame: pd.DataFrame, address: str) -> Path:
    """The target dump file of the op output written at ``address`` (the Node_Output row's)."""
    row = frame[(frame["Address"] == address) & ~frame["is_output"] & (frame["io"] == "output")].iloc[0]
    name = row["NPUDump"]
    return next(p for p in folder.iterdir() if f".{name}." in p.name and ".output." in p.name)


@needs_mtcnn
def test_dumps_cover_every_target_tensor_and_golden_op(tmp_path):
    result = generate(_spec("clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0"), tmp_path)
    frame = checks.read_result(result.result_csv)
    target_files = list((result.directory / "target").glob("*.npy"))
    assert len(target_files) == int((~frame["is_output"]).sum())
    golden_names = {p.name.split(".")[0] for p in (result.directory / "golden").glob("*.npy")}
    for ground_truth in frame.loc[~frame["is_output"] & (frame["GroundTruth"] != "*"), "GroundTruth"]:
        assert set(ground_truth.split(",")) <= golden_names


@needs_mtcnn
def test_onnx_export_reproduces_the_golden_outputs(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    result = generate(_spec("clean_fp16__mtcnn_rnet__allow_fp32_to_fp16__s0"), tmp_path)
    golden = result.directory / "golden"
    session = ort.InferenceSession(str(result.directory / "model.onnx"), providers=["CPUExecutionProvider"])
    (feed,) = golden.glob("images.0.*.npy")
    outputs = session.run(None, {"images": np.load(feed)})
    for info, value in zip(session.get_outputs(), outputs, strict=True):
        (reference,) = golden.glob(f"{info.name}.0.*.npy")
        np.testing.assert_allclose(value, np.load(reference), atol=1e-5)


@needs_mtcnn
def test_a_training_transform_left_on_treats_each_window_of_the_batch_its_own_way():
    """The random_preprocessing rule-case fault: each target window is its golden window through the one
    augmentation drawn for it (untouched, mirrored, moved with a black border, brightened), the draws differ
    from window to window, and a batched R-Net fed the golden windows computes what R-Net does on each alone."""
    from benchmarks.scenarios import inputs
    from benchmarks.scenarios.cases import build_case
    from benchmarks.scenarios.rule_case_faults import PADDING, augment

    (spec,) = [s for s in catalog.RULE_CASES if s.family == "random_preprocessing"]
    case = build_case(spec.network, spec.seed, **spec.case_args)
    golden = case.feeds["images"]
    target = spec.make_fault(case).target_feeds(case.feeds)["images"]
    generator = torch.Generator().manual_seed(7)
    names = [augment(window, generator)[1] for window in case.raw]
    assert len(set(n.split("(")[0] for n in names)) >= 3 and "identity" in names
    for name, g, t in zip(names, golden, target, strict=True):
        raw_g, raw_t = g / 0.0078125 + 127.5, t / 0.0078125 + 127.5
        if name == "identity":
            assert torch.equal(t, g)
        elif name == "hflip":
            assert torch.equal(t, g.flip(-1))
        elif name.startswith("translate"):
            dy, dx = (int(v) for v in name[len("translate("):-1].split(","))
            moved = torch.roll(raw_g, (dy, dx), dims=(-2, -1))
            inner = (slice(None), slice(PADDING, -PADDING), slice(PADDING, -PADDING))
            assert torch.allclose(raw_t[inner], moved[inner], atol=1e-3)
            assert raw_t.amin() == 0.0                                  # the black border
        else:
            factor = float(name[len("brightness("):-1])
            assert torch.allclose(raw_t, (raw_g * factor).clamp(0, 255), atol=0.01 * 255)
    batched = case.module(golden)[0]
    case.module.batch = 1
    alone = torch.cat([case.module(inputs.mtcnn_normalise(window[None]))[0] for window in case.raw])
    assert torch.allclose(batched, alone, atol=1e-5)


def test_an_int8_kernel_computed_right_is_the_simulated_layer_and_the_one_scale_bug_rescales_channels():
    """The quant_backend_issue rule-case fault: the layer in integer arithmetic as configured equals the framework's
    fake-quantised layer (min/max symmetric input, per-channel weights); the kernel bug multiplies each output
    channel by channel 0's weight scale over its own."""
    from benchmarks.scenarios.emulation import OpContext, TargetOp
    from benchmarks.scenarios.rule_case_faults import Int8KernelFault

    generator = torch.Generator().manual_seed(3)
    x, weight = torch.randn(5, 16, generator=generator), torch.randn(16, 8, generator=generator)
    weight[:, 3] *= 10                                              # one channel of a much wider range
    op = TargetOp(7, "MatMul_7", "BatchMatMulV2", ["MatMul_7"], ["x"], "y", "compute")

    def computed(one_scale: bool) -> torch.Tensor:
        fault = Int8KernelFault(kind="quant_backend_issue", golden_ops=("MatMul_7",), calibration="minmax",
                                weight=weight, one_scale=one_scale)
        return fault.run_op(OpContext(op, [x], lambda inputs, overrides: inputs[0] @ weight, calibration=[x]))

    simulated = faults.fake_quant_activation(x, True, float(x.min()), float(x.max())) @ \
        faults.int8_weights(weight, per_tensor=False, channel_axis=-1)
    assert torch.allclose(computed(False), simulated, atol=1e-5)
    scales = weight.abs().amax(dim=0)
    assert torch.allclose(computed(True), computed(False) * scales[0] / scales, atol=1e-5)
