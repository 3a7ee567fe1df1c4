"""Seeds and mutations for the classes of hostile input the fuzz harness (benchmarks/fuzz.py) must know:
comparison CSVs with subnormal metrics in every layout, msprobe workbooks whose XML or geometry is
changed inside the zip, ONNX models whose external weights point elsewhere, deep or mutated dump.json
pairs, rule templates that only fail when rendered, and output or dump folders where something not
advisor's waits (a symlinked report store or lock, a FIFO or a device in place of a dump).

Each seed is real data (the committed scenarios, the shared real files, a workbook written with
openpyxl as msprobe writes it, an ONNX model saved by onnx) with the hostile part added.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "crepe_tiny_bn_fold" / "result_20240506043136.csv"
SUBNORMALS = ["5e-324", "0", "4.9e-324", "1e-320", "2.2250738585072014e-308", "1e-310"]
METRICS = {"MaxAbsErr", "MaxAbsoluteError", "CosineSimilarity", "Cosine", "RelativeEuclideanDistance",
           "MeanRelativeError", "Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr"}


def with_subnormals(data: bytes, seed: int = 0) -> bytes:
    """A comparison CSV whose metric cells are subnormals and zeros (its header kept: every layout)."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8", errors="replace"))))
    if not rows:
        return data
    columns = [i for i, name in enumerate(rows[0]) if name.strip() in METRICS]
    rng = random.Random(seed)
    for row in rows[1:]:
        for i in columns:
            if i < len(row):
                row[i] = rng.choice(SUBNORMALS)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


def subnormal_csvs(sources: Callable[[], list[bytes]]) -> Callable[[], list[bytes]]:
    return lambda: [with_subnormals(data, i) for i, data in enumerate(sources())]


# --- workbooks -----------------------------------------------------------------------------------

def workbooks(realdata: Path | None) -> list[bytes]:
    """Real msprobe workbooks (tests/data) and the shared msprobe CSV written as a workbook."""
    found = [p.read_bytes() for p in sorted((REPO / "tests" / "data").rglob("*.xlsx"))]
    source = realdata / "Ascend__msprobe" / "test__msprobe_test__resources__compare_result_20230703104808.csv" \
        if realdata else None
    if source is not None and source.is_file():
        try:
            import openpyxl
        except ImportError:
            return found
        book = openpyxl.Workbook()
        with source.open(encoding="utf-8", newline="") as handle:
            for row in csv.reader(handle):
                book.active.append(row)
        out = io.BytesIO()
        book.save(out)
        found.append(out.getvalue())
    return found


XML_TOKENS = [b'<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>',
              b'<!DOCTYPE x [<!ENTITY s SYSTEM "file:///etc/hostname">]>', b"&s;", b"&b;",
              b'<dimension ref="A1:XFD1048576"/>', b'<row r="1048576"><c r="XFD1048576"><v>1</v></c></row>',
              b'<c r="A999999999"><v>1</v></c>', b"9" * 70000, b"<![CDATA[", b"]]>", b"\x00", b"&#0;"]


def mutate_workbook(data: bytes, rng: random.Random, mutate_bytes: Callable[[bytes, random.Random], bytes]) -> bytes:
    """One XML part of the workbook changed (bytes, or a hostile XML token), the zip written again; or
    the zip's own bytes changed."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as source:
            parts = [(item, source.read(item.filename)) for item in source.infolist()]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return mutate_bytes(data, rng)
    if rng.random() < 0.1:
        return mutate_bytes(data, rng)
    xml = [i for i, (item, _) in enumerate(parts) if item.filename.endswith((".xml", ".rels"))]
    if not xml:
        return mutate_bytes(data, rng)
    at = rng.choice(xml)
    item, body = parts[at]
    if rng.random() < 0.5:
        cut = body.find(b"?>") + 2 if rng.random() < 0.5 and b"?>" in body else rng.randint(0, len(body))
        body = body[:cut] + rng.choice(XML_TOKENS) + body[cut:]
    else:
        body = mutate_bytes(body, rng)
    parts[at] = (item, body)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info, content in parts:
            target.writestr(info.filename, content)
    return out.getvalue()


# --- ONNX models with external weights -------------------------------------------------------------

LOCATIONS = ["weights.bin", "/etc/hostname", "../../outside.bin", "sub/../../outside.bin", "link.bin", "fifo.bin",
             "missing.bin", "C:\\weights.bin", ""]


def onnx_seeds() -> list[bytes]:
    """The scenarios' models, and a model whose weights are external, once per location above."""
    found = [p.read_bytes() for p in sorted((REPO / "tests" / "data" / "scenarios").glob("*/model.onnx"))[:2]]
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return found
    weight = numpy_helper.from_array(np.arange(16, dtype=np.float32), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    for location in LOCATIONS:
        del weight.external_data[:]
        for key, value in (("location", location), ("offset", "0"), ("length", "64")):
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
        graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])], [weight])
        found.append(onnx.helper.make_model(graph).SerializeToString())
    return found


