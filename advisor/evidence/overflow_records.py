"""Hardware overflow records beside a comparison: ``overflow_record`` facts joined to its ops.

``advisor run RESULT.csv --overflow DIR`` (and ``--dumps GOLDEN:TARGET`` when the target folder holds
them) reads every ``Opdebug.Node_OpDebug.*`` file under DIR (advisor/tensors/opdebug.py). A record
names the task and stream that overflowed; the op is the one whose dump in the same folder tree has
that task and stream (the earliest such dump, as msaccucmp's overflow analysis picks it), from raw
dump names ``{op_type}.{op}.{task}.{stream}.{ts}`` or their ``.npy`` conversions. That op is found in
the comparison by name (dump names write ``/``, ``.`` and spaces as ``_``). The record's facts carry
the op's measurements, so a rule needs no second fact: the overflow kind decides the fix, the
measurements say whether the values show it (an accumulation overflow inside a MatMul or ReduceMean
often leaves a finite, merely wrong output).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputFormatError
from ..tensors.ascend_raw import parse_raw_name
from ..tensors.dump_names import safe_name
from ..tensors.opdebug import OverflowRecord, read_overflow_record

MAX_RECORDS = 10_000
_OP_FIELDS = ("op_type", "out_cosine", "in_cosine", "out_deviates", "error_enters", "out_overflow", "dtype")


def overflow_facts(sources: list[Path], ops: pd.DataFrame, network: dict[str, Any]) -> tuple[list[dict], list[str]]:
    """(``overflow_record`` facts, warnings) for every record under ``sources``."""
    records, producers = [], {}
    for source in sources:
        files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        for path in files:
            name = parse_raw_name(_raw_stem(path.name))
            if name is None:
                continue
            if name.is_overflow_record and path.suffix != ".npy":
                records.extend(read_overflow_record(path))
            elif not name.is_overflow_record:
                key = (name.task_id, name.stream_id)
                if key not in producers or name.timestamp < producers[key][0]:
                    producers[key] = (name.timestamp, name.op)
            if len(records) > MAX_RECORDS:
                raise InputFormatError(f"more than {MAX_RECORDS:,} overflow records", path=source)
    if not records and sources:
        return [], [f"--overflow: no overflow record (Opdebug.Node_OpDebug.*) under {', '.join(map(str, sources))}"]
    by_name = _ops_by_safe_name(ops)
    facts, unmatched = [], []
    for number, record in enumerate(records):
        producer = producers.get((record.task_id, record.stream_id))
        position = by_name.get(producer[1]) if producer else None
        if position is None:
            unmatched.append(f"task {record.task_id} stream {record.stream_id} ({record.file.name})")
            continue
        facts.append(_fact(number, record, ops, position, network))
    warnings = [f"{len(unmatched)} overflow records name no op of the comparison: " + ", ".join(unmatched[:5])
                + (" (the dumps of those tasks are not beside the records)" if unmatched else "")] if unmatched else []
    return facts, warnings


def _raw_stem(name: str) -> str:
    """A converted dump's name without ``.{input|output}.{n}.npy``."""
    parts = name.split(".")
    if name.endswith(".npy") and len(parts) > 3 and parts[-3] in ("input", "output"):
        return ".".join(parts[:-3])
    return name


def _ops_by_safe_name(ops: pd.DataFrame) -> dict[str, int]:
    names = ops["op"].astype("string").fillna("").tolist()
    table: dict[str, int] = {}
    for position, name in enumerate(names):
        table.setdefault(safe_name(name), position)
    return table


def _fact(number: int, record: OverflowRecord, ops: pd.DataFrame, position: int,
          network: dict[str, Any]) -> dict[str, Any]:
    row = ops.iloc[position]
    fact: dict[str, Any] = {
        "id": f"overflow_record:{number}", "fact": "overflow_record", "index": int(ops.index[position]),
        "op": str(row["op"]), "unit": record.unit, "kind": record.kind, "kinds": ",".join(record.kinds),
        "status": f"{record.status:#x}", "meaning": "; ".join(record.meanings), "task_id": record.task_id,
        "stream_id": record.stream_id, "record_file": record.file.name,
        "output_deviates": bool(network.get("output_deviates", False)),
    }
    for field in _OP_FIELDS:
        value = row.get(field)
        if value is not None and not pd.isna(value):
            fact[field] = value.item() if hasattr(value, "item") else (str(value) if field in ("op_type", "dtype")
                                                                       else value)
    fact["values_overflow"] = bool(fact.pop("out_overflow", False))
    return fact
