"""Benchmark: read_comparison against a plain pandas.read_csv of the same msaccucmp CSV.

Not collected by pytest (the name does not start with ``test_``); run it by hand::

    python tests/ingest/bench_msaccucmp.py --rows 1000000

Each measurement runs in a fresh subprocess so that peak RSS (``ru_maxrss``) belongs to that
step alone and the page cache, not a previous step's heap, is what the two share.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HEADER = ("Index,OpType,NPUDump,DataType,Address,GroundTruth,DataType,TensorIndex,Shape,OverFlow,"
          "CosineSimilarity,MaxAbsoluteError,AccumulatedRelativeError,RelativeEuclideanDistance,"
          "KullbackLeiblerDivergence,StandardDeviation,MeanAbsoluteError,RootMeanSquareError,"
          "MaxRelativeError,MeanRelativeError,CompareFailReason")
OP_TYPES = np.array(["Conv2D", "Add", "Mul", "Relu", "MatMulV2", "TransData", "Cast", "Softmax",
                     "LayerNorm", "BatchMatMul"])
SHAPES = np.array(["[1,64,56,56]", "[1,128,28,28]", "[1,256,14,14]", "[1,512,7,7]", "[8,128,768]",
                   "[1,1000]"])


def write_synthetic(path: Path, rows: int, seed: int = 0) -> None:
    """A realistic current-layout file: ~3 tensors per op, fused golden names, 6-decimal numbers,
    some NPU-only ops (GroundTruth ``*``), op names with ``:``, inf KL, NaN cosines, and the
    ``Node_Output`` row last."""
    rng = np.random.default_rng(seed)
    op_index = np.arange(rows) // 3
    slot = np.arange(rows) % 3
    io = np.where(slot < 2, "input", "output")
    npu_only = op_index % 50 == 7
    op_name = pd.Series(op_index).map("model/block_{0}/conv_bn_relu".format).to_numpy()
    op_name = np.where(op_index % 7 == 3, op_name + ":fused", op_name)
    golden = pd.Series(op_index).map("Conv_{0},BatchNorm_{0}".format).to_numpy()
    frame = pd.DataFrame({
        "Index": op_index,
        "OpType": OP_TYPES[op_index % len(OP_TYPES)],
        "NPUDump": op_name,
        "DataType": np.where(op_index % 4 == 0, "DT_FLOAT", "DT_FLOAT16"),
        "Address": pd.Series(op_index * 4096 + 0x12c0c0000000).map(hex).to_numpy(),
        "GroundTruth": np.where(npu_only, "*", golden),
        "DataType.1": np.where(npu_only, "NaN", "DT_FLOAT"),
        "TensorIndex": op_name + ":" + io + ":" + slot.astype(str),
        "Shape": SHAPES[op_index % len(SHAPES)],
        "OverFlow": np.where(op_index % 4 == 0, "NaN", np.where(op_index % 89 == 5, "YES", "NO")),
    })
    for name in HEADER.split(",")[10:20]:
        if name == "StandardDeviation":
            m = rng.normal(size=(rows, 4)).round(6)
            text = ("(" + pd.Series(m[:, 0]).map("{:.6f}".format) + ";"
                    + pd.Series(abs(m[:, 1])).map("{:.6f}".format) + "),("
                    + pd.Series(m[:, 2]).map("{:.6f}".format) + ";"
                    + pd.Series(abs(m[:, 3])).map("{:.6f}".format) + ")").to_numpy()
            frame[name] = np.where(npu_only, "NaN", text)
        else:
            frame[name] = np.where(npu_only, np.nan, rng.random(rows))
    frame.loc[::97, "KullbackLeiblerDivergence"] = np.inf
    frame.loc[::101, "CosineSimilarity"] = np.nan
    frame["CompareFailReason"] = np.where(npu_only, "GroundTruth is *, no golden data", "")
    last = frame.index[-1]
    frame.loc[last, ["OpType", "NPUDump", "GroundTruth", "TensorIndex", "Shape"]] = [
        "NaN", "Node_Output", "output_0.npy", "Node_Output:output:0", "[]"]
    frame.to_csv(path, index=False, header=HEADER.split(","), float_format="%.6f", na_rep="NaN")


def _measure(step: str, path: Path) -> tuple[float, float, float]:
    code = f"""
import resource, time, pandas as pd
from advisor.ingest import read_comparison
wall, cpu = time.perf_counter(), time.process_time()
if {step!r} == "pandas":
    frame = pd.read_csv({str(path)!r})
else:
    frame = read_comparison({str(path)!r}).frame
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=repo)
    wall, cpu, rss = out.stdout.split()
    return float(wall), float(cpu), float(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--file", type=Path, help="reuse this file (written if missing)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "result_20240101000000.csv"
        if not path.exists():
            write_synthetic(path, args.rows)
        size_mb = path.stat().st_size / 2**20
        print(f"{args.rows} rows, {size_mb:.0f} MiB")
        # Interleaved and best-of-n: the machine is shared, so single runs are noisy. CPU time
        # (process_time) is the steadier figure; wall time is what a user waits.
        runs: dict[str, list[tuple[float, float, float]]] = {"pandas": [], "advisor": []}
        for _ in range(args.repeat):
            for step in runs:
                runs[step].append(_measure(step, path))
        for step, results in runs.items():
            wall = min(r[0] for r in results)
            cpu = min(r[1] for r in results)
            rss = max(r[2] for r in results)
            print(f"{step:8s} wall {wall:5.2f} s  cpu {cpu:5.2f} s  "
                  f"peak RSS {rss:5.0f} MiB ({rss / size_mb:.2f}x file)")


if __name__ == "__main__":
    main()