def onnx_beside(workdir: Path) -> None:
    """What the external locations above find beside the model: real weights, a link out, a FIFO."""
    (workdir / "weights.bin").write_bytes(bytes(64))
    (workdir.parent / "outside.bin").write_bytes(bytes(64))
    if not (workdir / "link.bin").exists():
        os.symlink(workdir.parent / "outside.bin", workdir / "link.bin")
    if not (workdir / "fifo.bin").exists():
        os.mkfifo(workdir / "fifo.bin")


# --- dump.json pairs -------------------------------------------------------------------------------

def dump_jsons(realdata: Path | None) -> list[bytes]:
    """msprobe dump.json files (shared real data) and one nested far past the bound."""
    found = []
    if realdata is not None:
        found = [p.read_bytes() for p in sorted((realdata / "Ascend__msprobe").glob("*dump.json"))]
    deep = b'{"task": "statistics", "level": "L1", "data": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}"
    return found + [deep]


# --- rule templates --------------------------------------------------------------------------------

HOSTILE_TEMPLATES = ["{% include 'x.html' %}", "{% import 'x' as y %}{{ y }}", "{% extends 'base' %}",
                     "{{ range(10**9) | list | length }}", "{% for i in range(10**9) %}{% endfor %}",
                     "{{ 1 // 0 }}", "{{ m.op * 100000 }}", "{{ '%99999d' % 1 }}", "{{ m.nothing.deeper }}",
                     "{{ lipsum(10**6) }}", "{{ cycler(1,2).next() }}", "{{ ().__class__.__base__ }}"]


def template_rules() -> list[bytes]:
    """rules/core's rule files with their evidence replaced by a template that fails only when rendered."""
    rules = sorted((REPO / "rules" / "core").glob("*/*.yaml"))[:4]
    found = []
    english = re.compile(r"(\n  evidence:\n    en: ).*\n(?:      .*\n)*")    # the English text, folded or not
    for i, template in enumerate(HOSTILE_TEMPLATES):
        text = rules[i % len(rules)].read_text(encoding="utf-8")
        replaced = english.sub(lambda m, t=template: m.group(1) + json.dumps(t) + "\n", text, count=1)
        assert replaced != text, rules[i % len(rules)]
        found.append(replaced.encode("utf-8"))
    return found


# --- folders where something not advisor's waits ---------------------------------------------------

PLANTS = ["store-link", "lock-link", "foreign-store", "remedy-temp-link", "report-fifo", "report-file-link",
          "journal-link", "csv-temp-link", "index-page", "history-link"]


def plant(kind: str, out: Path, victim: Path) -> None:
    """Put ``kind`` into the output folder ``out`` before advisor writes there; ``victim``: a folder
    of someone else's that must stay as it is."""
    out.mkdir(parents=True, exist_ok=True)
    victim.mkdir(parents=True, exist_ok=True)
    (victim / "keep.txt").write_text("not advisor's\n", encoding="utf-8")
    (victim / "run-2024").mkdir(exist_ok=True)
    store = out / ".advisor-reports"
    if kind == "store-link":
        os.symlink(victim, store)
    elif kind == "lock-link":
        store.mkdir()
        (store / ".advisor-store").write_text("advisor report store\n", encoding="utf-8")
        os.symlink(victim / "created", store / "lock")
    elif kind == "foreign-store":
        store.mkdir()
        (store / "photos").mkdir()
    elif kind == "remedy-temp-link":
        os.symlink(".advisor-reports/current/remedy", out / ".remedy.0123abcd.tmp")
    elif kind == "report-fifo":
        os.mkfifo(out / "report.txt")
    elif kind == "report-file-link":
        os.symlink(victim / "keep.txt", out / "report.json")
    elif kind == "index-page":
        (out / "index.html").write_text("<html>someone's page</html>", encoding="utf-8")
    elif kind == "history-link":
        os.symlink(victim / "history.sqlite", out / "history.sqlite")
    elif kind in ("journal-link", "csv-temp-link"):
        os.symlink(victim / "keep.txt", out / ("r.csv.journal" if kind == "journal-link" else "r.csv.tmp"))


def victim_problems(victim: Path) -> list[str]:
    """What changed in the folder that was not advisor's."""
    found = sorted(p.relative_to(victim).as_posix() for p in victim.rglob("*"))
    problems = [] if found == ["keep.txt", "run-2024"] else [f"touched a folder not advisor's: {found}"]
    keep = victim / "keep.txt"
    if keep.is_file() and keep.read_text(encoding="utf-8") != "not advisor's\n":
        problems.append("overwrote a file not advisor's")
    return problems
