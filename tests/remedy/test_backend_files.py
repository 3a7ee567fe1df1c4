"""Every backend's files are valid in their language, deterministic, and keep hostile op names inert:
Python compiles to the same program whatever the names are, JSON parses, shell scripts pass the exact
names as single arguments, the AMCT config parses as protobuf text, and the formats without quoting
(keep_dtype.cfg, trtexec specs) leave out what they cannot hold and say how many."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.remedy import WRITERS, BuildContext, KeptOp, RemedyStep
from advisor.remedy.backends.pytorch import module_of
from advisor.remedy.quoting import plain_line
from tests.conftest import SCENARIO_EXTRAS

from .conftest import HOSTILE

FP16_BUILD = BuildContext(quantised=False, tool="atc", precision_mode="allow_fp32_to_fp16")
INT8_BUILD = BuildContext(quantised=True, tool="magicmind", precision_mode="qint8_mixed_float16")
EVERY_SETTING = {"weight_quant_granularity": "per_channel", "weight_quant_symmetric": False,
                 "activation_quant_algo": "asymmetric", "activation_calibration": "percentile",
                 "activation_percentile": 99.99, "unknown\nknob": "x\ny"}
SETTINGS = [{}, EVERY_SETTING,
            {"weight_quant_granularity": "per_tensor", "activation_quant_algo": "symmetric",
             "activation_calibration": "minmax", "weight_quant_symmetric": True},
            {"activation_calibration": "kl"}, {"activation_calibration": "mse"}, {"activation_percentile": 99.9}]


def step(names: list[str], precision: str = "float32", settings: dict | None = None,
         findings: tuple[str, ...] = ("f@1",)) -> RemedyStep:
    keep = tuple(KeptOp(op=f"target_{i}", golden=(name,), op_type="Pow" if i % 2 else "ReduceMeanD",
                        precision=precision, finding=findings[0]) for i, name in enumerate(names))
    return RemedyStep(step=2, settings=dict(settings or {}), keep=keep, findings=findings, summary={})


def benign(names: list[str]) -> list[str]:
    return [f"node_{i}" for i in range(len(names))]


def python_shape(source: str) -> str:
    """The program with every string literal blanked: what the names must not be able to change."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = "S"
    return ast.dump(tree)


def assigned_literal(source: str, name: str):
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned")


CASES = [(backend, context, settings) for backend in WRITERS for context in (FP16_BUILD, INT8_BUILD)
         for settings in (SETTINGS if context.quantised else [{}])]


@pytest.mark.parametrize(("backend", "context", "settings"), CASES,
                         ids=[f"{b}-{'int8' if c.quantised else 'fp16'}-{'+'.join(s) or 'no settings'}"
                              for b, c, s in CASES])
def test_python_and_json_files_are_valid_and_names_only_change_literals(backend, context, settings) -> None:
    hostile = WRITERS[backend](step(HOSTILE, settings=settings), context)
    plain = WRITERS[backend](step(benign(HOSTILE), settings=settings), context)
    assert hostile, "every backend has something to write for a step that keeps ops"
    assert hostile == WRITERS[backend](step(HOSTILE, settings=settings), context)      # deterministic
    for name, text in hostile.items():
        assert text.endswith("\n") and "\r" not in text
        if name.endswith(".py"):
            compile(text, name, "exec")
            assert python_shape(text) == python_shape(plain[name]), name
        elif name.endswith(".json"):
            json.loads(text)
    for name, text in hostile.items():
        for constant in ("KEEP", "NODES_TO_EXCLUDE", "NODE_BLOCK_LIST", "MODULES"):
            if name.endswith(".py") and f"\n{constant} = " in text:
                assert list(assigned_literal(text, constant)) == HOSTILE       # every name, exactly


def test_magicmind_build_config_uses_its_own_spelling() -> None:
    files = WRITERS["magicmind"](step(["a"], settings=EVERY_SETTING), INT8_BUILD)
    assert json.loads(files["build_config.json"]) == {"precision_config": {
        "precision_mode": "qint8_mixed_float16", "weight_quant_granularity": "per_axis",
        "activation_quant_algo": "asymmetric"}}
    # Another tool's precision mode means nothing to MagicMind: it is not copied.
    files = WRITERS["magicmind"](step(["a"], settings={"weight_quant_granularity": "per_tensor"}), FP16_BUILD)
    assert json.loads(files["build_config.json"]) == {"precision_config": {"weight_quant_granularity": "per_tensor"}}


