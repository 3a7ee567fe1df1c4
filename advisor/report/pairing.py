"""What a reader should know about how two msprobe dump.json files were paired (``run --bench
--target``): from which frameworks, and how many calls found a partner.

Calls are paired by advisor/ingest/call_matching.py, across frameworks too (MindSpore ``Mint.cos`` with
PyTorch ``Torch.cos``). A call left unpaired is compared to nothing, so a verdict over a pair of dumps
that paired a third of their calls speaks for that third: said here, with the share.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..facts.thresholds import Thresholds
from ..ingest.table import ComparisonTable

HEAD_BYTES = 4096
FRAMEWORK = re.compile(rb'"framework"\s*:\s*"([A-Za-z_]+)"')
NAMES = {"pytorch": "PyTorch", "mindspore": "MindSpore", "mindtorch": "MindTorch"}


def framework_of(path: Path) -> str | None:
    """The ``framework`` a dump.json names near its top (msprobe writes it before ``data``)."""
    try:
        with open(path, "rb") as handle:
            match = FRAMEWORK.search(handle.read(HEAD_BYTES))
    except OSError:
        return None
    return match.group(1).decode("ascii").lower() if match else None


def paired_share(table: ComparisonTable) -> tuple[int, int]:
    """(calls with a partner, calls) over the target's and the bench's calls."""
    frame = table.frame
    alone = (frame["npu_only"].fillna(False) | frame["golden_only"].fillna(False)).to_numpy(dtype=bool)
    index = frame["op_index"].to_numpy(dtype=np.float64, na_value=np.nan)
    known = ~np.isnan(index)
    calls = np.unique(index[known])
    paired = np.unique(index[known & ~alone])
    return len(paired), len(calls)


def pairing_warnings(table: ComparisonTable, bench: Path, target: Path, thresholds: Thresholds) -> list[str]:
    """The frameworks when the two dumps come from different ones, and the share of calls paired when
    they do or when it is below the ``pairing.min_paired_share`` knob."""
    frameworks = framework_of(bench), framework_of(target)
    paired, calls = paired_share(table)
    share = f"{paired} of {calls} calls paired ({paired / calls:.0%}); an unpaired call is compared to nothing" \
        if calls else "no call paired"
    if all(frameworks) and frameworks[0] != frameworks[1]:
        names = [NAMES.get(f, f) for f in frameworks]     # type: ignore[arg-type]
        return [f"the bench is a {names[0]} dump and the target a {names[1]} dump: calls were paired across "
                f"frameworks by API and call order, {share}"]
    if calls and paired / calls < thresholds.knob("pairing", "min_paired_share"):
        return [f"the two dumps share few calls: {share}"]
    return []
