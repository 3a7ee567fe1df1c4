"""Self-checks: does a generated result CSV show the signature its label promises?

"Agrees" and "deviates" are judged exactly as the advisor judges them: the CSV is read with the
advisor's own reader (``advisor.ingest.read_comparison``) and turned into per-op facts with
``advisor.facts.builder.build_facts`` and the shipped thresholds (``knowledge/thresholds.yaml``,
via ``advisor.facts.thresholds.load_thresholds``). A tensor deviates when its cosine is below the
dtype's limit, its relative Euclidean distance above it, its scale error |rms_t / rms_g - 1| above
it, or it is non-finite; error *enters* an op whose inputs agree and whose outputs deviate
(``error_enters``), an overflow starts where ``overflow_enters``. Those per-op columns are used as
the advisor computes them, so a label and the advisor's diagnosis can never disagree about what the
CSV shows: only about what causes it.

Each check returns a list of problems; an empty list means the scenario is what it claims to be.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from advisor.compare import HEADER
from advisor.engine.judgement import builtin_judgement
from advisor.facts.builder import build_facts
from advisor.facts.thresholds import load_thresholds
from advisor.ingest import read_comparison

#: The vendors' cosine threshold: only used to report where a cosine-only reader would look.
COSINE_OK = 0.99
INPUT_KINDS = ("input_mismatch", "rgb_bgr_swap", "duplicate_normalization", "layout_nchw_nhwc", "input_scale_mismatch",
               "random_preprocessing")
#: Kinds where every op agrees and only the network output as handed over differs (its layout).
OUTPUT_ONLY_KINDS = ("output_layout",)
#: Kinds whose root cause must break the network output (a problem node, as the advisor says today).
OUTPUT_BREAKING_KINDS = ("problem_node", "quant_per_tensor", "quant_symmetric", "quant_calibration",
                         "quant_precision_limit")


def read_result(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, keep_default_na=False, na_values=["NaN"], dtype={"OverFlow": str})
    frame["is_output"] = frame["NPUDump"] == "Node_Output"
    frame["io"] = frame["TensorIndex"].str.rsplit(":", n=2).str[1]
    return frame


@dataclass
class Judgement:
    """The advisor's view of one result CSV: per-op facts (indexed by the CSV's ``Index``) and the
    network output."""

    ops: pd.DataFrame
    network: dict[str, Any]

    def op(self, index: int) -> pd.Series | None:
        return self.ops.loc[index] if index in self.ops.index else None

    @property
    def deviating(self) -> pd.Series:
        """Ops with any deviating tensor (input or output)."""
        return self.ops["in_deviates"] | self.ops["out_deviates"]

    @property
    def overflowing(self) -> pd.Series:
        return self.ops["in_overflow"] | self.ops["out_overflow"]

    def first(self, mask: pd.Series) -> int | None:
        hits = self.ops.index[mask.to_numpy(dtype=bool)]
        return int(hits[0]) if len(hits) else None

    @property
    def output_deviates(self) -> bool:
        return bool(self.network.get("output_deviates", False))


def judge(path: Path) -> Judgement:
    """Read ``path`` and judge every tensor the way ``advisor run`` does (default thresholds)."""
    facts = build_facts(read_comparison(path), load_thresholds(), judge=builtin_judgement())
    return Judgement(facts.ops, facts.network)


def check_layout(path: Path) -> list[str]:
    problems = []
    header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    if tuple(header) != HEADER:
        problems.append(f"header differs from msaccucmp's: {header}")
    frame = read_result(path)
    if not frame["Index"].is_monotonic_increasing:
        problems.append("rows are not sorted by Index")
    outputs = frame.index[frame["is_output"]]
    if len(outputs) == 0 or outputs[-1] != frame.index[-1] or outputs[0] != len(frame) - len(outputs):
        problems.append("Node_Output rows are missing or not last")
    return problems


def _describe(op: pd.Series) -> str:
    return (f"{op['op']} (in cos {op['in_cosine']:.6g}, red {op['in_red']:.3g}, scale {op['in_scale']:.3g}; "
            f"out cos {op['out_cosine']:.6g}, red {op['out_red']:.3g}, scale {op['out_scale']:.3g})")


def _entry_problems(judged: Judgement, index: int, what: str) -> list[str]:
    """Error enters at ``index`` (the advisor's ``error_enters``: inputs agree, outputs deviate)."""
    op = judged.op(index)
    if op is None:
        return [f"{what}: no op at Index {index}"]
    if op["error_enters"]:
        return []
    if not op["inputs_agree"]:
        return [f"{what}'s inputs already deviate: {_describe(op)}"]
    return [f"{what}'s outputs do not deviate: {_describe(op)}"]


def _overflow_entry_problems(judged: Judgement, index: int, what: str) -> list[str]:
    """An overflow starts at ``index`` (the advisor's ``overflow_enters``)."""
    op = judged.op(index)
    if op is None:
        return [f"{what}: no op at Index {index}"]
    if op["overflow_enters"]:
        return []
    if not op["out_overflow"]:
        return [f"{what}'s output is not flagged OverFlow YES"]
    return [f"{what}'s inputs already overflow"]


def _changed_after_input_problems(judged: Judgement, index: int) -> list[str]:
    """The target input agrees with the golden one (the golden run's own normalised tensor; the golden NCHW
    buffer declared NHWC), and the op the build inserts after it changes it (normalises it again; transposes
    it): the first deviation comes after the input."""
    if judged.op(index)["out_deviates"]:
        return [f"the input deviates: {_describe(judged.op(index))}"]
    first = judged.first(judged.deviating)
    return [] if first is not None and first > index else ["nothing deviates after the input"]


def check_signature(path: Path, label: dict, judged: Judgement | None = None) -> list[str]:
    """Problems with the scenario's intended signature (empty when it shows as labelled)."""
    problems = check_layout(path)
    frame = read_result(path)
    judged = judged or judge(path)
    kind, index = label["kind"], label["index"]
    out_deviates = judged.output_deviates
    if kind == "consistent":
        deviating = judged.deviating
        if label.get("input_normalised_in_model"):   # raw data into a model that normalises it: only the input differs
            deviating = deviating & (judged.ops["op_type"] != "Data")
        first = judged.first(deviating)
        if first is not None:
            problems.append(f"clean run deviates at {_describe(judged.op(first))}")
        if judged.overflowing.any():
            problems.append("clean run has OverFlow YES rows")
        if out_deviates:
            problems.append("clean run's network output deviates")
        return problems
    if kind in OUTPUT_ONLY_KINDS:
        first = judged.first(judged.deviating)
        if first is not None:
            problems.append(f"an op deviates: {_describe(judged.op(first))}")
        if not out_deviates:
            problems.append("the network output agrees")
        return problems
    op_rows = frame[(frame["Index"] == index) & ~frame["is_output"]]
    if op_rows.empty or op_rows["NPUDump"].iloc[0] != label["op"] or judged.op(index) is None:
        return problems + [f"no rows for labelled op {label['op']} at Index {index}"]
    symptoms = label.get("symptoms", [])
    harmless = [s for s in symptoms if s["relation"] == "harmless"]
    before = judged.ops.index < index
    first_overflow = judged.first(judged.overflowing)
    if first_overflow is not None and first_overflow < index:
        problems.append(f"OverFlow YES before the labelled op, at {judged.op(first_overflow)['op']}")
    first_deviation = judged.first(judged.deviating & before)
    if first_deviation is not None and not harmless:
        problems.append(f"a tensor deviates before the labelled op, at {_describe(judged.op(first_deviation))}")
    if kind == "fp16_overflow":
        problems += _overflow_entry_problems(judged, index, "labelled op")
    elif label.get("input_normalised_in_model") or label.get("input_declared_nhwc"):
        problems += _changed_after_input_problems(judged, index)
    else:
        problems += _entry_problems(judged, index, "labelled op")
    if kind == "single_point_deviation" and out_deviates:
        problems.append(f"network output deviates (cosine {judged.network.get('output_cosine')}): "
                        "a single-point deviation must be absorbed")
    if (kind in OUTPUT_BREAKING_KINDS or kind == "fp16_overflow") and not out_deviates:
        problems.append(f"network output still agrees (cosine {judged.network.get('output_cosine')})")
    if kind in INPUT_KINDS and label["op"] != frame["NPUDump"].iloc[0]:
        problems.append("input faults must be located at the first (Data) op")
    for symptom in symptoms:
        problems += _symptom_problems(judged, label, symptom, first_deviation)
    return problems


def _symptom_problems(judged: Judgement, label: dict, symptom: dict, first_deviation: int | None) -> list[str]:
    """A mixture's other finding: an explained consequence after the root cause, or a harmless
    earlier deviation the network recovers from before the root cause."""
    what = f"{symptom['relation']} {symptom['kind']} symptom {symptom['op']}@{symptom['index']}"
    index = symptom["index"]
    if judged.op(index) is None or judged.op(index)["op"] != symptom["op"]:
        return [f"{what}: no such op in the comparison"]
    if symptom["relation"] == "explained":
        problems = [] if index > label["index"] else [f"{what} does not follow the root cause"]
        if symptom["kind"] == "fp16_overflow":
            problems += _overflow_entry_problems(judged, index, what)
            first = judged.first(judged.ops["overflow_enters"])
            if first != index:
                problems.append(f"{what} is not the first overflow (first at Index {first})")
        else:
            problems += _entry_problems(judged, index, what)
        return problems
    if symptom["relation"] == "hidden":      # after the root cause; shown alone by the counterfactual run
        return [] if index > label["index"] else [f"{what} does not follow the root cause"]
    problems = [] if index < label["index"] else [f"{what} does not come before the root cause"]
    problems += _entry_problems(judged, index, what)
    if first_deviation != index:
        problems.append(f"{what} is not the first deviation (first at Index {first_deviation})")
    return problems


def summarise(path: Path, judged: Judgement | None = None) -> dict:
    """Observed key numbers, stored in label.json under ``observed``.

    ``first_deviating_index`` is the advisor's view (cosine, distance, scale per dtype);
    ``first_low_cosine_index`` is where a reader of cosine alone (< 0.99) would look.
    """
    frame = read_result(path)
    judged = judged or judge(path)
    low = frame[(frame["CosineSimilarity"] < COSINE_OK) & ~frame["is_output"]]
    network_out = frame[frame["is_output"]]["CosineSimilarity"]
    return {
        "rows": int(len(frame)),
        "first_deviating_index": judged.first(judged.deviating),
        "first_overflow_index": judged.first(judged.overflowing),
        "first_low_cosine_index": int(low["Index"].iloc[0]) if len(low) else None,
        "network_output_deviates": judged.output_deviates,
        "network_output_cosine": [None if np.isnan(v) else round(float(v), 6) for v in network_out],
    }
