"""Run the vendor's msaccucmp (``msprobe/msaccucmp/msaccucmp.py`` in the mindstudio-probe wheel)
on a generated scenario's dumps, on the CPU, to get a genuine ``result_<timestamp>.csv``.

``python -m benchmarks.scenarios.msaccucmp_run SCENARIO_DIR OUT_DIR`` (the scenario generated with
``--dumps all``).

What msaccucmp reads, and how a CPU run gets there:

- Real NPU dumps are binary (an 8-byte header length, a protobuf header, the tensors); msaccucmp
  parses the header with CANN's ``libascend_dump_parser.so`` (``ParseDumpProtoToJson``), which the
  wheel does not ship, so binary dumps cannot be read without CANN.
- Its dump folder reader also accepts files named by a number (``7.npy``) with a ``mapping.csv``
  that maps each number to the offline dump name (``{op_type}.{op_name}.{task}.{stream}.{ts}``, the
  names the dump tool shortens this way); such a file is an offline (NPU) dump, and one ending in
  ``.npy`` is loaded with numpy. A numpy file holds one array, so each target op contributes its
  output 0 and no inputs: the genuine CSV has output rows only.
- The golden side is the scenario's TF-style ``{op}.{output}.{timestamp}.npy`` files, as they are.
- ``-f`` takes the offline model as JSON (``atc --mode=1``): written here from the scenario's own
  result CSV (target ops, their ``GroundTruth`` as ``_datadump_original_op_names``, their inputs
  from the device addresses, output descs with ``_datadump_origin_name``).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from benchmarks.vendor_advisor import msaccucmp_folder


def _ops(result: pd.DataFrame) -> list[dict]:
    producer: dict[str, str] = {}
    for row in result.itertuples(index=False):
        op, io, slot = row.TensorIndex.rsplit(":", 2)
        if io == "output":
            producer[row.Address] = f"{op}:{slot}"
    ops = []
    for index, rows in result.groupby(result["Index"].astype(int), sort=True):
        first = rows.iloc[0]
        originals = [] if first["GroundTruth"] in ("*", "") else first["GroundTruth"].split(",")
        inputs, outputs = [], []
        for row in rows.itertuples(index=False):
            _, io, slot = row.TensorIndex.rsplit(":", 2)
            if io == "input":
                inputs.append(producer.get(row.Address, ""))
            elif originals:
                outputs.append({"dtype": row.DataType, "attr": [
                    {"key": "_datadump_origin_name", "value": {"s": originals[-1]}},
                    {"key": "_datadump_origin_output_index", "value": {"i": int(slot)}}]})
            else:
                outputs.append({"dtype": row.DataType, "attr": []})
        ops.append({"name": first["NPUDump"], "type": first["OpType"], "id": index, "input": inputs,
                    "output_desc": outputs,
                    "attr": [{"key": "_datadump_original_op_names", "value": {"list": {"s": originals}}}]})
    return ops


def prepare(scenario: Path, work: Path) -> tuple[Path, Path, Path]:
    """(target folder, golden folder, model JSON) in msaccucmp's terms, under ``work``."""
    (result,) = scenario.glob("result_*.csv")
    frame = pd.read_csv(result, dtype=str, keep_default_na=False)
    frame = frame.rename(columns={"DataType.1": "GoldenDataType"})
    frame = frame[frame["NPUDump"] != "Node_Output"]
    shutil.rmtree(work, ignore_errors=True)
    target, golden = work / "target", work / "golden"
    target.mkdir(parents=True)
    shutil.copytree(scenario / "golden", golden)
    model = work / "model.json"
    model.write_text(json.dumps({"graph": [{"name": scenario.name, "op": _ops(frame)}]}, indent=1), encoding="utf-8")
    mapping = []
    for number, path in enumerate(sorted((scenario / "target").glob("*.output.0.npy")), start=1):
        shutil.copy2(path, target / f"{number}.npy")
        mapping.append((f"{number}.npy", path.name[: -len(".output.0.npy")]))
    with open(target / "mapping.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(mapping)
    return target, golden, model


def run_msaccucmp(scenario: Path, out: Path, timeout: float = 900) -> Path:
    """Compare ``scenario``'s dumps with the wheel's msaccucmp; returns its result CSV."""
    folder = msaccucmp_folder()
    if folder is None:
        raise RuntimeError("mindstudio-probe is not installed")
    target, golden, model = prepare(scenario, out / "inputs")
    run = subprocess.run([sys.executable, "msaccucmp.py", "compare", "-m", str(target.resolve()), "-g",
                          str(golden.resolve()), "-f", str(model.resolve()), "-out", str(out.resolve())],
                         capture_output=True, text=True, timeout=timeout, cwd=folder)
    found = sorted(out.glob("result_*.csv"))
    if not found:
        raise RuntimeError(f"msaccucmp wrote no result (exit {run.returncode}): {run.stdout[-2000:]}")
    return found[-1]


if __name__ == "__main__":
    print(run_msaccucmp(Path(sys.argv[1]), Path(sys.argv[2])))
