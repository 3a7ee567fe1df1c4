"""The vendor's own msaccucmp advisor (``msprobe/msaccucmp/mscmp_advisor.py`` in the
``mindstudio-probe`` wheel), run on comparison CSVs so its answers can be scored beside ours.

Its ``CompareAdvisor`` reads a CSV with at least ``Index`` and ``NPUDump`` columns and tries three
detections, first match wins (FORMATS.md §1): FP16 overflow (the first ``OverFlow`` YES row), input
inconsistent (an input node, given by the user, with cosine < 0.99) and global consistency (the
first row with cosine < 0.99: a problem node when the last row is < 0.99 too, else a single-point
deviation). It answers ``Detection Type``, ``Operator Index`` and ``Expert Advice``, which
:func:`answer_kind` maps onto our label kinds.

The vendor's modules import ``advisor`` and ``cmp_utils`` as top-level packages (``advisor`` would
collide with ours), so they run in one child process with the msaccucmp folder first on its path.
The input nodes passed are the CSV's ``Data`` ops (what msaccucmp itself passes from the model).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import util
from pathlib import Path

#: The vendor advisor's advice sentences (advisor_const.py) -> our label kinds.
_ADVICE_KINDS = (("Float16 data overflow", "fp16_overflow"),
                 ("input data of NPUDump is inconsistent", "input_mismatch"),
                 ("All data in the comparison result meets", "consistent"),
                 ("final accuracy is qualified", "single_point_deviation"),
                 ("resulting in an unqualified final accuracy", "problem_node"))

_DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import pandas as pd
from advisor.compare_advisor import CompareAdvisor
from cmp_utils.constant.compare_error import CompareError
for path in sys.argv[2:]:
    try:
        frame = pd.read_csv(path, on_bad_lines="skip")
        nodes = []
        if "OpType" in frame.columns and "NPUDump" in frame.columns:
            nodes = list(dict.fromkeys(frame.loc[frame["OpType"] == "Data", "NPUDump"].astype(str)))
        result = CompareAdvisor(path, nodes, "").advisor()
        answer = {"type": result.advisor_type, "index": result.operator_index, "advice": result.advisor_message}
    except (CompareError, Exception) as exc:  # noqa: BLE001 - the vendor's refusal is an answer too
        answer = {"error": f"{type(exc).__name__}: {getattr(exc, 'code', exc)}"}
    print("VENDOR-ANSWER " + json.dumps({"path": path, **answer}), flush=True)
"""


@dataclass(frozen=True)
class VendorAnswer:
    kind: str | None          # our kind for its answer; None when it could not read the file
    index: int | None
    detection: str | None     # its Detection Type as printed
    error: str | None = None

    @property
    def readable(self) -> bool:
        return self.error is None


def msaccucmp_folder() -> Path | None:
    """``msprobe/msaccucmp`` of the installed wheel, or None when mindstudio-probe is not installed."""
    spec = util.find_spec("msprobe")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "msaccucmp"
    return folder if (folder / "mscmp_advisor.py").is_file() else None


def answer_kind(detection: str, index: str, advice: str) -> tuple[str | None, int | None]:
    kind = next((k for words, k in _ADVICE_KINDS if words in advice), None)
    position = int(index) if str(index).strip().lstrip("-").isdigit() else None
    return kind, (None if kind == "consistent" else position)


def run_vendor_advisor(paths: Sequence[Path], timeout: float = 900) -> dict[Path, VendorAnswer]:
    """The vendor advisor's answer for each CSV (empty when the wheel is not installed)."""
    folder = msaccucmp_folder()
    if folder is None or not paths:
        return {}
    paths = [Path(p).resolve() for p in paths]
    run = subprocess.run([sys.executable, "-c", _DRIVER, str(folder), *map(str, paths)], capture_output=True,
                         text=True, timeout=timeout, cwd=folder)
    answers: dict[Path, VendorAnswer] = {}
    for line in run.stdout.splitlines():
        if not line.startswith("VENDOR-ANSWER "):
            continue
        item = json.loads(line[len("VENDOR-ANSWER "):])
        if "error" in item:
            answers[Path(item["path"])] = VendorAnswer(None, None, None, item["error"])
        else:
            kind, index = answer_kind(item["type"], item["index"], item["advice"])
            answers[Path(item["path"])] = VendorAnswer(kind, index, item["type"])
    for path in paths:
        answers.setdefault(Path(path), VendorAnswer(None, None, None, f"no answer (exit {run.returncode})"))
    return answers
