"""Does ``advisor compare`` pair the generator's dumps as the generator did, and does ``compare`` then
``run`` reach the verdict ``run`` reaches on the generator's own CSV?

    python -m benchmarks.scenarios --out DIR --dumps all [--only FAMILY ...]
    python -m benchmarks.pairing DIR [--given names onnx ge all] [--json OUT]

The generator pairs each row by construction (it knows which golden tensor every target tensor
stands for) and writes the vendor-format CSV from that; this benchmark compares its dumps again with
``advisor compare``, given nothing (names and order), the golden ONNX graph (``onnx``), the target's
GE graph (``ge``), or both with the build's fusion report (``all``; ``ge``/``all`` only where the
scenario has them), and prints per scenario and way:

- ``rows``: rows of the generator's CSV, and how many ``advisor compare`` paired otherwise (another
  GroundTruth, or a cosine more than 1e-5 away: another golden tensor) or left out;
- the coverage: rows compared, not compared, target-only, and by shape alone (never, unless asked);
- the root cause ``advisor run`` names on each CSV, and whether they agree (op names compared in
  their dump-file form: without a target graph, ``advisor compare`` only knows ``Add_10_LayerNorm``
  for ``Add_10/LayerNorm``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.compare.runner import CompareOptions, compare_dumps
from advisor.pipeline import AnalysisOptions, analyse
from advisor.tensors.dump_names import safe_name
from advisor.tensors.pairing import TARGET_ONLY

GIVEN: dict[str, Callable[[Path], dict | None]] = {
    "names": lambda d: {},
    "onnx": lambda d: {"graphs": (d / "model.onnx",)} if (d / "model.onnx").is_file() else None,
    "ge": lambda d: {"graphs": tuple(d.glob("ge_proto_*_Build.txt"))} if any(d.glob("ge_proto_*")) else None,
    "all": lambda d: ({"graphs": (d / "model.onnx", *d.glob("ge_proto_*_Build.txt")),
                       "fusion": d / "fusion_result.json"} if any(d.glob("ge_proto_*")) else None),
}


def read(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, keep_default_na=False, na_values=["NaN"], dtype={"OverFlow": str})
    frame["TensorIndex"] = frame["TensorIndex"].map(safe_name)
    return frame.set_index("TensorIndex")


def verdict(csv: Path) -> str:
    root = analyse(AnalysisOptions(comparison=csv, plugins=False)).root_cause
    return "consistent" if root is None else f"{root.kind}@{safe_name(root.op or '')}"


def paired_otherwise(got: pd.DataFrame, expected: pd.DataFrame) -> int:
    """Rows of ``expected`` that ``got`` lacks, or pairs with another golden tensor."""
    shared = expected.index.intersection(got.index)
    a = got.loc[shared, "CosineSimilarity"].to_numpy(float)
    b = expected.loc[shared, "CosineSimilarity"].to_numpy(float)
    same = (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= 1e-5)
    same &= (got.loc[shared, "GroundTruth"].to_numpy() == expected.loc[shared, "GroundTruth"].to_numpy())
    return int(len(expected) - same.sum())


def measure(directory: Path, ways: list[str], work: Path) -> list[dict]:
    (vendor,) = directory.glob("result_*.csv")
    expected, expected_verdict = read(vendor), verdict(vendor)
    results = []
    for way in ways:
        given = GIVEN[way](directory)
        if given is None:
            continue
        summary = compare_dumps(CompareOptions(directory / "golden", directory / "target", work / f"{way}.csv",
                                               jobs=1, progress=False, **given))
        coverage = Counter(summary.coverage)
        got = verdict(summary.output)
        results.append({
            "scenario": directory.name, "given": way, "rows": len(expected),
            "paired_otherwise": paired_otherwise(read(summary.output), expected),
            "compared": sum(n for k, n in coverage.items() if k and k != TARGET_ONLY),
            "not_compared": coverage[""], "target_only": coverage[TARGET_ONLY], "by_shape": coverage["shape"],
            "verdict_vendor_csv": expected_verdict, "verdict_compare": got, "agree": got == expected_verdict})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pairing", description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path, help="a folder of scenarios generated with --dumps all")
    parser.add_argument("--given", nargs="+", choices=list(GIVEN), default=list(GIVEN))
    parser.add_argument("--json", type=Path, help="also write every line as JSON")
    args = parser.parse_args(argv)
    scenarios = sorted(p for p in args.root.iterdir() if (p / "label.json").is_file() and (p / "target").is_dir())
    lines: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for directory in scenarios:
            for line in measure(directory, args.given, Path(tmp)):
                lines.append(line)
                print(f"{line['scenario']:66} {line['given']:5} rows {line['rows']:4} otherwise "
                      f"{line['paired_otherwise']:3} | compared {line['compared']:4} not {line['not_compared']:3} "
                      f"target-only {line['target_only']:3} shape {line['by_shape']} | {line['verdict_compare']}"
                      f"{'' if line['agree'] else '  vs CSV: ' + line['verdict_vendor_csv']}", flush=True)
    for way in args.given:
        mine = [x for x in lines if x["given"] == way]
        if mine:
            total = {key: sum(x[key] for x in mine) for key in ("agree", "paired_otherwise", "rows", "not_compared",
                                                                "by_shape")}
            print(f"{way:5}: {len(mine)} scenarios, {total['agree']} verdicts agree, {total['paired_otherwise']} of "
                  f"{total['rows']} rows paired otherwise, {total['not_compared']} not compared, "
                  f"{total['by_shape']} by shape")
    if args.json:
        args.json.write_text(json.dumps(lines, indent=1) + "\n", encoding="utf-8")
    return 0 if all(x["agree"] for x in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
