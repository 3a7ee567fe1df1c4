"""Hostile and broken input: helpers to run advisor as a user would and to check its one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from advisor.cli import main

REPO = Path(__file__).resolve().parents[2]
MAX_ERROR_LINE = 2_500        # characters of the one-line error a user reads


@dataclass
class Result:
    code: int
    out: str
    err: str

    def one_line_error(self, *names: str) -> str:
        """Exit 2 with one bounded line on stderr that names each of ``names``; returns the line."""
        assert self.code == 2, (self.code, self.err[-2000:])
        lines = self.err.strip("\n").splitlines()
        assert len(lines) == 1, self.err[-2000:]
        assert len(lines[0]) <= MAX_ERROR_LINE, lines[0][:300]
        assert "internal error" not in lines[0] and "Traceback" not in self.err
        for name in names:
            assert name in lines[0], (name, lines[0])
        return lines[0]


@pytest.fixture
def advisor(capsys: pytest.CaptureFixture[str]):
    """``advisor(*argv)`` in this process (for inputs that cannot hang)."""

    def run(*argv: object) -> Result:
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:                   # argparse refuses an argument
            code = exc.code
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def advisor_process(*argv: object, timeout: float = 120, cwd: Path | None = None,
                    env: dict[str, str] | None = None, memory: int | None = None) -> Result:
    """``python -m advisor ARGV`` in a child process, for inputs that used to hang or blow up; a hang is
    a failure after ``timeout`` seconds (a guard, not a speed target). ``memory``: the child's address
    space in bytes (a memory bomb then ends in MemoryError, exit 3, instead of taking the machine)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    command = [sys.executable, "-m", "advisor"]
    if memory is not None:
        command = [sys.executable, "-c", "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, "
                   f"({memory}, {memory})); from advisor.cli import main; sys.exit(main(sys.argv[1:]))"]
    try:
        done = subprocess.run([*command, *map(str, argv)], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, env=environment)
    except subprocess.TimeoutExpired:
        pytest.fail(f"advisor {' '.join(map(str, argv))} still running after {timeout} s")
    return Result(done.returncode, done.stdout, done.stderr)


def model_with_external_weights(path: Path, location: str) -> Path:
    """A small ONNX model (y = x + w) saved as onnx writes it with its weights in an external file
    ``location`` beside it; the caller then points ``location`` elsewhere. Skips without onnx."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.arange(16, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])], [weight])
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(helper.make_model(graph), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    if location != "weights.bin":
        model = onnx.load(str(path), load_external_data=False)
        for entry in model.graph.initializer[0].external_data:
            if entry.key == "location":
                entry.value = location
        onnx.save_model(model, str(path))
    return path
