"""msprobe / ptdbg tensor names split into call, API, io, slot and direction."""

from __future__ import annotations

import pandas as pd
import pytest

from advisor.ingest.msprobe_names import split_call_names, split_tensor_names

NA = None


@pytest.mark.parametrize(("name", "call", "op_type", "io", "slot", "direction"), [
    ("Functional.linear.0.forward.input.0", "Functional.linear.0.forward", "Functional.linear", "input", 0,
     "forward"),
    ("Torch.relu.1.forward.output.0", "Torch.relu.1.forward", "Torch.relu", "output", 0, "forward"),
    ("Functional.linear.0.backward.input.0", "Functional.linear.0.backward", "Functional.linear", "input", 0,
     "backward"),
    ("Functional.flash_attention_score.0.forward.input.pse", "Functional.flash_attention_score.0.forward",
     "Functional.flash_attention_score", "input", NA, "forward"),
    ("Torch.cat.8.forward.input.0.1", "Torch.cat.8.forward", "Torch.cat", "input", 0, "forward"),
    ("X.0.forward.input.key_input", "X.0.forward", "X", "input", NA, "forward"),
    ("Primitive.norm.RmsNorm.0.forward.output.1", "Primitive.norm.RmsNorm.0.forward", "Primitive.norm.RmsNorm",
     "output", 1, "forward"),
    # modules: direction before the counter; a path segment named "output" is not the io
    ("Module.model.output.Linear.forward.0.input.0", "Module.model.output.Linear.forward.0", "Module.Linear",
     "input", 0, "forward"),
    ("Cell.fc1.Dense.backward.0.output.0", "Cell.fc1.Dense.backward.0", "Cell.Dense", "output", 0, "backward"),
    ("Module.fc.Linear.forward.0.parameters.weight", "Module.fc.Linear.forward.0", "Module.Linear", "parameter",
     NA, "forward"),
    ("Module.fc.Linear.parameters_grad.weight", "Module.fc.Linear", "Module.Linear", "parameter_grad", NA,
     "backward"),
    # old ptdbg spelling
    ("Functional_linear_0_forward_input.1", "Functional_linear_0_forward", "Functional.linear", "input", 1,
     "forward"),
    ("Functional_linear_0_forward_output", "Functional_linear_0_forward", "Functional.linear", "output", 0,
     "forward"),
    ("Tensor___add___3_forward_output", "Tensor___add___3_forward", "Tensor.__add__", "output", 0, "forward"),
    ("Aten__native_batch_norm_legit_functional.default_0_forward.input.0",
     "Aten__native_batch_norm_legit_functional.default_0_forward",
     "Aten._native_batch_norm_legit_functional.default", "input", 0, "forward"),
])
def test_tensor_names_split(name, call, op_type, io, slot, direction):
    parts = split_tensor_names(pd.Series([name])).iloc[0]
    assert (parts["call"], parts["op_type"], parts["io"], parts["direction"]) == (call, op_type, io, direction)
    assert (pd.isna(parts["slot"]) if slot is None else parts["slot"] == slot)


@pytest.mark.parametrize("name", ["garbage", "Functional.linear.0", "N/A", None])
def test_names_of_no_known_shape_give_na_parts(name):
    parts = split_tensor_names(pd.Series([name], dtype="string")).iloc[0]
    assert parts.isna().all()


def test_call_names_give_kind_and_counter():
    calls = split_call_names(pd.Series(["Mint.cos.3.forward", "Cell.a.b.Dense.backward.2", "odd"]))
    assert calls["kind"].tolist() == ["api", "module", pd.NA]
    assert calls["counter"].tolist() == [3, 2, pd.NA]
    assert calls["op_type"].tolist() == ["Mint.cos", "Cell.Dense", pd.NA]


def _python_tensor_parts(name: str) -> tuple[object, ...]:
    """The grammar read by Python's re, one name at a time (the reference the Arrow reading must equal)."""
    from advisor.ingest.msprobe_names import IO_WORDS, LEADING_INDEX, MODULE_OWNER, TENSOR_PATTERNS, parse_call

    for pattern in TENSOR_PATTERNS:
        if match := pattern.fullmatch(name):
            call, io, arg = match["call"], match["io"], match["arg"]
            lead = LEADING_INDEX.match(arg) if arg is not None else None
            slot = 0 if arg is None else int(lead["slot"]) if lead else None
            if io == "parameters_grad" and (owner := MODULE_OWNER.fullmatch(call)):
                return call, IO_WORDS[io], arg, slot, "backward", f"{owner['kind']}.{owner['cls']}"
            parts = parse_call(call)
            return (call, IO_WORDS[io], arg, slot, parts.direction if parts else None,
                    parts.op_type if parts else None)
    return (None,) * 6


