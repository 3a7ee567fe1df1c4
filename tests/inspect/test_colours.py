"""`advisor ops` and `advisor node` colour a cosine by the limit `advisor run` judges it by: its dtype's
(knowledge/thresholds.yaml), the gradient profile for backward rows, the identical-inputs profile for
the output of an op whose inputs agree bit for bit. Never one fixed number for every dtype."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.cli.node import node_text
from advisor.cli.ops import ops_text
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison
from advisor.inspect.limits import cosine_limit
from advisor.inspect.node import inspect_node
from advisor.inspect.ops import list_ops

REALTOOL = Path(__file__).resolve().parents[1] / "data" / "realtool"
# msprobe (tensor mode) on a real float32 network whose input crop was mirrored on one side.
MIRRORED = next((REALTOOL / "msprobe_input_mismatch__mtcnn_onet__mirrored_crop__L1_tensor").glob("*.csv"))
# msprobe on a clean autocast bfloat16 training step: its backward drifts further than its forward.
CLEAN_BF16 = next((REALTOOL / "msprobe_clean_bf16__small_convnet__autocast_bf16__L1_tensor").glob("*.csv"))
RED, GREEN = "\x1b[31m", "\x1b[32m"


def _coloured_line(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in re.sub(r"\x1b\[[0-9;]*m", "", line))


def test_a_float32_op_below_its_own_limit_is_red_although_above_0_99():
    ops = list_ops(read_comparison(MIRRORED), name="Functional.linear.2.forward")
    assert ops[0].dtype == "float32" and 0.99 < ops[0].outputs["cosine"] < 0.999
    line = _coloured_line(ops_text(ops, colour=True), "linear.2")
    assert RED in line and GREEN not in line
    # A project that accepts more for float32 sees it green.
    relaxed = load_thresholds(("float32.cosine=0.99",))
    assert RED not in _coloured_line(ops_text(ops, colour=True, thresholds=relaxed), "linear.2")


def test_a_low_precision_gradient_is_judged_by_the_gradient_profile():
    table = read_comparison(CLEAN_BF16)
    ops = list_ops(table, name="Functional.relu.0.backward")
    op = ops[0]
    assert op.backward and op.dtype == "bfloat16" and 0.95 < op.outputs["cosine"] < 0.98
    assert GREEN in _coloured_line(ops_text(ops, colour=True), "relu.0.backward")
    # Its forward dtype's limit would paint it red: the profile is what makes it green.
    assert op.outputs["cosine"] < load_thresholds().for_dtype("bfloat16")["cosine"]
    text = node_text(inspect_node("Functional.relu.0.backward", table), colour=True)
    assert RED not in text


def test_node_paints_the_float32_output_red():
    report = inspect_node("Functional.linear.2.forward", read_comparison(MIRRORED))
    output = next(t for t in report.tensors if t.io == "output")
    assert 0.99 < output.metrics["cosine"] < 0.999
    line = _coloured_line(node_text(report, colour=True), output.tensor)
    assert RED in line


def test_limits_per_dtype_and_profile():
    thresholds = load_thresholds()
    assert cosine_limit(thresholds, "float32") == 0.999
    assert cosine_limit(thresholds, "float16") == 0.99
    assert cosine_limit(thresholds, "float32", identical_inputs=True) == 0.99998
    assert cosine_limit(thresholds, "bfloat16", backward=True) == 0.95
    assert cosine_limit(thresholds, "float32", backward=True) == 0.999      # no gradient.float32 entry
    assert cosine_limit(thresholds, "complex64") == cosine_limit(thresholds, None) == 0.99   # default