def test_ascend_fp16_build_lists_names_and_types() -> None:
    files = WRITERS["ascend"](step(HOSTILE), FP16_BUILD)
    listed = files["keep_dtype.cfg"].splitlines()
    assert listed == [n for n in HOSTILE if plain_line(n) and "::" not in n]
    assert "two\nlines" not in files["keep_dtype.cfg"] and "OpType::Pow" not in listed
    assert json.loads(files["ops_info.json"]) == {"black-list": {"to-add": ["ReduceMeanD", "Pow"]}}
    assert "# 3 op name(s) cannot be written to keep_dtype.cfg" in files["atc_command.sh"]
    assert set(files) == {"keep_dtype.cfg", "ops_info.json", "atc_command.sh"}


def test_ascend_int8_build_skips_layers_in_amct_and_keeps_float32_ones_in_keep_dtype() -> None:
    half = WRITERS["ascend"](step(["Conv_1"], precision="float16", settings=EVERY_SETTING), INT8_BUILD)
    assert set(half) == {"amct_quant.cfg"}            # float16 is what ATC gives a skipped layer anyway
    full = WRITERS["ascend"](step(["Conv_1"], settings=EVERY_SETTING), INT8_BUILD)
    assert set(full) == {"amct_quant.cfg", "keep_dtype.cfg", "atc_command.sh"}
    assert "--model is the deploy model AMCT wrote" in full["atc_command.sh"]
    assert "--precision_mode" not in full["atc_command.sh"]    # a MagicMind mode is not an ATC one