EDGE_NAMES = [
    "Functional.linear.\u0663.forward.output.0",          # an Arabic-Indic digit is no counter
    "Functional.linear.0.forward.output.0\n",             # a trailing newline is part of the name
    "Module.a.B.forward.0.input.1234567890123456789",    # 19 digits: no slot
    "Module.a.B.forward.0.input.123456789012345678.2",
    "Module.fc.Linear.parameters_grad", "Cell.parameters_grad.x", "Module.parameters_grad.w",
    "a.forward.input", ".forward.output", "Functional..0.forward.output.0", "Tensor___add___3_forward_output",
    "Distributed.all_reduce.0.forward.input.group", "Module.model.output.Linear.forward.0.output.0.1",
    "Torch_cat_12_backward_input.0.3", "x_0_forward", "", " ", "Functional.linear.0.forward.kwargs.bias",
    # split at the last dots, or not: where the greedy call ends
    "M.forward.output.output", "a.forward.input.0.forward.output.1", "a.forward.0.output.", "x.backward.kwargs",
    "Functional.linear.0.forward.parameters", "a.forward.input.input", ".forward.input.0", "a.forward.1.2.output.0",
    "a.forward.output.0.output", "a.b.forward.input.x\ny", "a.forward.9.output", "a.forward.output.9",
    "a.forward..output.0", "a.forward.output..0", "Module.m.L.forward.0.output.\u0663", "a.forward.input.0.",
    # args with dots, counters of every length, words that are almost io or direction words
    "Functional.conv2d.0.forward.input.3.0", "a.forward.input.1.2.3", "a.forward.input.1.2.3.4",
    "a.forward.input.1.2.3.4.5", "a.forward.input.output.0", "a.forward.output.input.0.1",
    "a.forward.1.output.forward.2.input.0", "Module.a.B.forward.1234567890123456789.output.0",
    "Module.a.B.forward.123456789012345678.output.0", "Module.a.B.forward.1234567890123456789.output",
    "a.forward.12345678901234567890.output.0.forward.input.1", "\u00e9.forward.input.0",
    "\u00e9.forward.\u00e9.input.0",
    "a.forwards.input.0", "a.Forward.input.0", "a.forward.inputs.0", "a.forward.Input.0", "a.forward.kwarg.x",
    "a.backward.parameters", "a.backward.7.parameters.w.x", "forward.input.0", ".x.forward.input", "a..forward.input",
    "a.forward.0x.input.0", "a.forward.-1.input.0", "a.forward. 1.input.0", "a.forward.input.\u0663.1",
    "a.forward.input.0.1\r", "\ra.forward.input.0", "a.forward.input.forward.1234567890123456789.output.0",
]


def test_arrow_reads_every_real_and_odd_name_as_python_re_does():
    import re
    from pathlib import Path

    from advisor.ingest.msprobe_names import parse_call

    data = Path(__file__).resolve().parents[1] / "data"
    names = set(EDGE_NAMES)
    for path in [*data.glob("realtool/*/compare_result_*.csv"), *data.glob("msprobe_faults/*.csv")]:
        frame = pd.read_csv(path, usecols=["NPU Name", "Bench Name"], dtype=str, keep_default_na=False)
        names.update(frame["NPU Name"])
        names.update(frame["Bench Name"])
    for path in data.glob("msprobe_faults/*_dump.json"):
        names.update(re.findall(r'"([A-Z][\w.]*\.(?:forward|backward)[\w.]*)"', path.read_text(encoding="utf-8")))
    ordered = sorted(names)
    assert len(ordered) > 1000
    got = split_tensor_names(pd.Series(ordered, dtype=object))
    for i, name in enumerate(ordered):
        row = tuple(None if pd.isna(v) else v for v in got.iloc[i][["call", "io", "arg", "slot", "direction",
                                                                     "op_type"]])
        assert row == _python_tensor_parts(name), name
    calls = [c for c in got["call"].dropna().unique()] + ["Mint.cos.\u0663.forward", "Cell.Dense.forward.1\n"]
    split = split_call_names(pd.Series(calls, dtype="string"))
    for i, call in enumerate(calls):
        parts = parse_call(call)
        expected = (parts.direction, parts.op_type, parts.counter, parts.kind) if parts else (None,) * 4
        assert tuple(None if pd.isna(v) else v for v in split.iloc[i]) == expected, call


def test_names_split_in_slices_read_as_whole(monkeypatch):
    """The names are split a slice at a time (each slice's numbers start inside the column's buffers):
    every slice boundary, with names missing between them, gives what one slice gives."""
    import numpy as np

    from advisor.ingest import msprobe_names

    names = pd.Series([*EDGE_NAMES, None] * 3, dtype="string").sample(frac=1, random_state=0)
    whole = split_tensor_names(names)
    for size in (1, 2, 7):
        monkeypatch.setattr(msprobe_names, "NAMES_PER_SPLIT", size)
        sliced = split_tensor_names(names)
        for column in whole:
            assert np.array_equal(whole[column].isna(), sliced[column].isna()), (size, column)
            assert (whole[column].dropna() == sliced[column].dropna()).all(), (size, column)
