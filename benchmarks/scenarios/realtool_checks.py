"""Self-check of a real-tool scenario: the comparison msprobe wrote must show the signature its label
promises, or the scenario is not written (``realtool.generate_all`` reports it and exits 1).

Rows are read as msprobe wrote them. A row *differs* when its checksums differ (MD5 mode), or any of
its max/min/mean/l2norm cells differ as written, or (tensor mode) its ``MaxAbsErr`` is not 0:
float32 runs of the same script are bit-identical up to the fault, so "agree" means equal, not
close. Rows msprobe
could not pair (``N/A`` on either side: a call only one run makes, a gradient that is None) are not
compared. ``parameters_grad`` rows belong to the backward call that produced them and are judged
with it, not as a call of their own, and a module's submodules (listed before it: they finish
first) are part of its call. In MD5 mode the checksums of tensors changed in place (a BatchNorm's
counter ``Tensor.add_``, its running statistics in training mode) are taken at a moment that varies
between runs of one script: only the outputs of calls that are not in place say whether the calls
before a fault agree.

What each label promises:

- every kind but ``consistent``: the labelled call is one of the file's calls; the calls before it
  agree (the whole forward pass too, for a backward-phase fault); no call before it has a non-finite
  target output where the reference's is finite (a ``masked_fill(-inf)`` is -inf in both);
- ``input_mismatch``, ``parameter_mismatch``, ``step_mismatch``: an input of the call (or, at L0 and
  mix, a parameter of the module) differs; in statistics mode an input fault may instead show only
  in the output (a mirrored crop has the same max/min/mean/norm);
- ``argument_mismatch``: its tensor inputs agree, its output differs, and (where msprobe records
  arguments: API calls) an argument row differs;
- ``problem_node``: forward: its inputs agree and its output differs; backward: it differs;
- ``fp16_overflow``: its target inputs are finite, a target output is inf/NaN where the reference's
  is finite;
- ``reference_nonfinite``: its reference inputs are finite, a reference output is inf/NaN (whatever the
  target's is);
- ``checksum_mismatch``: an output checksum differs (and, unless the whole model was cast, its
  inputs' agree);
- ``consistent``, precision pairs: no non-finite value anywhere in the target; the same run twice:
  nothing differs in statistics modes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from benchmarks.scenarios.realtool_spec import PairSpec

STATS = ("max", "min", "mean", "l2norm")
NON_FINITE = {"inf", "infinity", "nan"}


def read_rows(csv: Path, task: str) -> pd.DataFrame:
    """The compare CSV with ``call``, ``io``, ``direction``, ``comparable``, ``differs``,
    ``is_argument`` and ``target_nonfinite`` / ``reference_nonfinite`` per row."""
    from advisor.ingest.msprobe_names import split_call_names, split_tensor_names

    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    parts = split_tensor_names(frame["NPU Name"])
    frame["call"], frame["io"] = parts["call"], parts["io"]
    frame["direction"] = split_call_names(frame["call"])["direction"]
    frame["comparable"] = (frame["Bench Name"] != "N/A") & (frame["NPU Dtype"] != "N/A") & \
        (frame["Bench Dtype"] != "N/A")
    frame["is_argument"] = frame["NPU Dtype"].str.startswith("<class")
    frame["in_place"] = frame["call"].str.contains(r"^Tensor\.[a-z0-9_]+_\.\d+\.", regex=True, na=False)
    if task == "md5":
        frame["differs"] = frame["NPU MD5"] != frame["BENCH MD5"]
        frame["target_nonfinite"] = frame["reference_nonfinite"] = False
        return frame
    npu = frame[[f"NPU {s}" for s in STATS]].to_numpy()
    bench = frame[[f"Bench {s}" for s in STATS]].to_numpy()
    frame["differs"] = (npu != bench).any(axis=1)
    if task == "tensor":          # the same values elsewhere (a mirrored image) keep every statistic
        frame["differs"] |= pd.to_numeric(frame["MaxAbsErr"], errors="coerce").fillna(0).ne(0)
    frame["target_nonfinite"] = _nonfinite(frame[[f"NPU {s}" for s in STATS]])
    frame["reference_nonfinite"] = _nonfinite(frame[[f"Bench {s}" for s in STATS]])
    return frame


def _nonfinite(cells: pd.DataFrame) -> pd.Series:
    return cells.apply(lambda c: c.str.strip().str.lower().str.lstrip("+-").isin(NON_FINITE)).any(axis=1)


def check(pair: PairSpec, label: dict, csv: Path, calls: list[str], *, cast: bool = False) -> list[str]:
    """The problems of one scenario (empty when its comparison shows what ``label`` says)."""
    rows = read_rows(csv, label["task"])
    kind, op = label["kind"], label["op"]
    if kind == "consistent":
        return _check_consistent(pair, label, rows)
    if op not in calls:
        return [f"labelled call {op!r} is not a call of the file"]
    problems = _check_before(pair, rows, calls, op, label["task"])
    this = rows[(rows["call"] == op) & rows["comparable"]]
    inputs, outputs = this[this["io"] == "input"], this[this["io"] == "output"]
    tensors = inputs[~inputs["is_argument"]]
    if kind in ("input_mismatch", "parameter_mismatch", "step_mismatch") and \
            not this[this["io"].isin(("input", "parameter"))]["differs"].any() and \
            not (kind == "input_mismatch" and label["task"] == "statistics" and outputs["differs"].any()):
        # (max/min/mean/norm cannot see a rearranged input, a mirrored crop: its output differs)
        problems.append(f"{op}: no input or parameter differs")
    elif kind == "argument_mismatch":
        if tensors["differs"].any() or not outputs["differs"].any():
            problems.append(f"{op}: expected tensor inputs that agree and an output that differs")
        if op.endswith(".forward") and not inputs[inputs["is_argument"]]["differs"].any():
            problems.append(f"{op}: no argument row differs")
    elif kind == "problem_node":
        if pair.phase == "forward" and (inputs["differs"].any() or not outputs["differs"].any()):
            problems.append(f"{op}: expected inputs that agree and an output that differs")
        if pair.phase == "backward" and not this["differs"].any():
            problems.append(f"{op}: nothing differs")
    elif kind == "fp16_overflow" and label["task"] != "md5":
        overflowed = outputs["target_nonfinite"] & ~outputs["reference_nonfinite"]
        if inputs["target_nonfinite"].any() or not overflowed.any():
            problems.append(f"{op}: expected finite inputs and a non-finite FP16 output")
    elif kind == "reference_nonfinite" and label["task"] != "md5":
        if inputs["reference_nonfinite"].any() or not outputs["reference_nonfinite"].any():
            problems.append(f"{op}: expected finite reference inputs and a non-finite reference output")
    elif kind == "checksum_mismatch":
        if not outputs["differs"].any() or (not cast and tensors["differs"].any()):
            problems.append(f"{op}: expected an output checksum that differs" +
                            ("" if cast else " while the inputs' agree"))
    return problems


def _check_before(pair: PairSpec, rows: pd.DataFrame, calls: list[str], op: str, task: str) -> list[str]:
    """The calls before ``op`` agree (and the whole forward pass for a backward fault), and none has
    a non-finite target output."""
    inside = re.match(r"^Module\.(.+)\.[^.]+\.(?:forward|backward)\.\d+$", op)
    # a module's own submodules finish (and are listed) before it: they are part of the labelled call
    earlier = {c for c in calls[:calls.index(op)] if not (inside and c.startswith(f"Module.{inside[1]}."))}
    if pair.phase == "backward":          # the forward pass; the optimizer's calls come after the backward
        backward = [c for c in calls if c.endswith(".backward") or ".backward." in c]
        earlier |= set(calls[:calls.index(backward[0])])
    before = rows[rows["call"].isin(earlier) & rows["direction"].notna()]
    problems = []
    if pair.precision is None:
        judged = before[before["comparable"]]
        if task == "md5":     # checksums of tensors changed in place are taken at a moment that varies
            judged = judged[~judged["in_place"] & (judged["io"] == "output")]
        differing = judged[judged["differs"]]["call"].unique()
        if len(differing):
            problems.append(f"calls before {op} differ: {', '.join(differing[:3])}")
    nonfinite = before[(before["io"] == "output") & before["target_nonfinite"] & ~before["reference_nonfinite"]]
    nonfinite = nonfinite["call"].unique()
    if len(nonfinite):
        problems.append(f"calls before {op} have non-finite target outputs: {', '.join(nonfinite[:3])}")
    return problems


def _check_consistent(pair: PairSpec, label: dict, rows: pd.DataFrame) -> list[str]:
    if label["op"] is not None or label["index"] is not None:
        return ["a consistent pair is labelled with an op"]
    bad = rows[rows["target_nonfinite"] & ~rows["reference_nonfinite"]]["call"].unique()
    if len(bad):
        return [f"non-finite target values in a consistent pair: {', '.join(bad[:3])}"]
    if pair.precision is None and label["task"] != "md5" and rows[rows["comparable"]]["differs"].any():
        return ["the same run twice differs"]
    return []
