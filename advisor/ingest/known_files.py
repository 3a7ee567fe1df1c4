"""Files users hand over that are not comparison results: say what they are, and what to give instead.

A refusal that names the file ("X is a msaccucmp single-op detail file, not a comparison result:
...") beats "unknown header" or "not UTF-8 text". Recognised from the first bytes (``.npy``, zip
archives: ``.pt``, ``.npz``, Excel workbooks; pickles), from the start of a JSON text (msprobe
``dump.json``, ``construct.json``, ``stack.json``, an old ptdbg ``.pkl``) or from a CSV header
(msaccucmp's single-op detail file). Two kinds are *read*, not refused: an Excel workbook
(``--xlsx``) and msprobe's first-difference JSON (``compare -da``); ``kind_of`` tells them apart.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

from advisor.errors import InputFormatError
from advisor.filekind import binary_kind, dump_kind

XLSX = "xlsx"
FIRST_DIFF_JSON = "first-diff-json"

PAIR_ADVICE = ("two msprobe dump.json files are compared as a pair: "
               "advisor run --bench BENCH/dump.json --target TARGET/dump.json")
TENSOR_ADVICE = ("give the comparison result (msprobe compare or msaccucmp output); tensor dumps go "
                 "with it as --dumps GOLDEN_DIR:TARGET_DIR")

DUMP_ADVICE = {
    "h5": "compare two of them first: advisor compare --golden GPU.h5 --target NPU.h5 [--op-map op_map.json] "
          "-o result.csv (pip install h5py), then advisor run result.csv",
    "raw-dump": "compare the dump folders first: advisor compare --golden GOLDEN_DIR --target DUMP_DIR -o result.csv "
                "(it reads raw dumps without CANN), then advisor run result.csv",
    "overflow-record": "give it beside the comparison it belongs to: advisor run result.csv --overflow DIR "
                       "(DIR holding the records and the raw dumps of the same run)",
    "tfdbg": "give the tfdbg dump root as golden dumps: advisor compare --golden DUMP_ROOT --target DIR "
             "-o result.csv, then advisor run result.csv",
}
MAGICMIND_DIFF = ("looks like the diff.json of MagicMind's analysis_tools.py compare, whose layout is not "
                  "published: advisor cannot read it. Export the comparison as a CSV and read it with a column "
                  "mapping (--mapping, docs/formats.md), or dump the tensors as .npy and run advisor compare")


def refusal(path: Path, what: str, advice: str, line: int | None = None) -> InputFormatError:
    return InputFormatError(f"{path.name} is {what}, not a comparison result: {advice}", path=path, line=line)


def kind_of(path: Path, head: bytes) -> str | None:
    """``XLSX``, ``FIRST_DIFF_JSON`` or None (a text table, or a JSON the caller refuses); raises the
    refusal for a known binary file that is no comparison."""
    binary = binary_kind(head)
    dump = dump_kind(path.name, head, path.stat().st_size)
    if dump is not None:
        raise refusal(path, dump.description, DUMP_ADVICE[dump.name])
    if binary is not None and binary.is_a("npy"):
        raise refusal(path, "a NumPy tensor (.npy)", TENSOR_ADVICE)
    if binary is not None and binary.is_a("npz", "zip"):
        return _zip_kind(path)      # what the archive holds: a workbook, a .pt, an .npz
    if binary is not None and binary.is_a("pickle"):
        raise refusal(path, "a Python pickle (a PyTorch or NumPy dump)", TENSOR_ADVICE)
    text = head.lstrip().decode("utf-8", errors="replace")
    if text[:1] in ("{", "["):
        return _json_kind(path, text)
    return None


def _zip_kind(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise refusal(path, "a damaged zip archive", f"cannot list it ({err})") from None
    if "[Content_Types].xml" in names and any(n.startswith("xl/") for n in names):
        return XLSX
    if any(n.endswith("data.pkl") for n in names):
        raise refusal(path, "a PyTorch tensor file (.pt)", TENSOR_ADVICE)
    if names and all(n.endswith(".npy") for n in names):
        raise refusal(path, "a NumPy archive (.npz)", TENSOR_ADVICE)
    raise refusal(path, "a zip archive", "unpack it and give the comparison CSV inside")


# Keys of the JSON files msprobe writes next to a dump, as they appear near the start of the text.
_DUMP_JSON = re.compile(r'"(task|level|framework|dump_data_dir)"\s*:')
_FIRST_DIFF = re.compile(r'"(is_same|op_items)"\s*:')
_DIFF_ANALYZE = re.compile(r'^\{\s*"rank_?\d+"\s*:\s*\[\s*\{\s*"op_name"')
_STACK = re.compile(r'"File [^"]*, line \d+, in ')
_CALL_NAME = r'"(?:Module|Cell|Functional|Torch|Tensor|NPU|Distributed|Aten|VF|Jit|Mint|MintFunctional|Primitive)\.'
_CONSTRUCT = re.compile(r"^\{\s*" + _CALL_NAME + r'[^"]*"\s*:\s*(?:"|null)')
_OLD_PKL = re.compile(r'^\[\s*"[A-Za-z]+_\w+_(?:forward|backward)')


def _json_kind(path: Path, text: str) -> str | None:
    if _FIRST_DIFF.search(text):
        return FIRST_DIFF_JSON
    if _DIFF_ANALYZE.search(text):
        raise refusal(path, "an msprobe first-difference analysis (diff_analyze_*.json: the first differing "
                            "call per rank, with target statistics only)",
                      "give the compare_result_rank*_*.json that msprobe compare -da writes beside it")
    if _DUMP_JSON.search(text[:4096]):
        raise refusal(path, "an msprobe dump.json (the statistics of one run)", PAIR_ADVICE)
    if _STACK.search(text):
        raise refusal(path, "an msprobe stack.json (the call stacks of a dump)", PAIR_ADVICE)
    if _CONSTRUCT.search(text):
        raise refusal(path, "an msprobe construct.json (the module tree of a dump)", PAIR_ADVICE)
    if _OLD_PKL.search(text):
        raise refusal(path, "a ptdbg dump summary (.pkl, one JSON list per tensor)", PAIR_ADVICE)
    if path.name == "diff.json":
        raise InputFormatError(MAGICMIND_DIFF, path=path)
    raise InputFormatError(f"a JSON file, not a comparison CSV; {PAIR_ADVICE}", path=path)


def refuse_known_header(path: Path, fields: Sequence[str]) -> None:
    """Raise the refusal for a CSV whose header shows a known non-comparison table."""
    names = {f.strip() for f in fields}
    if {"AbsoluteError", "RelativeError"} <= names and "NPUDump" in names:
        raise refusal(path, "a msaccucmp single-op detail file (the per-element errors of one tensor)",
                      "give the result_*.csv of the same msaccucmp run", line=1)
