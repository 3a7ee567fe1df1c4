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