def amct_message_class():
    """The part of AMCT's simplified-config message the writer uses, built at run time (the AMCT
    .proto does not ship with advisor): parsing with it checks syntax, field names and types."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="amct_simplified_subset.proto", package="amcttest",
                                              syntax="proto2")

    def message(name: str, *fields: tuple[str, int, str | None, bool]) -> None:
        proto = file.message_type.add(name=name)
        for number, (field_name, kind, type_name, repeated) in enumerate(fields, start=1):
            proto.field.add(name=field_name, number=number, type=kind,
                            label=field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL,
                            **({"type_name": f".amcttest.{type_name}"} if type_name else {}))

    message("ARQuantize", ("channel_wise", field.TYPE_BOOL, None, False))
    message("FMRQuantize", ("search_range_start", field.TYPE_FLOAT, None, False),
            ("search_range_end", field.TYPE_FLOAT, None, False), ("search_step", field.TYPE_FLOAT, None, False),
            ("max_percentile", field.TYPE_FLOAT, None, False), ("min_percentile", field.TYPE_FLOAT, None, False))
    message("HFMGQuantize", ("num_of_bins", field.TYPE_UINT32, None, False))
    message("CalibrationConfig", ("arq_quantize", field.TYPE_MESSAGE, "ARQuantize", False),
            ("ifmr_quantize", field.TYPE_MESSAGE, "FMRQuantize", False),
            ("hfmg_quantize", field.TYPE_MESSAGE, "HFMGQuantize", False))
    message("AMCTConfig", ("batch_num", field.TYPE_UINT32, None, False),
            ("activation_offset", field.TYPE_BOOL, None, False), ("skip_layers", field.TYPE_STRING, None, True),
            ("skip_layer_types", field.TYPE_STRING, None, True),
            ("common_config", field.TYPE_MESSAGE, "CalibrationConfig", False))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("amcttest.AMCTConfig"))


@pytest.mark.parametrize("settings", SETTINGS[1:])
def test_amct_config_parses_as_protobuf_text_with_every_name_intact(settings) -> None:
    from google.protobuf import text_format

    config = amct_message_class()()
    files = WRITERS["ascend"](step(HOSTILE, precision="float16", settings=settings), INT8_BUILD)
    text_format.Parse(files["amct_quant.cfg"], config)
    assert list(config.skip_layers) == HOSTILE
    common = config.common_config
    if "weight_quant_granularity" in settings:
        assert common.arq_quantize.channel_wise == (settings["weight_quant_granularity"] == "per_channel")
    if "activation_quant_algo" in settings:
        assert config.activation_offset == (settings["activation_quant_algo"] == "asymmetric")
    calibration = settings.get("activation_calibration", "percentile")
    assert common.HasField("hfmg_quantize") == (calibration in ("kl", "mse"))
    if calibration == "minmax":
        assert common.ifmr_quantize.max_percentile == 1.0
    elif calibration == "percentile":
        percentile = settings.get("activation_percentile")
        assert common.ifmr_quantize.max_percentile == pytest.approx(percentile / 100 if percentile else 0)


# --- shell scripts: run them with stand-ins for atc and trtexec that record their arguments ------------

@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    if shutil.which("sh") is None:
        pytest.skip("no POSIX shell")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("atc", "trtexec"):
        stub = bin_dir / tool
        stub.write_text('#!/bin/sh\nfor arg in "$@"; do printf "%s\\0" "$arg"; done > "$ARGS_OUT"\n')
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")

    def run(files: dict[str, str], script: str, *args: str) -> list[str]:
        folder = tmp_path / "remedy"
        folder.mkdir(exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        subprocess.run(["sh", "-n", str(folder / script)], check=True)
        out = tmp_path / "args"
        subprocess.run(["sh", str(folder / script), *args], check=True, cwd=tmp_path,
                       env={**__import__("os").environ, "ARGS_OUT": str(out)})
        return out.read_bytes().decode("utf-8").split("\0")[:-1]

    return run


def test_the_atc_script_passes_the_user_options_and_the_keep_list(recorded, tmp_path: Path) -> None:
    argv = recorded(WRITERS["ascend"](step(HOSTILE), FP16_BUILD), "atc_command.sh", "--model=m.onnx", "--framework=5")
    assert argv == ["--model=m.onnx", "--framework=5", "--precision_mode=allow_fp32_to_fp16",
                    f"--keep_dtype={tmp_path}/remedy/keep_dtype.cfg"]


def test_the_trtexec_script_passes_each_spec_as_one_argument(recorded, tmp_path: Path) -> None:
    files = WRITERS["tensorrt"](step(HOSTILE), FP16_BUILD)
    argv = recorded(files, "trtexec.sh", "--onnx=model.onnx")
    written = [n for n in HOSTILE if plain_line(n) and not any(c in n for c in ",:*")]
    spec = ",".join(f"{n}:fp32" for n in written)
    assert argv == ["--onnx=model.onnx", "--precisionConstraints=obey", f"--layerPrecisions={spec}",
                    f"--layerOutputTypes={spec}"]
    assert "# 4 name(s) hold ',', ':' or '*'" in files["trtexec.sh"]
    assert not (tmp_path / "pwned").exists()           # the $(...) in a name never ran


def test_no_trtexec_script_when_no_name_fits_a_spec() -> None:
    files = WRITERS["tensorrt"](step(["a,b", "c:d"]), FP16_BUILD)
    assert set(files) == {"tensorrt_remedy.py"}


# --- Python snippets: run them against stand-ins of the vendor APIs ------------------------------------

class FakeTensor:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def get_data_type(self) -> str:
        return self.dtype


class FakeMagicMindNode:
    def __init__(self, name: str, inputs: list[str], outputs: list[str]) -> None:
        self.name, self.inputs, self.outputs = name, [FakeTensor(d) for d in inputs], [FakeTensor(d) for d in outputs]
        self.calls: list[tuple] = []

    def get_node_name(self) -> str:
        return self.name

    def get_input_count(self) -> int:
        return len(self.inputs)

    def get_output_count(self) -> int:
        return len(self.outputs)

    def get_input(self, i: int) -> FakeTensor:
        return self.inputs[i]

    def get_output(self, i: int) -> FakeTensor:
        return self.outputs[i]

    def set_precision(self, i: int, dtype: str) -> None:
        self.calls.append(("precision", i, dtype))

    def set_output_type(self, i: int, dtype: str) -> None:
        self.calls.append(("output", i, dtype))


class Ok:
    def ok(self) -> bool:
        return True


def load(source: str, path: Path) -> dict:
    path.write_text(source, encoding="utf-8")
    namespace = {"__file__": str(path), "__name__": "remedy_snippet"}
    exec(compile(source, str(path), "exec"), namespace)      # noqa: S102 - the generated file under test
    return namespace


def test_the_magicmind_snippet_sets_the_precision_of_the_named_nodes(tmp_path, monkeypatch) -> None:
    import types
    runtime = types.ModuleType("magicmind.python.runtime")
    runtime.DataType = types.SimpleNamespace(FLOAT32="f32", FLOAT16="f16", INT32="i32")
    runtime.QuantizationAlgorithm = types.SimpleNamespace(LINEAR_ALGORITHM="linear", EQM_ALGORITHM="eqm")
    for module in ("magicmind", "magicmind.python"):
        monkeypatch.setitem(__import__("sys").modules, module, types.ModuleType(module))
    monkeypatch.setitem(__import__("sys").modules, "magicmind.python.runtime", runtime)
    files = WRITERS["magicmind"](step(HOSTILE[:3], settings={"weight_quant_granularity": "per_channel",
                                                             "activation_calibration": "mse"}), INT8_BUILD)
    (tmp_path / "build_config.json").write_text(files["build_config.json"], encoding="utf-8")
    snippet = load(files["magicmind_remedy.py"], tmp_path / "magicmind_remedy.py")
    kept = FakeMagicMindNode(HOSTILE[1], ["f16", "i32"], ["f16"])
    other = FakeMagicMindNode("Add_9", ["f16"], ["f16"])
    network = types.SimpleNamespace(get_all_nodes_in_network=lambda: [kept, other])
    assert snippet["keep_in_higher_precision"](network) == sorted([HOSTILE[0], HOSTILE[2]])
    assert kept.calls == [("precision", 0, "f32"), ("output", 0, "f32")] and other.calls == []
    parsed: list[str] = []
    config = types.SimpleNamespace(parse_from_string=lambda text: parsed.append(text) or Ok())
    snippet["configure"](config)
    assert json.loads(parsed[0])["precision_config"]["weight_quant_granularity"] == "per_axis"
    chosen: list[str] = []
    snippet["set_calibration"](types.SimpleNamespace(set_quantization_algorithm=lambda a: chosen.append(a) or Ok()))
    assert chosen == ["eqm"]


class FakeLayer:
    def __init__(self, name: str, outputs: list[str]) -> None:
        self.name, self.outputs, self.precision = name, [FakeTensor(d) for d in outputs], None
        self.output_types: dict[int, str] = {}

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def get_output(self, i: int) -> FakeTensor:
        return self.outputs[i]

    def set_output_type(self, i: int, dtype: str) -> None:
        self.output_types[i] = dtype


def test_the_tensorrt_snippet_constrains_the_named_layers(tmp_path, monkeypatch) -> None:
    import types
    trt = types.ModuleType("tensorrt")
    trt.float32, trt.float16, trt.int32 = "f32", "f16", "i32"
    trt.BuilderFlag = types.SimpleNamespace(OBEY_PRECISION_CONSTRAINTS="obey")
    trt.IInt8MinMaxCalibrator = type("IInt8MinMaxCalibrator", (), {})
    monkeypatch.setitem(__import__("sys").modules, "tensorrt", trt)
    files = WRITERS["tensorrt"](step(HOSTILE, settings={"activation_calibration": "minmax"}), INT8_BUILD)
    snippet = load(files["tensorrt_remedy.py"], tmp_path / "tensorrt_remedy.py")
    assert snippet["CALIBRATOR_BASE"] is trt.IInt8MinMaxCalibrator
    layers = [FakeLayer(HOSTILE[6], ["f16", "i32"]), FakeLayer("Relu_2", ["f16"])]
    network = types.SimpleNamespace(num_layers=2, get_layer=layers.__getitem__)
    flags: list[str] = []
    missing = snippet["apply_remedy"](network, types.SimpleNamespace(set_flag=flags.append))
    assert flags == ["obey"] and missing == sorted(set(HOSTILE) - {HOSTILE[6]})
    assert (layers[0].precision, layers[0].output_types) == ("f32", {0: "f32"})
    assert (layers[1].precision, layers[1].output_types) == (None, {})


@pytest.mark.scenarios
def test_the_onnxruntime_snippet_quantises_all_but_the_excluded_node(tmp_path) -> None:
    import numpy as np
    import onnx
    quantization = pytest.importorskip("onnxruntime.quantization", reason=SCENARIO_EXTRAS)
    from onnx import TensorProto, helper, numpy_helper

    kept, quantised = HOSTILE[0], "MatMul_2"
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name=kept),
         helper.make_node("Relu", ["h"], ["r"], name="Relu_1"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name=quantised)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(rng.normal(size=(8, 8)).astype("float32"), "w1"),
         numpy_helper.from_array(rng.normal(size=(8, 8)).astype("float32"), "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "model.onnx")

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": rng.normal(size=(1, 8)).astype("float32")} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    settings = {"weight_quant_granularity": "per_channel", "activation_quant_algo": "asymmetric",
                "activation_calibration": "percentile", "activation_percentile": 99.9}
    files = WRITERS["onnxruntime"](step([kept], settings=settings), INT8_BUILD)
    snippet = load(files["ort_quantize.py"], tmp_path / "ort_quantize.py")
    snippet["quantize"](str(tmp_path / "model.onnx"), str(tmp_path / "model.int8.onnx"), Reader())
    result = onnx.load(tmp_path / "model.int8.onnx").graph
    producers = {out: node for node in result.node for out in node.output}
    by_name = {node.name: node for node in result.node}
    assert [producers[i].op_type for i in by_name[kept].input if i in producers] == []     # fed float as is
    assert {producers[i].op_type for i in by_name[quantised].input} == {"DequantizeLinear"}


@pytest.mark.scenarios
def test_the_pytorch_autocast_snippet_runs_the_named_module_in_float32(tmp_path) -> None:
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = torch.nn.Linear(4, 4)
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.proj(self.norm(x))

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x)

    files = WRITERS["pytorch"](step(["/block/norm/MatMul", "Pow_7"]), FP16_BUILD)
    snippet = load(files["torch_autocast.py"], tmp_path / "torch_autocast.py")
    assert snippet["MODULES"] == {"/block/norm/MatMul": "block.norm", "Pow_7": None}
    net = Net()
    dtypes: dict[str, torch.dtype] = {}
    for name in ("norm", "proj"):
        getattr(net.block, name).register_forward_hook(lambda m, i, o, name=name: dtypes.__setitem__(name, o.dtype))
    assert snippet["keep_in_float32"](net) == []
    with torch.autocast("cpu", dtype=torch.bfloat16):
        net(torch.randn(2, 4))
    assert dtypes == {"norm": torch.float32, "proj": torch.bfloat16}


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")   # torch.ao is deprecated
@pytest.mark.scenarios
def test_the_pytorch_quantisation_snippet_leaves_the_named_module_in_float(tmp_path) -> None:
    torch = pytest.importorskip("torch", reason=SCENARIO_EXTRAS)
    from torch.ao.quantization.quantize_fx import convert_fx

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.keep = torch.nn.Linear(4, 4)
            self.quant = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.quant(torch.relu(self.keep(x)))

    settings = {"weight_quant_granularity": "per_tensor", "activation_calibration": "minmax"}
    files = WRITERS["pytorch"](step(["/keep/Gemm"], settings=settings), INT8_BUILD)
    snippet = load(files["torch_quantize.py"], tmp_path / "torch_quantize.py")
    example = (torch.randn(2, 4),)
    prepared = snippet["prepare"](Net().eval(), example)
    prepared(*example)
    converted = convert_fx(prepared)
    assert type(converted.keep) is torch.nn.Linear
    assert type(converted.quant).__module__.startswith("torch.ao.nn.quantized")


def test_module_paths_come_only_from_exporter_scopes() -> None:
    assert module_of("/encoder/layer.0/attention/Softmax") == "encoder.layer.0.attention"
    assert module_of("/Pow") is None and module_of("Pow_4") is None
    assert module_of("/a b/Pow") is None and module_of("/x\n/Pow") is None


def test_static_int8_scripts_say_so_when_the_build_is_weight_only() -> None:
    weight_only = BuildContext(quantised=True, tool="magicmind", precision_mode="qint8_mixed_float16",
                               weight_only=True)
    for backend, name in (("onnxruntime", "ort_quantize.py"), ("pytorch", "torch_quantize.py")):
        text = WRITERS[backend](step(["a"], settings={"weight_quant_granularity": "per_channel"}), weight_only)[name]
        compile(text, name, "exec")
        assert "quantises weights only" in text
        plain = WRITERS[backend](step(["a"], settings={"weight_quant_granularity": "per_channel"}), INT8_BUILD)[name]
        assert "quantises weights only" not in plain
