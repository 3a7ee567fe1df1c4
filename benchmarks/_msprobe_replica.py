"""Large msprobe inputs made from what the real tool wrote: a compare CSV or a dump.json, replicated.

msprobe on the CPU writes a few hundred rows for the networks a test can run; a large model's
comparison has a million (every API call of every layer, forward and backward). These helpers grow a
real file to any size by appending copies of its calls, each copy renamed so that every call stays
unique, as the calls of the next layers or steps of the same run would be:

* an API call (``Functional.linear.3.forward``, old ``Functional_linear_3_forward``) gets its counter
  moved past every counter of the original: copy ``k`` of counter ``n`` is ``n + k * C``, where ``C``
  is one more than the largest counter in the file;
* a module call (``Module.net.fc1.Linear.forward.0``, its ``parameters_grad``) gets copy ``k``'s own
  path: ``Module.r<k>.net.fc1...``.

Every other cell is copied as written (statistics, verdicts, stack texts), so each copy holds the
same fault at the same place in its calls. The first rows of a large file are exactly the file the
same call makes at a smaller size: a diagnosis of the large file can be checked against that of its
first 10,000 rows. Python loops run over the original's rows, and one join per copy.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

_API = re.compile(r"^(?P<head>(?!Module[._]|Cell[._]).+?[._])(?P<counter>\d+)(?P<tail>[._](?:forward|backward).*)$",
                  re.DOTALL)
_MODULE = re.compile(r"^(?P<kind>Module|Cell)(?P<sep>[._])(?P<rest>.*)$", re.DOTALL)


class _Renamer:
    """Copy ``k``'s name of each name of the original, from a template split once per name."""

    def __init__(self, names: list[str]) -> None:
        self.templates: dict[str, tuple[str, int, str, bool]] = {}
        largest = -1
        for name in set(names):
            if match := _API.match(name):
                counter = int(match["counter"])
                largest = max(largest, counter)
                self.templates[name] = (match["head"], counter, match["tail"], False)
            elif match := _MODULE.match(name):
                self.templates[name] = (f"{match['kind']}{match['sep']}r", 0, f"{match['sep']}{match['rest']}", True)
        self.stride = largest + 1

    def name(self, name: str, copy: int) -> str:
        if not copy or name not in self.templates:
            return name
        head, counter, tail, module = self.templates[name]
        return f"{head}{copy}{tail}" if module else f"{head}{counter + copy * self.stride}{tail}"


def replicate_compare_csv(source: Path, target: Path, rows: int) -> int:
    """Write ``rows`` data rows of msprobe compare CSV ``source``, replicated, to ``target``; returns
    the bytes written. ``NPU Name`` and ``Bench Name`` (the first two columns) are renamed per copy."""
    text = source.read_text(encoding="utf-8")
    records = list(csv.reader(io.StringIO(text, newline="")))
    header, body = records[0], [r for r in records[1:] if r]
    if header[:2] != ["NPU Name", "Bench Name"]:
        raise ValueError(f"{source}: not an msprobe compare CSV (header starts {header[:2]})")
    tails = []
    for record in body:   # each row's cells after the two names, as msprobe's csv writer quoted them
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(record[2:])
        tails.append(buffer.getvalue())
    renamer = _Renamer([r[0] for r in body] + [r[1] for r in body])
    written = 0
    with open(target, "w", encoding="utf-8", newline="") as out:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(header)
        written += out.write(buffer.getvalue())
        copy = 0
        while rows > 0:
            part = body[:rows]
            written += out.write("".join(
                f"{_quoted(renamer.name(r[0], copy))},{_quoted(renamer.name(r[1], copy))},{tail}"
                for r, tail in zip(part, tails, strict=False)))
            rows -= len(part)
            copy += 1
    return written


def _quoted(cell: str) -> str:
    return f'"{cell.replace(chr(34), chr(34) * 2)}"' if any(c in cell for c in ',"\n\r') else cell


def replicate_dump_json(source: Path, target: Path, calls: int) -> int:
    """Write msprobe ``dump.json`` ``source`` with ``calls`` calls in ``data``, replicated, to ``target``
    (indented as msprobe writes it); returns the bytes written."""
    document = json.loads(source.read_text(encoding="utf-8"))
    data = document.pop("data")
    renamer = _Renamer(list(data))
    values = [(name, json.dumps(value, indent=1).replace("\n", "\n  ")) for name, value in data.items()]
    head = json.dumps(document, indent=1)[:-2] + ',\n "data": {'
    written = 0
    with open(target, "w", encoding="utf-8") as out:
        written += out.write(head)
        copy, first = 0, True
        while calls > 0:
            part = values[:calls]
            chunk = ",".join(f'\n  {json.dumps(renamer.name(name, copy))}: {value}' for name, value in part)
            written += out.write(chunk if first else "," + chunk)
            first = False
            calls -= len(part)
            copy += 1
        written += out.write("\n }\n}")
    return written


def calls_in(source: Path) -> int:
    """How many calls the ``data`` of dump.json ``source`` holds."""
    return len(json.loads(source.read_text(encoding="utf-8"))["data"])
